import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { ApiError } from '../http/errors.js';
import {
  ALIAS_TAG,
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  GONE,
  NOT_FOUND,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  error,
  json,
} from '../http/responses.js';
import type { Edit } from './playlist-edit.service.js';
import type { PlaylistService } from './playlist.service.js';
import { applyJsonPatch, applyMergePatch, editSchemas, insertSongs } from './playlist-edit.operations.js';
import { PlaylistParams, type PlaylistWithSongs } from './playlist.schemas.js';

export interface PlaylistEditRouteDeps {
  readonly editor: Pick<PlaylistService, 'edit'>;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

const JSON_PATCH = 'application/json-patch+json';
const MERGE_PATCH = 'application/merge-patch+json';
/** The body types a PATCH takes, named in `Accept-Patch` (RFC 5789) on its 415. */
const ACCEPT_PATCH = `${MERGE_PATCH}, ${JSON_PATCH}`;
const JSON_TYPE = 'application/json; charset=utf-8';

const playlistRef = Type.Unsafe<PlaylistWithSongs>(Type.Ref('playlistwithsongs'));
const ifMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description:
        'Apply the edit only if the playlist is still as this ETag (from GET, the create or an earlier edit, compressed or not) describes it; `*`: any current version. Otherwise 412.',
    }),
  ),
});
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
    200: json('The edited playlist, as GET now answers it.', playlistRef, ETAG_HEADER),
    400: BAD_REQUEST,
    404: NOT_FOUND,
    409: error(
      `The edit cannot apply to the playlist as it is: a JSON Patch test failed, an index is past the end, or it would leave more than ${limits.songsMax} songs.`,
    ),
    410: GONE,
    412: error('`If-Match` does not name the current ETag: nothing changed; the answer carries the current ETag.', {
      ETag: { type: 'string' as const, description: 'The current ETag of the playlist.' },
    }),
    413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
    415: UNSUPPORTED_JSON_BODY,
    422: error('Some song ids are not in the catalog; `errormsg` names them.'),
    ...AUTHENTICATED_ERRORS,
  };
}

const mediaType = (reply: FastifyReply) =>
  (reply.request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

/** The body types read as a merge patch: the merge patch's own, JSON, and what create also takes. */
const MERGE_PATCH_TYPES = [MERGE_PATCH, 'application/json', 'text/plain', 'application/x-www-form-urlencoded'];
/** Another body type is refused before a parser is looked for, so its 415 names the types a PATCH takes. */
const refuseOtherPatchTypes = async (_request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
  const type = mediaType(reply);
  if (type !== JSON_PATCH && !MERGE_PATCH_TYPES.includes(type)) {
    throw new ApiError(415, `A PATCH takes ${ACCEPT_PATCH} (or application/json as a merge patch).`, {
      'accept-patch': ACCEPT_PATCH,
    });
  }
  return payload;
};

/**
 * What a PATCH body asks to write, as the edit's cost: the songs a merge patch sends, or a JSON Patch's operations
 * and the songs their values carry. The playlist's own songs are counted by the editor.
 */
function patchCost(type: string, body: unknown): number {
  if (type === JSON_PATCH) {
    if (!Array.isArray(body)) return 0;
    let cost = 0;
    for (const op of body as unknown[]) {
      const value = (op as { value?: unknown } | null)?.value;
      cost += 1 + (Array.isArray(value) ? value.length : 0);
    }
    return cost;
  }
  const songIds = (body as { songIds?: unknown } | null)?.songIds;
  return Array.isArray(songIds) ? songIds.length : 0;
}

/** Runs the edit of the request's playlist, under its `If-Match`, and answers the edited playlist with its ETag. */
async function sendEdit(
  editor: PlaylistEditRouteDeps['editor'],
  request: FastifyRequest<{ Params: Static<typeof PlaylistParams>; Headers: Static<typeof ifMatchHeaders> }>,
  reply: FastifyReply,
  change: Edit,
  cost: number,
) {
  const { userId } = request.caller;
  const edited = await editor.edit(userId, request.params.playlistId, request.headers['if-match'], change, cost);
  return reply.header('etag', edited.etag).type(JSON_TYPE).send(edited.body);
}

/**
 * Editing (API 1.3.0): PATCH (merge patch or JSON Patch), PUT of a whole `newPlaylist`, and POST of songs to insert,
 * at `/v3/playlist/{id}` and the plural alias. Each route is a schema and one call to the editor.
 */
export function playlistEditRoutes(app: FastifyInstance, deps: PlaylistEditRouteDeps): void {
  const { editor, limits, authenticate } = deps;
  const schemas = editSchemas(limits);
  const putBody = Type.Object(
    { name: schemas.name, songIds: Type.Array(schemas.songId, { description: 'The songs, in order' }) },
    { description: 'A whole `newPlaylist`: both members are required' },
  );
  const insertBody = schemas.insertSongs;
  // A 415 of a PATCH names the types it takes, whether Fastify found no parser or the route refused the type.
  const acceptPatch = async (_request: unknown, reply: FastifyReply, payload: unknown) => {
    if (reply.statusCode === 415) reply.header('accept-patch', ACCEPT_PATCH);
    return payload;
  };

  for (const base of ['/v3/playlist', '/v3/playlists'] as const) {
    const alias = base === '/v3/playlists';
    const tags = alias ? [ALIAS_TAG] : ['Your Library'];
    const op = (id: string) => (alias ? `${id}Plural` : id);
    const summary = (text: string, singular: string) => (alias ? `Alias of ${singular}` : text);
    const path = `${base}/:playlistId`;

    app.patch<{ Params: Static<typeof PlaylistParams>; Headers: Static<typeof ifMatchHeaders>; Body: unknown }>(
      path,
      {
        onRequest: authenticate,
        preParsing: refuseOtherPatchTypes,
        onSend: acceptPatch,
        schema: {
          operationId: op('patchplaylist'),
          summary: summary('Edit a playlist', 'PATCH /v3/playlist/{playlist-id}'),
          tags,
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
              'application/json': { schema: schemas.mergePatch },
            },
          },
          response: {
            ...editAnswers(limits),
            415: error('Another body type: `Accept-Patch` names the two patch types.', {
              'Accept-Patch': { type: 'string' as const, description: ACCEPT_PATCH },
            }),
          },
        },
      },
      async (request, reply) => {
        const type = mediaType(reply);
        const body = request.body;
        // Any other type was refused before its body was read (refuseOtherPatchTypes).
        const change = type === JSON_PATCH ? applyJsonPatch : applyMergePatch;
        return sendEdit(editor, request, reply, (current) => change(current, body, limits), patchCost(type, body));
      },
    );

    app.put<{
      Params: Static<typeof PlaylistParams>;
      Headers: Static<typeof ifMatchHeaders>;
      Body: Static<typeof putBody>;
    }>(
      path,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('putplaylist'),
          summary: summary('Replace a playlist', 'PUT /v3/playlist/{playlist-id}'),
          tags,
          security: SECURITY,
          description: 'Replaces the name and the songs of the playlist (both required).',
          params: PlaylistParams,
          headers: ifMatchHeaders,
          body: putBody,
          response: editAnswers(limits),
        },
      },
      async (request, reply) => {
        return sendEdit(
          editor,
          request,
          reply,
          (current) => applyMergePatch(current, request.body, limits),
          request.body.songIds.length,
        );
      },
    );

    app.post<{
      Params: Static<typeof PlaylistParams>;
      Headers: Static<typeof ifMatchHeaders>;
      Body: Static<typeof insertBody>;
    }>(
      `${path}/songs`,
      {
        onRequest: authenticate,
        schema: {
          operationId: op('addplaylistsongs'),
          summary: summary('Add songs to a playlist', 'POST /v3/playlist/{playlist-id}/songs'),
          tags,
          security: SECURITY,
          description:
            'Inserts the songs before `position` (0-based), or after the last song without one. Appends sent ' +
            'together all land, in some order.',
          params: PlaylistParams,
          headers: ifMatchHeaders,
          body: insertBody,
          response: editAnswers(limits),
        },
      },
      async (request, reply) => {
        const { songIds, position } = request.body;
        return sendEdit(
          editor,
          request,
          reply,
          (current) => insertSongs(current, songIds, position, limits),
          songIds.length,
        );
      },
    );
  }
}
