import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import { readWaiting, type WaitingReads } from '../live/waiting.js';
import type { Limits } from '../config.js';
import { PAGE_HEADERS, setPageHeaders } from '../http/paging.js';
import { addVary, sendRevalidated } from '../http/conditional.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  SEARCHING_ERRORS,
  SECURITY,
  FORBIDDEN,
  GONE,
  IF_NONE_MATCH_HEADER,
  NOT_FOUND,
  UNSUPPORTED_JSON_BODY,
  empty,
  error,
  json,
  notModified,
  revalidatedJson,
  JSON_TYPE,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { pageQuerySchema } from '../http/schemas.js';
import { PlaylistParams, Scope, UNKNOWN_SONGS, type NewPlaylist, type PlaylistWithSongs } from './playlist.schemas.js';
import type { PlaylistService } from './playlist.service.js';
import { ApiError } from '../http/errors.js';
import { readRules } from '../smart/rules.js';
import type { PlaylistFiles } from './playlist-files.service.js';
import {
  FILE_ETAG,
  NOT_ACCEPTABLE,
  PLAYLIST_FILE_HEADERS,
  PlaylistFileQuery,
  playlistOrFile,
  plainJson,
  playlistFileAnswer,
} from './playlist-files.http.js';

export interface PlaylistRouteDeps {
  readonly playlists: PlaylistService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
  readonly files: PlaylistFiles;
  /** Reads that wait for a change (`Prefer: wait`). */
  readonly live: WaitingReads;
}

const playlistRef = Type.Unsafe<PlaylistWithSongs>(Type.Ref('playlistwithsongs'));
const newPlaylistRef = Type.Unsafe<NewPlaylist>(Type.Ref('newPlaylist'));
const conditionalHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String(IF_NONE_MATCH_HEADER['if-none-match'])),
});

/** Said after an alias's description. */
const ALIAS_NOTE = ' Alias of the singular path, as used by the getting-started examples.';
const LIBRARY = ['Your Library'];

const PAGE_ETAG = 'Weak validator over what the page shows: its playlists and the total.';

/** `?folder=` (1.10.0): the playlists the caller filed in one of their folders, or at the top level. */
const FolderQuery = Type.String({
  pattern: '^(top|[1-9][0-9]{0,15})$',
  'x-message': 'must be `top` or the id of a folder of yours',
  description:
    'The playlists filed in this folder of yours (`top`: at the top level), their own and those shared with them, in their order (1.10.0); `scope` does not apply',
});

/** The playlist endpoints, at `/v3/playlist` and at the plural alias the getting-started examples use. */
export function playlistRoutes(app: TypedApp, deps: PlaylistRouteDeps): void {
  const { playlists, limits, authenticate, files, live } = deps;
  const page = pageQuerySchema(
    limits,
    "Words that must all appear, case- and accent-insensitively, in the playlist's name or in a song's title, artist or genre",
  );
  const query = Type.Object({ ...page.properties, scope: Type.Optional(Scope), folder: Type.Optional(FolderQuery) });

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylists',
        summary: 'List your playlists',
        tags: LIBRARY,
        security: SECURITY,
        description:
          "Returns the caller's playlists in creation order, a page at a time, optionally filtered by search words; with `scope`, the playlists other users shared with the caller, or both (each shared one with `owner` and the caller's `role`); with `folder` (1.10.0), those the caller filed in one of their folders (or at the top level), in their order.",
        querystring: query,
        headers: conditionalHeaders,
        response: {
          200: revalidatedJson(
            'The page of playlists (maybe empty).',
            Type.Array(playlistRef),
            PAGE_ETAG,
            PAGE_HEADERS,
          ),
          304: notModified('The page has not changed since the ETag sent in `If-None-Match`.', PAGE_ETAG, PAGE_HEADERS),
          400: BAD_REQUEST,
          404: error('`folder` names no folder of yours.'),
          ...SEARCHING_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const page = await playlists.list(request.caller.userId, request.query);
        // The links stay in the scope asked for: `next` of the shared list is its next page, not the caller's own.
        const { scope, folder } = request.query;
        setPageHeaders(request, reply, request.query, page.total, {
          scope: scope === 'own' || folder !== undefined ? undefined : scope,
          folder,
        });
        return sendRevalidated(request, reply, page);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/playlist',
      onRequest: authenticate,
      schema: {
        operationId: 'postplaylist',
        summary: 'Create a playlist',
        tags: LIBRARY,
        security: SECURITY,
        description:
          'Creates a playlist from a name and song ids and returns it; or (1.7.0) a smart playlist from a name and ' +
          '`rules`, whose songs are the catalog songs they choose (a `playlist` the caller may not read, or rules ' +
          'that break the contract, are a 400 naming the path of the problem).',
        body: newPlaylistRef,
        response: {
          200: json('The created playlist.', playlistRef, {
            Location: { type: 'string', description: 'The path of the new playlist.' },
            ETag: {
              type: 'string',
              description: 'Strong validator of the new playlist, as GET answers it: the `If-Match` of a first edit.',
            },
          }),
          400: BAD_REQUEST,
          409: error("The caller's playlist quota is reached."),
          413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
          415: UNSUPPORTED_JSON_BODY,
          422: UNKNOWN_SONGS,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { name, songIds, rules } = request.body;
        if (rules !== undefined && songIds !== undefined) {
          throw ApiError.badRequest('Send "songIds" or "rules" (a smart playlist), not both.');
        }
        const playlist =
          rules !== undefined
            ? await playlists.createSmart(request.caller.userId, name, readRules(rules, limits))
            : songIds !== undefined
              ? await playlists.create(request.caller.userId, { name, songIds })
              : undefined;
        if (playlist === undefined) {
          throw ApiError.badRequest('"songIds" is required (or "rules", for a smart playlist).');
        }
        return reply
          .header('location', `/v3/playlist/${playlist.id}`)
          .header('etag', playlist.etag)
          .type(JSON_TYPE)
          .send(playlist.body);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId',
      onRequest: authenticate,
      schema: {
        operationId: 'getspecplaylist',
        summary: 'Get one of your playlists',
        tags: LIBRARY,
        security: SECURITY,
        description:
          "Returns one of the caller's playlists: JSON, or as `Accept` or `?format=` asks, an XSPF, JSPF or M3U8 " +
          `playlist file whose entries carry each song's title, artist, album, length and URL.`,
        params: PlaylistParams,
        querystring: PlaylistFileQuery,
        headers: conditionalHeaders,
        response: {
          200: playlistOrFile(playlistRef),
          304: notModified('The playlist has not changed since the ETag sent in `If-None-Match`.', FILE_ETAG, {
            Vary: PLAYLIST_FILE_HEADERS.Vary,
          }),
          400: BAD_REQUEST,
          404: NOT_FOUND,
          406: NOT_ACCEPTABLE,
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        addVary(reply, 'Accept');
        if (plainJson(request.query.format, request.headers.accept)) {
          const read = () => playlists.get(request.caller.userId, request.params.playlistId);
          return sendRevalidated(request, reply, await readWaiting(request, reply, live, read));
        }
        const { file, type } = await playlistFileAnswer(request, reply, files);
        return sendRevalidated(request, reply, file, type);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'DELETE',
      url: '/v3/playlist/:playlistId',
      onRequest: authenticate,
      schema: {
        operationId: 'deleteplaylist',
        summary: 'Delete one of your playlists',
        tags: LIBRARY,
        security: SECURITY,
        description:
          "Deletes one of the caller's playlists. Asking again answers 410. Only its owner may delete a playlist (a member is answered 403).",
        params: PlaylistParams,
        response: {
          200: empty('Deleted; the body is empty.'),
          400: BAD_REQUEST,
          403: FORBIDDEN,
          404: NOT_FOUND,
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        await playlists.remove(request.caller.userId, request.params.playlistId);
        return reply.code(200).send();
      },
    },
    ALIAS_NOTE,
  );
}
