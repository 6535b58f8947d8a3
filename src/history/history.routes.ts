import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { addVary, expectedEtag, sendRevalidated } from '../http/conditional.js';
import { PAGE_HEADERS, setPageHeaders } from '../http/paging.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  FORBIDDEN,
  IF_NONE_MATCH_HEADER,
  NOT_FOUND,
  SECURITY,
  error,
  json,
  notModified,
  revalidatedJson,
  JSON_TYPE,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { rfc3339 } from '../http/times.js';
import {
  FILE_ETAG,
  NOT_ACCEPTABLE,
  PLAYLIST_FILE_HEADERS,
  PlaylistFileQuery,
  plainJson,
  playlistFileAnswer,
  playlistOrFile,
} from '../playlists/playlist-files.http.js';
import { PlaylistParams, type PlaylistWithSongs } from '../playlists/playlist.schemas.js';
import { minimalSchema, PREFER_HEADER, sendWriteAnswer, writeAnswerDoc } from '../playlists/write-answer.http.js';
import type { HistoryService } from './history.service.js';
import { DiffQuery, RestoreBody, VersionParams, versionsQuery } from './history.schemas.js';

export interface HistoryRouteDeps {
  readonly history: HistoryService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

const HISTORY = ['History'];
const ALIAS_NOTE = ' Alias of the singular path.';
const playlistRef = Type.Unsafe<PlaylistWithSongs>(Type.Ref('playlistwithsongs'));
const conditionalHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String(IF_NONE_MATCH_HEADER['if-none-match'])),
});
const restoreHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description:
        'Restore only if the playlist is still as this ETag describes it: the current tag of any of its forms (JSON, entries, a file); `*`: any current version. Otherwise 412. A deleted playlist has no current version (`*` is 412): its ETag is that of the version its delete left, as `GET …/versions/{version}` answers it for the delete (in any form).',
    }),
  ),
  prefer: PREFER_HEADER,
});
const GONE_VERSION = error(
  'The caller deleted this playlist and its history is no longer kept, or this version is no longer kept.',
);
const VERSION_ENTRIES_ETAG = "Strong validator of the version's entries.";

/** A playlist's history (API 1.4.0): its revisions, any kept version, and restore; at the singular and plural paths. */
export function historyRoutes(app: TypedApp, deps: HistoryRouteDeps): void {
  const { history, limits, authenticate } = deps;

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/versions',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylistversions',
        summary: "List a playlist's revisions",
        tags: HISTORY,
        security: SECURITY,
        description:
          "Returns the revisions of one of the caller's playlists (also a deleted one), newest first, a page at a time: each one's version, time, author, change, and the name and song count after it.",
        params: PlaylistParams,
        querystring: versionsQuery(limits),
        response: {
          200: json('The page of revisions.', Type.Array(Type.Ref('revision')), PAGE_HEADERS),
          400: BAD_REQUEST,
          404: NOT_FOUND,
          410: GONE_VERSION,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { limit, offset } = request.query;
        const page = await history.list(request.caller.userId, request.params.playlistId, limit, offset);
        setPageHeaders(request, reply, { limit, offset }, page.total);
        return reply.header('cache-control', 'no-store').send(page.revisions.map((r) => ({ ...r, at: rfc3339(r.at) })));
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/versions/:version',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylistversion',
        summary: 'Get a version of a playlist',
        tags: HISTORY,
        security: SECURITY,
        description:
          "Returns one of the caller's playlists as a kept revision left it, in every form GET of the playlist answers: JSON, or as `Accept` or `?format=` asks, XSPF, JSPF or M3U8.",
        params: VersionParams,
        querystring: PlaylistFileQuery,
        headers: conditionalHeaders,
        response: {
          200: playlistOrFile(playlistRef),
          304: notModified('The version has not changed since the ETag sent in `If-None-Match`.', FILE_ETAG, {
            Vary: PLAYLIST_FILE_HEADERS.Vary,
          }),
          400: BAD_REQUEST,
          404: error('No such playlist for this user, or it never had this version.'),
          406: NOT_ACCEPTABLE,
          410: GONE_VERSION,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        addVary(reply, 'Accept');
        const { playlistId, version } = request.params;
        const { userId } = request.caller;
        if (plainJson(request.query.format, request.headers.accept)) {
          return sendRevalidated(request, reply, await history.json(userId, playlistId, version));
        }
        const files = {
          get: (user: number, id: number, ...rest: [Parameters<HistoryService['file']>[3], string]) =>
            history.file(user, id, version, ...rest),
        };
        const { file, type } = await playlistFileAnswer(
          // The same request with one more parameter, which `files` has taken already.
          request as unknown as Parameters<typeof playlistFileAnswer>[0],
          reply,
          files,
        );
        return sendRevalidated(request, reply, file, type);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/versions/:version/entries',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylistversionentries',
        summary: "Get a version of a playlist's entries",
        tags: HISTORY,
        security: SECURITY,
        description:
          "Returns the entries of one of the caller's playlists as a kept revision left them (1.8.0), as `GET …/entries` answered them then: each slot's entry id and song (the catalog's title and artist now). A delete's version answers as the version before it.",
        params: VersionParams,
        headers: conditionalHeaders,
        response: {
          200: revalidatedJson("The version's entries.", Type.Ref('playlistentries'), VERSION_ENTRIES_ETAG),
          304: notModified(
            "The version's entries have not changed since the ETag sent in `If-None-Match`.",
            VERSION_ENTRIES_ETAG,
          ),
          400: BAD_REQUEST,
          404: error('No such playlist for this user, or it never had this version.'),
          410: error(
            'The caller deleted this playlist and its history is no longer kept, this version is no longer kept, or it was recorded before entries were (its songs are at `GET …/versions/{version}`).',
          ),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { playlistId, version } = request.params;
        return sendRevalidated(request, reply, await history.entries(request.caller.userId, playlistId, version));
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/playlist/:playlistId/restore',
      onRequest: authenticate,
      schema: {
        operationId: 'restoreplaylist',
        summary: 'Restore a version of a playlist',
        tags: HISTORY,
        security: SECURITY,
        description:
          "Makes a new revision of one of the caller's playlists with the name and songs of a kept version; a deleted playlist comes back under its id. Undo is a restore of the version before the current one.",
        params: PlaylistParams,
        headers: restoreHeaders,
        body: RestoreBody,
        response: {
          200: writeAnswerDoc(
            'The restored playlist, as GET now answers it; with `Prefer: return=minimal`, `{"version"}` only (the same `ETag`).',
            playlistRef,
            minimalSchema(),
            {
              ETag: {
                type: 'string',
                description: 'Strong validator of the restored playlist, as GET now answers it.',
              },
            },
          ),
          400: BAD_REQUEST,
          403: FORBIDDEN,
          404: error('No such playlist for this user, or it never had this version.'),
          409: error(
            "The version has more songs than a playlist may hold now, the caller's playlist quota is reached (restoring a deleted playlist), or it was restored meanwhile.",
          ),
          410: GONE_VERSION,
          412: error(
            '`If-Match` does not name the current ETag: nothing changed; the answer carries the current ETag.',
            {
              ETag: {
                type: 'string',
                description: 'The current ETag of the playlist (of a deleted one: of the version its delete left).',
              },
            },
          ),
          413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
          415: error(
            'The body is not JSON (text/plain and form bodies are read as JSON with the security header), or it is compressed.',
          ),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { userId } = request.caller;
        const restored = await history.restore(
          userId,
          request.params.playlistId,
          request.body.version,
          expectedEtag(request.headers['if-match']),
        );
        const minimal = { version: restored.version };
        return sendWriteAnswer(request, reply, { etag: restored.etag, minimal, body: restored.body });
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/diff',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylistdiff',
        summary: 'What changed between two versions',
        tags: HISTORY,
        security: SECURITY,
        description:
          'Returns the RFC 6902 JSON Patch, over `{"name", "songs": [{"id"}]}`, that turns version `from` into version `to` (the current one by default): sent with PATCH to the playlist at `from`, it gives `to`. A small change gives a small patch; a change too large to find in bounded time comes as one `replace` of `/songs`. With `form=entries` (1.8.0), the ops of a merged edit with entry ids instead: removes, the fewest moves, inserts with the entries they stand for, and a rename, that turn the entries of `from` into those of `to` when applied in order.',
        params: PlaylistParams,
        querystring: DiffQuery,
        response: {
          200: {
            description:
              'The patch (`application/json-patch+json`), `[]` when the two versions are the same; with `form=entries`, the ops (`application/json`).',
            headers: { 'Cache-Control': { type: 'string', description: '`no-store`.' } },
            content: {
              'application/json-patch+json': {
                schema: Type.Array(
                  Type.Object({}, { additionalProperties: true, description: 'An RFC 6902 operation' }),
                ),
              },
              'application/json': { schema: Type.Ref('entriesDiff') },
            },
          },
          400: error('A bad parameter (an unknown `form`), or `from` or `to` past the newest version.'),
          404: NOT_FOUND,
          410: error(
            'The caller deleted this playlist and its history is no longer kept, or a version is no longer kept; with `form=entries`, also a version recorded before entries were.',
          ),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { from, to, form } = request.query;
        const { userId } = request.caller;
        if (form === 'entries') {
          const diff = await history.entriesDiff(userId, request.params.playlistId, from, to);
          return reply
            .header('cache-control', 'no-store')
            .type(JSON_TYPE)
            .send(Buffer.from(JSON.stringify(diff)));
        }
        const operations = await history.diff(userId, request.params.playlistId, from, to);
        return reply
          .header('cache-control', 'no-store')
          .type('application/json-patch+json')
          .send(Buffer.from(JSON.stringify(operations)));
      },
    },
    ALIAS_NOTE,
  );
}
