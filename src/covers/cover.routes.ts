import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import Negotiator from 'negotiator';
import { sendNotModified, setRevalidation } from '../http/conditional.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { AUTHENTICATED_ERRORS, BAD_REQUEST, GONE, HEADERS, NOT_FOUND, SECURITY, error } from '../http/responses.js';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import type { PlaylistService } from '../playlists/playlist.service.js';
import { COVERS_PER_USER, MEDIA_TYPES, type CoverFormat, type CoverRenderer } from './renderer.js';

export interface CoverRouteDeps {
  readonly playlists: PlaylistService;
  readonly renderer: CoverRenderer;
  readonly authenticate: onRequestHookHandler;
}

const COVER_SIZE = { min: 64, max: 1200, default: 600 } as const;

/** Browsers and HTTP caches may keep a cover for an hour; after that they revalidate it with its ETag. */
const CACHE_CONTROL = 'private, max-age=3600';

/**
 * A cover opened on its own, at the API's origin, is inert: it may load nothing and, sandboxed, runs no script and
 * has no origin. The SVG needs nothing more: its letters are outlines, its colours presentation attributes, and its
 * only references (`url(#…)`) point inside itself. Sent with every format, and with 304.
 */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; sandbox";

export const FORMATS = Object.keys(MEDIA_TYPES) as CoverFormat[];
const BY_MEDIA_TYPE = new Map(FORMATS.map((format) => [MEDIA_TYPES[format], format]));

/** The format `Accept` prefers; PNG when it names none of them, so that clients sending `*` or JSON get a picture. */
export function negotiateFormat(accept: string | undefined): CoverFormat {
  const preferred = new Negotiator({ headers: { accept } }).mediaType(FORMATS.map((f) => MEDIA_TYPES[f]));
  return (preferred === undefined ? undefined : BY_MEDIA_TYPE.get(preferred)) ?? 'png';
}

export const CoverQuery = Type.Object({
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
  'Content-Security-Policy': header(
    `\`${CONTENT_SECURITY_POLICY}\`: opened on its own, the cover (the SVG in particular) loads nothing and runs nothing.`,
  ),
};
export const binary = (mediaType: string) => ({
  schema: { type: 'string', format: 'binary', contentMediaType: mediaType },
});

/** The playlist cover: a generated picture of the playlist, at both the singular and the plural path. */
export function coverRoutes(app: TypedApp, deps: CoverRouteDeps): void {
  const { playlists, renderer, authenticate } = deps;

  routeWithPluralAlias(app, {
    method: 'GET',
    url: '/v3/playlist/:playlistId/image',
    onRequest: authenticate,
    schema: {
      operationId: 'getimage',
      summary: "Get a playlist's cover image",
      tags: ['Your Library'],
      security: SECURITY,
      description:
        'Returns a cover of one of your playlists: a mosaic of its first four artists with its name and song ' +
        'count. PNG unless `Accept` prefers JPEG or SVG. Send the ETag back in `If-None-Match` to get 304.',
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
        429: error(
          `Too many failed sign-in attempts, the configured rate limit is reached, or ${COVERS_PER_USER} of your covers are already being drawn or waiting (each user has at most two among everyone’s drawings; the rest of a burst waits apart).`,
          HEADERS.retryAfter,
        ),
        503: error(
          'Too many covers are being drawn at once, the database is unreachable or the service is shutting down.',
          HEADERS.retryAfter,
        ),
      },
    },
    handler: async (request, reply) => {
      const { size } = request.query;
      const format = negotiateFormat(request.headers.accept);
      const { userId } = request.caller;
      const summary = await playlists.coverFacts(userId, request.params.playlistId);
      const etag = await renderer.etag(summary, size, format);
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
      const revalidation = { etag, cacheControl: CACHE_CONTROL, vary: 'Accept' };
      const notModified = sendNotModified(request, reply, revalidation);
      if (notModified !== undefined) return notModified;
      const image = await renderer.image(summary, size, format, etag, userId);
      return setRevalidation(reply, revalidation).type(MEDIA_TYPES[format]).send(image);
    },
  });
}
