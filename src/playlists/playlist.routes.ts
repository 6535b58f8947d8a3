import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { PAGE_HEADERS, setPageHeaders } from '../http/paging.js';
import { ifNoneMatch } from '../http/conditional.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  SECURITY,
  GONE,
  IF_NONE_MATCH_HEADER,
  NOT_FOUND,
  REVALIDATE,
  empty,
  error,
  json,
  notModified,
  revalidatedJson,
} from '../http/responses.js';
import { pageQuerySchema, type PageQuery } from '../http/schemas.js';
import { PlaylistParams, type NewPlaylist, type PlaylistWithSongs } from './playlist.schemas.js';
import type { PlaylistService } from './playlist.service.js';
import { ApiError } from '../http/errors.js';
import {
  EXPORT_FORMATS,
  FILE_EXTENSIONS,
  MEDIA_TYPES,
  negotiateExport,
  type ExportFormat,
} from '../formats/formats.js';
import { downloadFileName } from '../formats/text.js';
import type { PlaylistFiles } from './playlist.files.js';

export interface PlaylistRouteDeps {
  readonly playlists: PlaylistService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
  readonly files: PlaylistFiles;
}

const playlistRef = Type.Unsafe<PlaylistWithSongs>(Type.Ref('playlistwithsongs'));
const newPlaylistRef = Type.Unsafe<NewPlaylist>(Type.Ref('newPlaylist'));
const JSON_TYPE = 'application/json; charset=utf-8';
const conditionalHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String(IF_NONE_MATCH_HEADER['if-none-match'])),
});

const PAGE_ETAG = 'Weak validator over what the page shows: its playlists and the total.';

/** The answer, or 304 if the client already has it; either way with its ETag and `Cache-Control`. */
function sendRevalidated(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: { json: Buffer; etag: string },
  type = JSON_TYPE,
) {
  reply.header('etag', answer.etag).header('cache-control', REVALIDATE);
  if (ifNoneMatch(request.headers['if-none-match'], answer.etag)) return reply.code(304).send();
  return reply.type(type).send(answer.json);
}

const FILE_ETAG =
  'Strong validator of this playlist in this format: it changes only if a catalog import changes one of its songs.';
const PlaylistFileQuery = Type.Object({
  format: Type.Optional(
    Type.Unsafe<ExportFormat>({
      type: 'string',
      enum: [...EXPORT_FORMATS],
      description:
        'The format, for links and browsers: wins over `Accept`, and the answer is a download (`Content-Disposition: attachment`).',
    }),
  ),
});
const PLAYLIST_FILE_HEADERS = {
  Vary: { type: 'string' as const, description: '`security, Authorization, Accept`: the answer depends on them.' },
  'Content-Disposition': {
    type: 'string' as const,
    description: 'With `?format=`: `attachment; filename="<name>.<ext>"`, a safe file name from the playlist\'s name.',
  },
};
const text = (description: string) => ({ schema: { type: 'string', description } });
const PLAYLIST_FILES_CONTENT = {
  'application/xspf+xml': text('XSPF version 1 (https://xspf.org/spec); durations in milliseconds.'),
  'application/jspf+json': text('JSPF, the JSON form of XSPF that ListenBrainz uses; durations in milliseconds.'),
  ...Object.fromEntries(
    MEDIA_TYPES.m3u8.map((type) => [
      type,
      text(
        'Extended M3U in UTF-8: `#EXTM3U`, `#PLAYLIST:`, `#EXTINF:<seconds>,<artist> - <title>`, `#EXTALB:`, and a location per entry.',
      ),
    ]),
  ),
};
const FILE_TYPES: Record<ExportFormat, string> = {
  json: JSON_TYPE,
  xspf: 'application/xspf+xml; charset=utf-8',
  jspf: 'application/jspf+json; charset=utf-8',
  m3u8: 'audio/mpegurl; charset=utf-8',
};

/** Whether the answer is the JSON that `Accept` allows without negotiating (the common and fastest case). */
const plainJson = (accept: string | undefined): boolean =>
  accept === undefined || accept === '*/*' || accept === 'application/json';

/** The playlist endpoints, at `/v3/playlist` and at the plural alias the getting-started examples use. */
export function playlistRoutes(app: FastifyInstance, deps: PlaylistRouteDeps): void {
  const { playlists, limits, authenticate, files } = deps;
  const query = pageQuerySchema(
    limits,
    "Words that must all appear, case- and accent-insensitively, in the playlist's name or in a song's title, artist or genre",
  );

  for (const base of ['/v3/playlist', '/v3/playlists'] as const) {
    const alias = base === '/v3/playlists';
    const tags = alias ? ['Aliases'] : ['Your Library'];
    const op = (id: string) => (alias ? `${id}Plural` : id);
    const aliasNote = alias ? ' Alias of the singular path, as used by the getting-started examples.' : '';

    app.get<{ Querystring: PageQuery; Headers: { 'if-none-match'?: string } }>(
      base,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('getplaylists'),
          tags,
          security: SECURITY,
          description: `Returns the caller's playlists in creation order, a page at a time, optionally filtered by search words.${aliasNote}`,
          querystring: query,
          headers: conditionalHeaders,
          response: {
            200: revalidatedJson(
              'The page of playlists (maybe empty).',
              Type.Array(playlistRef),
              PAGE_ETAG,
              PAGE_HEADERS,
            ),
            304: notModified(
              'The page has not changed since the ETag sent in `If-None-Match`.',
              PAGE_ETAG,
              PAGE_HEADERS,
            ),
            400: BAD_REQUEST,
            ...AUTHENTICATED_ERRORS,
          },
        },
      },
      async (request, reply) => {
        const page = await playlists.list(request.caller.userId, request.query);
        setPageHeaders(request, reply, request.query, page.total);
        return sendRevalidated(request, reply, page);
      },
    );

    app.post<{ Body: NewPlaylist }>(
      base,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('postplaylist'),
          tags,
          security: SECURITY,
          description: `Creates a playlist from a name and song ids and returns it.${aliasNote}`,
          body: newPlaylistRef,
          response: {
            200: json('The created playlist.', playlistRef, {
              Location: { type: 'string', description: 'The path of the new playlist.' },
            }),
            400: BAD_REQUEST,
            409: error("The caller's playlist quota is reached."),
            413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
            415: error(
              'The body is not JSON (text/plain and form bodies are read as JSON with the security header), or it is compressed (a `Content-Encoding` other than `identity`).',
              { 'Accept-Encoding': { type: 'string', description: '`identity`, when the body was compressed.' } },
            ),
            422: error('Some song ids are not in the catalog; `errormsg` names them.'),
            ...AUTHENTICATED_ERRORS,
          },
        },
      },
      async (request, reply) => {
        const playlist = await playlists.create(request.caller.userId, request.body);
        return reply.header('location', `/v3/playlist/${playlist.id}`).type(JSON_TYPE).send(playlist.json);
      },
    );

    app.get<{
      Params: { playlistId: number };
      Querystring: { format?: ExportFormat };
      Headers: { 'if-none-match'?: string };
    }>(
      `${base}/:playlistId`,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('getspecplaylist'),
          tags,
          security: SECURITY,
          description:
            "Returns one of the caller's playlists: JSON, or as `Accept` or `?format=` asks, an XSPF, JSPF or M3U8 " +
            `playlist file whose entries carry each song's title, artist, album, length and URL.${aliasNote}`,
          params: PlaylistParams,
          querystring: PlaylistFileQuery,
          headers: conditionalHeaders,
          response: {
            200: (() => {
              const answer = revalidatedJson('The playlist.', playlistRef, FILE_ETAG, PLAYLIST_FILE_HEADERS);
              return { ...answer, content: { ...answer.content, ...PLAYLIST_FILES_CONTENT } };
            })(),
            304: notModified('The playlist has not changed since the ETag sent in `If-None-Match`.', FILE_ETAG),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            406: error('`Accept` names none of JSON, XSPF, JSPF and M3U8.'),
            410: GONE,
            ...AUTHENTICATED_ERRORS,
          },
        },
      },
      async (request, reply) => {
        const vary = reply.getHeader('vary');
        reply.header('vary', vary === undefined ? 'Accept' : `${String(vary)}, Accept`);
        const { format } = request.query;
        const { accept } = request.headers;
        const { userId } = request.caller;
        if (format === undefined && plainJson(accept)) {
          return sendRevalidated(request, reply, await playlists.get(userId, request.params.playlistId));
        }
        const negotiated = format === undefined ? negotiateExport(accept ?? '*/*') : undefined;
        const chosen = format ?? negotiated?.format;
        if (chosen === undefined) {
          throw new ApiError(
            406,
            'Accept names no format of this playlist: application/json, application/xspf+xml, application/jspf+json or audio/mpegurl.',
          );
        }
        const origin = `${request.protocol}://${request.host}`;
        const file = await files.get(userId, request.params.playlistId, chosen, origin);
        if (format !== undefined) {
          const name = downloadFileName(file.name, FILE_EXTENSIONS[format]);
          reply.header('content-disposition', `attachment; filename="${name}"`);
        }
        const type =
          chosen === 'm3u8' && negotiated !== undefined ? `${negotiated.mediaType}; charset=utf-8` : undefined;
        return sendRevalidated(request, reply, file, type ?? FILE_TYPES[chosen]);
      },
    );

    app.delete<{ Params: { playlistId: number } }>(
      `${base}/:playlistId`,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('deleteplaylist'),
          tags,
          security: SECURITY,
          description: `Deletes one of the caller's playlists. Asking again answers 410.${aliasNote}`,
          params: PlaylistParams,
          response: {
            200: empty('Deleted; the body is empty.'),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            410: GONE,
            ...AUTHENTICATED_ERRORS,
          },
        },
      },
      async (request, reply) => {
        await playlists.remove(request.caller.userId, request.params.playlistId);
        return reply.code(200).send();
      },
    );
  }
}
