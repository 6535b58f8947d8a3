import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { emptyJsonBody, hasBody } from '../http/body-parsers.js';
import { expectedEtag } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  FORBIDDEN,
  GONE,
  NOT_FOUND,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  error,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import type { RulesChange } from './write/change.js';
import type { Edit } from './write/document-change.js';
import { readRules } from '../smart/rules.js';
import type { PlaylistService } from './playlist.service.js';
import {
  applyJsonPatch,
  applyMergePatch,
  editSchemas,
  insertSongs,
  type MergePatch,
} from './playlist-edit.operations.js';
import { PlaylistParams, UNKNOWN_SONGS, type PlaylistWithSongs } from './playlist.schemas.js';
import { minimalSchema, PREFER_HEADER, sendWriteAnswer, writeAnswerDoc } from './write-answer.http.js';

export interface PlaylistEditRouteDeps {
  readonly playlists: Pick<PlaylistService, 'edit'>;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

const JSON_PATCH = 'application/json-patch+json';
const MERGE_PATCH = 'application/merge-patch+json';
/** The body types a PATCH takes, named in `Accept-Patch` (RFC 5789) on its 415. */
const ACCEPT_PATCH = `${MERGE_PATCH}, ${JSON_PATCH}`;
const LIBRARY = ['Your Library'];

const playlistRef = Type.Unsafe<PlaylistWithSongs>(Type.Ref('playlistwithsongs'));
const ifMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description:
        'Apply the edit only if the playlist is still as this ETag describes it: the current tag of any of its forms (from GET as JSON or a file, `GET …/entries`, the create or an earlier edit, compressed or not); `*`: any current version. Otherwise 412.',
    }),
  ),
  prefer: PREFER_HEADER,
});
/** What `sendEdit` reads of an edit's request: the playlist's id, `If-Match`, `Prefer` and the caller. */
type EditRequest = Pick<FastifyRequest, 'caller'> & {
  readonly params: { readonly playlistId: number };
  readonly headers: { readonly 'if-match'?: string; readonly prefer?: string | string[] | undefined };
};

const ETAG_HEADER = {
  ETag: {
    type: 'string' as const,
    description:
      'Strong validator of the edited playlist, as GET now answers it; a compressed answer\'s names its coding (`"…-gzip"`).',
  },
};

/** The answers every edit documents. */
function editAnswers(limits: Limits) {
  return {
    200: writeAnswerDoc(
      'The edited playlist, as GET now answers it; with `Prefer: return=minimal`, `{"version"}` only (the same `ETag`).',
      playlistRef,
      minimalSchema(),
      ETAG_HEADER,
    ),
    400: BAD_REQUEST,
    403: FORBIDDEN,
    404: NOT_FOUND,
    409: error(
      `The edit cannot apply to the playlist as it is: a JSON Patch test failed, an index is past the end, it would leave more than ${limits.songsMax} songs, or it changes the songs of a smart playlist by hand.`,
    ),
    410: GONE,
    412: error(
      '`If-Match` names no current ETag of the playlist: nothing changed; the answer carries the current ETag.',
      {
        ETag: { type: 'string' as const, description: "The current ETag of the playlist's JSON." },
      },
    ),
    413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
    415: UNSUPPORTED_JSON_BODY,
    422: UNKNOWN_SONGS,
    ...AUTHENTICATED_ERRORS,
  };
}

/** The body types read as a merge patch: the merge patch's own, JSON, and what create also takes. */
const MERGE_PATCH_TYPES = [MERGE_PATCH, 'application/json', 'text/plain', 'application/x-www-form-urlencoded'];
/**
 * Another body type is refused before a parser is looked for, so its 415 names the types a PATCH takes; no body at
 * all (and so no type) is told it is empty.
 */
const refuseOtherPatchTypes = async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
  const type = request.mediaType ?? '';
  if (type === '' && !hasBody(request)) throw ApiError.badRequest(emptyJsonBody(undefined));
  if (type !== JSON_PATCH && !MERGE_PATCH_TYPES.includes(type)) {
    throw new ApiError(415, `A PATCH takes ${ACCEPT_PATCH} (or application/json as a merge patch).`, {
      'accept-patch': ACCEPT_PATCH,
    });
  }
  return payload;
};

/**
 * What a JSON Patch asks to write, as the edit's cost: its operations and the songs their values carry (a merge
 * patch's cost is the songs it sends). The playlist's own songs are counted by the edit itself.
 */
function jsonPatchCost(body: unknown): number {
  if (!Array.isArray(body)) return 0;
  let cost = 0;
  for (const op of body as unknown[]) {
    const value = (op as { value?: unknown } | null)?.value;
    cost += 1 + (Array.isArray(value) ? value.length : 0);
  }
  return cost;
}

/**
 * Runs the edit of the request's playlist, under its `If-Match`, and answers the edited playlist with its ETag (with
 * `Prefer: return=minimal`, its version).
 */
async function sendEdit(
  playlists: PlaylistEditRouteDeps['playlists'],
  request: EditRequest,
  reply: FastifyReply,
  change: Edit,
  cost: number,
  rules?: RulesChange,
) {
  const { userId } = request.caller;
  const { playlistId } = request.params;
  const expected = expectedEtag(request.headers['if-match']);
  const edited = await playlists.edit(userId, playlistId, expected, change, cost, 'edit', rules);
  return sendWriteAnswer(request, reply, {
    etag: edited.etag,
    minimal: { version: edited.version },
    body: edited.body,
  });
}

/**
 * What an edit's `rules` asks (1.7.0): absent, nothing; null, an ordinary playlist; else the rules, read by
 * `readRules` (400 naming the path of the first problem). Rules and songs together are a 400: a smart playlist's
 * songs are those its rules choose.
 */
function rulesOf(body: { readonly songIds?: unknown; readonly rules?: unknown }, limits: Limits): RulesChange {
  if (body.rules === undefined || body.rules === null) return body.rules;
  if (body.songIds !== undefined) {
    throw ApiError.badRequest('Send "songIds" or "rules" (a smart playlist), not both.');
  }
  return readRules(body.rules, limits);
}

/**
 * Editing (API 1.3.0): PATCH (merge patch or JSON Patch), PUT of a whole `newPlaylist`, and POST of songs to insert,
 * at `/v3/playlist/{id}` and the plural alias. Each route is a schema and one call to the playlists service; the schemas are
 * the only check of a merge patch, a PUT or inserted songs.
 */
export function playlistEditRoutes(app: TypedApp, deps: PlaylistEditRouteDeps): void {
  const { playlists, limits, authenticate } = deps;
  const schemas = editSchemas(limits);
  const putBody = Type.Object(
    {
      name: schemas.name,
      songIds: Type.Optional(Type.Array(schemas.songId, { description: 'The songs, in order' })),
      rules: schemas.rules,
    },
    {
      description:
        'A whole `newPlaylist`: the name, and the songs or (1.7.0) a smart playlist\'s rules; `{"name", "rules": null}` keeps the songs of a smart playlist it makes ordinary',
    },
  );
  // A 415 of a PATCH names the types it takes, whether Fastify found no parser or the route refused the type.
  const acceptPatch = async (_request: unknown, reply: FastifyReply, payload: unknown) => {
    if (reply.statusCode === 415) reply.header('accept-patch', ACCEPT_PATCH);
    return payload;
  };
  // Every type read as a merge patch is checked by its schema; the document lists only the patch types (openapi.ts).
  const mergePatchBodies = Object.fromEntries(MERGE_PATCH_TYPES.map((type) => [type, { schema: schemas.mergePatch }]));

  routeWithPluralAlias(
    app,
    {
      method: 'PATCH',
      url: '/v3/playlist/:playlistId',
      onRequest: authenticate,
      preParsing: refuseOtherPatchTypes,
      onSend: acceptPatch,
      schema: {
        operationId: 'patchplaylist',
        summary: 'Edit a playlist',
        tags: LIBRARY,
        security: SECURITY,
        description:
          'Renames the playlist and/or replaces its songs with a merge patch (`application/merge-patch+json`, or ' +
          '`application/json`), or edits it with a JSON Patch (`application/json-patch+json`, RFC 6902) over ' +
          '`{"name", "songs": [{"id"}]}`: add, remove, replace, move, copy and test on `/name`, `/songs`, ' +
          '`/songs/N`, `/songs/-` and `/songs/N/id`, all or nothing.',
        params: PlaylistParams,
        headers: ifMatchHeaders,
        body: {
          content: {
            [MERGE_PATCH]: { schema: schemas.mergePatch },
            [JSON_PATCH]: {
              schema: Type.Array(
                Type.Object(
                  {
                    op: Type.String({ enum: ['add', 'remove', 'replace', 'move', 'copy', 'test'] }),
                    path: Type.String({ examples: ['/songs/-'] }),
                    from: Type.Optional(Type.String()),
                    value: Type.Optional(Type.Unknown()),
                  },
                  { additionalProperties: true },
                ),
                { description: 'A JSON Patch (RFC 6902)' },
              ),
            },
            ...mergePatchBodies,
          },
        },
        response: {
          ...editAnswers(limits),
          415: error('Another body type: `Accept-Patch` names the two patch types.', {
            'Accept-Patch': { type: 'string' as const, description: ACCEPT_PATCH },
          }),
        },
      },
      handler: async (request, reply) => {
        const body: unknown = request.body;
        // Any other type was refused before its body was read (refuseOtherPatchTypes).
        if (request.mediaType === JSON_PATCH) {
          const cost = jsonPatchCost(body);
          return sendEdit(playlists, request, reply, (current) => applyJsonPatch(current, body, limits), cost);
        }
        const patch = body as MergePatch & { readonly rules?: unknown };
        const rules = rulesOf(patch, limits);
        const cost = patch.songIds?.length ?? 0;
        const change: Edit = (current) => applyMergePatch(current, patch);
        return sendEdit(playlists, request, reply, change, cost, rules);
      },
    },
    '',
  );

  routeWithPluralAlias(
    app,
    {
      method: 'PUT',
      url: '/v3/playlist/:playlistId',
      onRequest: authenticate,
      schema: {
        operationId: 'putplaylist',
        summary: 'Replace a playlist',
        tags: LIBRARY,
        security: SECURITY,
        description:
          'Replaces the name and the songs of the playlist; or (1.7.0) its name and rules, making it a smart ' +
          'playlist (`"rules": null`: an ordinary playlist that keeps its songs). A smart playlist\'s songs cannot ' +
          'be replaced by hand (409).',
        params: PlaylistParams,
        headers: ifMatchHeaders,
        body: putBody,
        response: editAnswers(limits),
      },
      handler: async (request, reply) => {
        const put = request.body;
        const rules = rulesOf(put, limits);
        if (put.songIds === undefined && put.rules === undefined) {
          throw ApiError.badRequest('"songIds" is required (or "rules", for a smart playlist).');
        }
        const change: Edit = (current) => applyMergePatch(current, { name: put.name, songIds: put.songIds });
        return sendEdit(playlists, request, reply, change, put.songIds?.length ?? 0, rules);
      },
    },
    '',
  );

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/playlist/:playlistId/songs',
      onRequest: authenticate,
      schema: {
        operationId: 'addplaylistsongs',
        summary: 'Add songs to a playlist',
        tags: LIBRARY,
        security: SECURITY,
        description:
          'Inserts the songs before `position` (0-based), or after the last song without one. Appends sent ' +
          'together all land, in some order.',
        params: PlaylistParams,
        headers: ifMatchHeaders,
        body: schemas.insertSongs,
        response: editAnswers(limits),
      },
      handler: async (request, reply) => {
        const { songIds, position } = request.body;
        const insert: Edit = (current) => insertSongs(current, songIds, position);
        return sendEdit(playlists, request, reply, insert, songIds.length);
      },
    },
    '',
  );
}
