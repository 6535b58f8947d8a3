import { Type } from '@sinclair/typebox';
import type { FastifyReply, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import Negotiator from 'negotiator';
import {
  CONTENT_SECURITY_POLICY as COVER_CSP,
  CoverQuery,
  FORMATS as COVER_FORMATS,
  binary,
  negotiateFormat,
} from '../covers/cover.routes.js';
import { MEDIA_TYPES as COVER_TYPES, type CoverRenderer } from '../covers/renderer.js';
import { MEDIA_TYPES, type FileFormat } from '../formats/formats.js';
import { contentDisposition } from '../formats/text.js';
import { HEADERS, JSON_TYPE, error } from '../http/responses.js';
import { PLAYLIST_FILES_CONTENT } from '../playlists/playlist-files.http.js';
import type { TypedApp } from '../http/routes.js';
import { addVary } from '../http/conditional.js';
import { SHARING } from './links.routes.js';
import { MISSING_PAGE, SHARE_PAGE_CSP } from './share-page.render.js';
import type { SharedPlaylists } from './links.service.js';

export interface SharePageRouteDeps {
  readonly shared: SharedPlaylists;
  readonly renderer: CoverRenderer;
  /** Counts the requests of each client address to `/s/…` before anything else; undefined: not throttled. */
  readonly throttle: onRequestAsyncHookHandler | undefined;
  /** The service's public base URL for the files' links, when configured; otherwise the request's origin. */
  readonly publicUrl: string | undefined;
}

const HTML_TYPE = 'text/html; charset=utf-8';
const FILE_FORMATS = ['xspf', 'jspf', 'm3u8'] as const satisfies readonly FileFormat[];

const TokenParams = Type.Object({
  token: Type.String({ description: "The link's secret token, as in the URL its owner was given" }),
});
const PageQuery = Type.Object({
  format: Type.Optional(
    Type.Unsafe<(typeof FILE_FORMATS)[number]>({
      type: 'string',
      enum: [...FILE_FORMATS],
      description: 'A playlist file to download instead of the page: XSPF, JSPF or M3U8',
    }),
  ),
});

const header = (description: string) => ({ type: 'string' as const, description });
/** What every answer under `/s/` carries: nothing kept on the way, told to no one, indexed by no robot. */
const SHARED_HEADERS = {
  'Cache-Control': header('`no-store`: a revoked link shows nothing from its next request on.'),
  'Referrer-Policy': header("`no-referrer`: the page's address (its token) is sent to no one."),
  'X-Robots-Tag': header('`noindex`.'),
  'Content-Security-Policy': header(
    `The page: \`default-src 'none'\`, its cover (\`img-src 'self'\`) and its own style sheet (by its hash), no base, form or frame; the cover: \`${COVER_CSP}\`. No script runs.`,
  ),
};
const PAGE_HEADERS = { ...SHARED_HEADERS, Vary: header('`Accept`: the page or its JSON.') };
const MISSING = {
  description:
    'The link opens nothing: an unknown, revoked or expired token, or a deleted playlist: the same page for each.',
  headers: SHARED_HEADERS,
  content: { 'text/html': { schema: { type: 'string' } } },
};
const THROTTLED = error(
  'Too many requests from this address to shared playlists (`MIXTAPE_SHARE_PER_MINUTE`), or the configured rate limit is reached.',
  HEADERS.retryAfter,
);
const UNAVAILABLE = error('The database cannot answer now or the service is shutting down.', HEADERS.retryAfter);

const SharedPlaylistJson = Type.Object(
  {
    id: Type.Integer({ description: 'Playlist id' }),
    name: Type.String({ description: 'Playlist name' }),
    songs: Type.Array(Type.Ref('song'), { description: 'Songs in the playlist, in order' }),
    owner: Type.String({ description: "The owner's user name" }),
  },
  { description: 'The playlist as `playlistwithsongs`, with its owner' },
);

const text = (description: string) => ({ schema: { type: 'string', description } });

function sharedHeaders(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-robots-tag', 'noindex')
    .header('content-security-policy', csp);
}

const missing = (reply: FastifyReply) => reply.code(404).type(HTML_TYPE).send(MISSING_PAGE);

/**
 * A shared playlist for anyone who has its link (API 1.5.0): `/s/{token}` its page for people, its JSON with
 * `Accept: application/json`, its files with `?format=`; `/s/{token}/image` its cover. Throttled per client address
 * before the token is read; every token that opens nothing answers the same page.
 */
export function sharePageRoutes(app: TypedApp, deps: SharePageRouteDeps): void {
  const { shared, renderer, throttle, publicUrl } = deps;
  const pageHeaders: onRequestHookHandler = (_request, reply, done) => {
    sharedHeaders(reply, SHARE_PAGE_CSP);
    done();
  };
  const coverHeaders: onRequestHookHandler = (_request, reply, done) => {
    sharedHeaders(reply, COVER_CSP);
    done();
  };
  const counted = throttle === undefined ? [] : [throttle];

  app.route({
    method: 'GET',
    url: '/s/:token',
    onRequest: [pageHeaders, ...counted],
    schema: {
      operationId: 'getsharedplaylist',
      summary: 'Open a shared playlist',
      tags: SHARING,
      security: [],
      description:
        "A playlist's link, for anyone: a web page with its name, cover, songs and owner; its JSON with `Accept: application/json`; or with `?format=` its file as a download. Always its current version.",
      params: TokenParams,
      querystring: PageQuery,
      response: {
        200: {
          description: 'The page, its JSON, or its file.',
          headers: {
            ...PAGE_HEADERS,
            'Content-Disposition': header("With `?format=`: the file name, as for the playlist's own files."),
          },
          content: {
            'text/html': text('The page, for people: it works without script.'),
            'application/json': { schema: SharedPlaylistJson },
            ...PLAYLIST_FILES_CONTENT,
          },
        },
        400: error('`format` is none of xspf, jspf and m3u8.'),
        404: MISSING,
        429: THROTTLED,
        500: error('An unexpected fault; `logdata.entry` finds it in the server log.'),
        503: UNAVAILABLE,
      },
    },
    handler: async (request, reply) => {
      addVary(reply, 'Accept');
      const link = await shared.open(request.params.token);
      if (link === undefined) return missing(reply);
      const { format } = request.query;
      if (format !== undefined) {
        const file = await shared.file(link, format, publicUrl ?? `${request.protocol}://${request.host}`);
        if (file === undefined) return missing(reply);
        return reply
          .header('content-disposition', contentDisposition(file.name, format))
          .type(`${MEDIA_TYPES[format][0]!}; charset=utf-8`)
          .send(file.body);
      }
      const wanted = new Negotiator({ headers: { accept: request.headers.accept ?? '*/*' } }).mediaType([
        'text/html',
        'application/json',
      ]);
      if (wanted === 'application/json') {
        const body = await shared.json(link);
        return body === undefined ? missing(reply) : reply.type(JSON_TYPE).send(body);
      }
      const page = await shared.page(link, `/s/${encodeURIComponent(request.params.token)}`);
      return page === undefined ? missing(reply) : reply.type(HTML_TYPE).send(page);
    },
  });

  app.route({
    method: 'GET',
    url: '/s/:token/image',
    onRequest: [coverHeaders, ...counted],
    schema: {
      operationId: 'getsharedimage',
      summary: "Get a shared playlist's cover",
      tags: SHARING,
      security: [],
      description:
        "The cover of a link's playlist, as the playlist's own cover: PNG unless `Accept` prefers JPEG or SVG.",
      params: TokenParams,
      querystring: CoverQuery,
      response: {
        200: {
          description: 'The cover.',
          headers: { ...SHARED_HEADERS, Vary: header('`Accept`: PNG, JPEG or SVG.') },
          content: Object.fromEntries(COVER_FORMATS.map((f) => [COVER_TYPES[f], binary(COVER_TYPES[f])])),
        },
        400: error('`size` is out of range.'),
        404: MISSING,
        429: THROTTLED,
        500: error('An unexpected fault; `logdata.entry` finds it in the server log.'),
        503: error('Too many covers are being drawn at once, or the database cannot answer now.', HEADERS.retryAfter),
      },
    },
    handler: async (request, reply) => {
      addVary(reply, 'Accept');
      const link = await shared.open(request.params.token);
      if (link === undefined) return missing(reply);
      const facts = await shared.cover(link);
      if (facts === undefined) return missing(reply);
      const { size } = request.query;
      const format = negotiateFormat(request.headers.accept);
      const etag = await renderer.etag(facts, size, format);
      // Drawn for the owner: the owner's covers, kept and bounded as theirs.
      const image = await renderer.image(facts, size, format, etag, link.ownerId);
      return reply.type(COVER_TYPES[format]).send(image);
    },
  });
}
