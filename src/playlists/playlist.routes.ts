import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { PAGE_HEADERS, setPageHeaders } from '../http/paging.js';
import { ifNoneMatch } from '../http/conditional.js';
import {
  ALIAS_TAG,
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
import type { ExportFormat } from '../formats/formats.js';
import type { PlaylistFiles } from './playlist.files.js';
import {
  FILE_ETAG,
  NOT_ACCEPTABLE,
  PlaylistFileQuery,
  playlistOrFile,
  plainJson,
  playlistFileAnswer,
  varyOnAccept,
} from './playlist-files.http.js';

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

/** The playlist endpoints, at `/v3/playlist` and at the plural alias the getting-started examples use. */
export function playlistRoutes(app: FastifyInstance, deps: PlaylistRouteDeps): void {
  const { playlists, limits, authenticate, files } = deps;
  const query = pageQuerySchema(
    limits,
    "Words that must all appear, case- and accent-insensitively, in the playlist's name or in a song's title, artist or genre",
  );

  for (const base of ['/v3/playlist', '/v3/playlists'] as const) {
    const alias = base === '/v3/playlists';
    const tags = alias ? [ALIAS_TAG] : ['Your Library'];
    const op = (id: string) => (alias ? `${id}Plural` : id);
    const aliasNote = alias ? ' Alias of the singular path, as used by the getting-started examples.' : '';
    // An alias's summary names its singular operation, so that the folded list of aliases on /docs reads as such.
    const summary = (text: string, singular: string) => (alias ? `Alias of ${singular}` : text);

    app.get<{ Querystring: PageQuery; Headers: { 'if-none-match'?: string } }>(
      base,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('getplaylists'),
          summary: summary('List your playlists', 'GET /v3/playlist'),
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
          summary: summary('Create a playlist', 'POST /v3/playlist'),
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
          summary: summary('Get one of your playlists', 'GET /v3/playlist/{playlist-id}'),
          tags,
          security: SECURITY,
          description:
            "Returns one of the caller's playlists: JSON, or as `Accept` or `?format=` asks, an XSPF, JSPF or M3U8 " +
            `playlist file whose entries carry each song's title, artist, album, length and URL.${aliasNote}`,
          params: PlaylistParams,
          querystring: PlaylistFileQuery,
          headers: conditionalHeaders,
          response: {
            200: playlistOrFile(playlistRef),
            304: notModified('The playlist has not changed since the ETag sent in `If-None-Match`.', FILE_ETAG),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            406: NOT_ACCEPTABLE,
            410: GONE,
            ...AUTHENTICATED_ERRORS,
          },
        },
      },
      async (request, reply) => {
        varyOnAccept(reply);
        if (plainJson(request.query.format, request.headers.accept)) {
          return sendRevalidated(request, reply, await playlists.get(request.caller.userId, request.params.playlistId));
        }
        const { file, type } = await playlistFileAnswer(request, reply, files);
        return sendRevalidated(request, reply, file, type);
      },
    );

    app.delete<{ Params: { playlistId: number } }>(
      `${base}/:playlistId`,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('deleteplaylist'),
          summary: summary('Delete one of your playlists', 'DELETE /v3/playlist/{playlist-id}'),
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
