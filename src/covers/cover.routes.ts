import { Type } from '@sinclair/typebox';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import Negotiator from 'negotiator';
import { ifNoneMatch } from '../http/conditional.js';
import {
  ALIAS_TAG,
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  GONE,
  HEADERS,
  NOT_FOUND,
  SECURITY,
  error,
} from '../http/responses.js';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import type { PlaylistService } from '../playlists/playlist.service.js';
import { MEDIA_TYPES, type CoverFormat, type CoverRenderer } from './renderer.js';

export interface CoverRouteDeps {
  readonly playlists: PlaylistService;
  readonly renderer: CoverRenderer;
  readonly authenticate: onRequestHookHandler;
}

const COVER_SIZE = { min: 64, max: 1200, default: 600 } as const;

/** Browsers and HTTP caches may keep a cover for an hour; after that they revalidate it with its ETag. */
const CACHE_CONTROL = 'private, max-age=3600';

const FORMATS = Object.keys(MEDIA_TYPES) as CoverFormat[];
const BY_MEDIA_TYPE = new Map(FORMATS.map((format) => [MEDIA_TYPES[format], format]));

/** The format `Accept` prefers; PNG when it names none of them, so that clients sending `*` or JSON get a picture. */
function negotiateFormat(accept: string | undefined): CoverFormat {
  const preferred = new Negotiator({ headers: { accept } }).mediaType(FORMATS.map((f) => MEDIA_TYPES[f]));
  return (preferred === undefined ? undefined : BY_MEDIA_TYPE.get(preferred)) ?? 'png';
}

const CoverQuery = Type.Object({
  size: Type.Integer({
    minimum: COVER_SIZE.min,
    maximum: COVER_SIZE.max,
    default: COVER_SIZE.default,
    description: 'Width and height of the square cover, in pixels',
  }),
});

const header = (description: string) => ({ type: 'string' as const, description });
const IMAGE_HEADERS = {
  ETag: header('Strong validator of this cover in this size and format; send it back in `If-None-Match`.'),
  'Cache-Control': header(`\`${CACHE_CONTROL}\`: only the caller's own cache may keep it.`),
  Vary: header('`security, Authorization, Accept`.'),
};
const binary = (mediaType: string) => ({ schema: { type: 'string', format: 'binary', contentMediaType: mediaType } });

/** The playlist cover: a generated picture of the playlist, at both the singular and the plural path. */
export function coverRoutes(app: FastifyInstance, deps: CoverRouteDeps): void {
  const { playlists, renderer, authenticate } = deps;

  for (const base of ['/v3/playlist', '/v3/playlists'] as const) {
    const alias = base === '/v3/playlists';
    app.get<{ Params: { playlistId: number }; Querystring: { size: number } }>(
      `${base}/:playlistId/image`,
      {
        onRequest: authenticate,
        schema: {
          operationId: alias ? 'getimagePlural' : 'getimage',
          summary: alias ? 'Alias of GET /v3/playlist/{playlist-id}/image' : "Get a playlist's cover image",
          tags: alias ? [ALIAS_TAG] : ['Your Library'],
          security: SECURITY,
          description:
            'Returns a cover of one of your playlists: a mosaic of its first four artists with its name and song ' +
            'count. PNG unless `Accept` prefers JPEG or SVG. Send the ETag back in `If-None-Match` to get 304.' +
            (alias ? ' Alias of the singular path.' : ''),
          params: PlaylistParams,
          querystring: CoverQuery,
          response: {
            200: {
              description: 'The cover.',
              headers: IMAGE_HEADERS,
              content: Object.fromEntries(FORMATS.map((f) => [MEDIA_TYPES[f], binary(MEDIA_TYPES[f])])),
            },
            304: {
              description: 'The cover has not changed since the ETag sent in `If-None-Match`.',
              headers: IMAGE_HEADERS,
              type: 'null',
            },
            400: BAD_REQUEST,
            404: NOT_FOUND,
            410: GONE,
            ...AUTHENTICATED_ERRORS,
            503: error(
              'Too many covers are being drawn at once, the database is unreachable or the service is shutting down.',
              HEADERS.retryAfter,
            ),
          },
        },
      },
      async (request, reply) => {
        const { size } = request.query;
        const format = negotiateFormat(request.headers.accept);
        const summary = await playlists.summary(request.caller.userId, request.params.playlistId);
        const etag = await renderer.etag(summary, size, format);
        // Set only once the answer is a cover: an error must not be cached as one.
        const conditional = () =>
          reply
            .header('etag', etag)
            .header('cache-control', CACHE_CONTROL)
            .header('vary', `${String(reply.getHeader('vary'))}, Accept`);
        if (ifNoneMatch(request.headers['if-none-match'], etag)) return conditional().code(304).send();
        const image = await renderer.image(summary, size, format, etag);
        return conditional().type(MEDIA_TYPES[format]).send(image);
      },
    );
  }
}
