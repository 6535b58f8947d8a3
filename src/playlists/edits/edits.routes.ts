import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import { readWaiting, type WaitingReads } from '../../live/waiting.js';
import type { Limits } from '../../config.js';
import { expectedEtag, sendRevalidated } from '../../http/conditional.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  FORBIDDEN,
  GONE,
  NOT_FOUND,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  error,
  IF_NONE_MATCH_HEADER,
  notModified,
  revalidatedJson,
} from '../../http/responses.js';
import { ApiError, ErrorBody } from '../../http/errors.js';
import { routeWithPluralAlias, type TypedApp } from '../../http/routes.js';
import { editSchemas } from '../playlist-edit.operations.js';
import { PlaylistParams, PlaylistWithSongs } from '../playlist.schemas.js';
import { minimalSchema, PREFER_HEADER, sendWriteAnswer, writeAnswerDoc } from '../write-answer.http.js';
import type { EditsRequest, EntryEdits } from './edits.service.js';

export interface EntryEditRouteDeps {
  readonly edits: EntryEdits;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
  /** Reads that wait for a change (`Prefer: wait`). */
  readonly live: WaitingReads;
}

const LIBRARY = ['Your Library'];
const ENTRIES_ETAG =
  'Strong validator of the entries form to this caller (a compressed answer\'s names its coding: `"…-gzip"`), made ' +
  "as every form's is from the playlist's version, the catalog's and the caller's role: a merged edit's answer " +
  "carries it, and any form's current tag works in the `If-Match` of an edit.";
const conditionalHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String(IF_NONE_MATCH_HEADER['if-none-match'])),
});
/** Ops a merged edit takes at most. */
const MAX_OPS = 100;
/** Entries a page of `GET …/entries` holds at most. */
const MAX_PAGE = 1000;

const PAGE_ETAG =
  "Strong validator of this page of the entries form to this caller: made as the form's is, with the page's `limit` " +
  "and `after`, so each page's differs from the others' and from the whole list's, and changes with the playlist; " +
  "not one a write's `If-Match` takes.";
const NEXT_LINK = {
  Link: {
    type: 'string' as const,
    description:
      'With `limit` (1.9.0), when more entries follow: `<…/entries?limit=N&after=E>; rel="next"` (RFC 8288), on the path the request used, E being the last entry of this page.',
  },
};

const EntriesQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE,
      description:
        'Answer a page of at most this many entries (1.9.0; the `Link` header names the next page); without it, every entry',
    }),
  ),
  after: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 32,
      pattern: '^[A-Za-z0-9_-]+$',
      description:
        'With `limit`: the page starts after this entry, the last of the page before (absent: from the first). An entry the playlist no longer has is 409: start again from the first page',
      examples: ['e12'],
    }),
  ),
});

const entryRef = (description: string) =>
  Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_-]+$', description, examples: ['e12'] });

/** An entry as an op names it: its id, or `#` and a ref an earlier insert of the request declared. */
const opEntry = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 33,
    pattern: '^#?[A-Za-z0-9_-]+$',
    description: `${description}: an entry id, or \`#\` and a ref an earlier insert of this request declared`,
    examples: ['e12', '#n1'],
  });

/** A name an app gives an entry it inserts (`refs`), or a key of its requests. */
const appName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_-]+$', description, examples: ['n1'] });

export const PlaylistEntries = Type.Object(
  {
    id: Type.Integer({ description: "The playlist's id" }),
    name: Type.String(),
    version: Type.Integer({ description: "The playlist's version (counted up by each edit)" }),
    entries: Type.Array(
      Type.Object({
        entry: entryRef("The slot's entry: its id in this playlist, kept through every edit until it is removed"),
        id: Type.Integer({ description: "The song's id" }),
        title: Type.String(),
        artist: Type.String(),
        addedBy: Type.Union([Type.String(), Type.Null()], {
          description:
            "Who made the entry (1.9.0): a user name, kept through moves and restores; a smart playlist's entries are its owner's; null for a user removed since, or an entry made before 1.9.0",
        }),
        addedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
          description:
            'When the entry was made (1.9.0): RFC 3339, UTC, with milliseconds; null for an entry made before 1.9.0 that was no longer in the playlist then',
        }),
      }),
    ),
    // After the entries, what the playlist's JSON (`playlistwithsongs`) carries after its songs, under the same rules.
    rules: PlaylistWithSongs.properties.rules,
    rulesStatus: PlaylistWithSongs.properties.rulesStatus,
    owner: PlaylistWithSongs.properties.owner,
    role: PlaylistWithSongs.properties.role,
  },
  {
    $id: 'playlistentries',
    title: 'playlistentries',
    description:
      "A playlist with the entry of each slot; as in the playlist's JSON, a smart playlist's `rules` (and " +
      "`rulesStatus`) follow, and a member's answer ends with `owner` and `role`",
  },
);

export const EditResult = Type.Object(
  {
    applied: Type.Boolean(),
    entries: Type.Optional(
      Type.Array(entryRef('An entry the insert made'), {
        description: "An insert's entries, in the order of its songs (and of its `refs`)",
      }),
    ),
    reason: Type.Optional(
      Type.Union([Type.Literal('removed'), Type.Literal('conflict')], {
        description:
          'Why it was not applied: `removed`, the entry was removed already; `conflict`, the playlist was renamed meanwhile to another name',
      }),
    ),
    message: Type.Optional(Type.String({ description: 'The reason in a sentence' })),
  },
  { $id: 'editResult', title: 'editResult', description: 'What became of one op of a merged edit' },
);
const editResultRef = Type.Ref('editResult');

/** The error body, with the results of an atomic request that applied nothing. */
export const RefusedEdits = Type.Object(
  {
    errormsg: ErrorBody.properties.errormsg,
    logdata: ErrorBody.properties.logdata,
    results: Type.Optional(
      Type.Array(editResultRef, { description: 'With `atomic`: what would have become of each op' }),
    ),
  },
  {
    $id: 'refusedEdits',
    title: 'refusedEdits',
    description: 'The error body of a merged edit refused with 409, with `results` when `atomic` refused it',
  },
);

/** An op of a merged edit, as the request's schema lets it through (its members by kind are checked by `readOps`). */
export function editOpSchema(limits: Limits) {
  const schemas = editSchemas(limits);
  return Type.Object(
    {
      op: Type.Union([Type.Literal('insert'), Type.Literal('remove'), Type.Literal('move'), Type.Literal('rename')]),
      songIds: Type.Optional(
        Type.Array(schemas.songId, {
          minItems: 1,
          maxItems: limits.songsMax,
          description: 'insert: the songs, in order',
        }),
      ),
      refs: Type.Optional(
        Type.Array(appName('A name for the entry the insert makes for the song at this place'), {
          minItems: 1,
          maxItems: limits.songsMax,
          description:
            'insert (1.8.0): names for the entries it makes, one per song, that later ops of this request use as `#name` (`"after": "#n1"`); each declared once in a request',
        }),
      ),
      entry: Type.Optional(opEntry('remove, move: the entry')),
      name: Type.Optional({ ...schemas.name, description: 'rename: the new name' }),
      after: Type.Optional(
        Type.Union([opEntry('After this entry'), Type.Null()], {
          description: 'insert, move: after this entry (an entry id, or `#` and a ref); `null`: at the start',
        }),
      ),
      before: Type.Optional(opEntry('insert, move: before this entry')),
    },
    {
      $id: 'editOp',
      title: 'editOp',
      additionalProperties: false,
      description:
        '`{"op": "insert", "songIds": [..], "after": E, "refs"?: [..]}` (`"after": null` at the start, `"before": E`, or ' +
        'neither: at the end), `{"op": "remove", "entry": E}`, `{"op": "move", "entry": E, "after": E2}` (or ' +
        '`"before"`), `{"op": "rename", "name": "…"}`; E is an entry id or `#` and a ref',
    },
  );
}

/**
 * Entries and merged edits (API 1.6.0): `GET /v3/playlist/{id}/entries` and `POST /v3/playlist/{id}/edits`, at the
 * plural alias too.
 */
export function entryEditRoutes(app: TypedApp, deps: EntryEditRouteDeps): void {
  const { edits, limits, authenticate, live } = deps;
  const Body = Type.Object(
    {
      base: Type.Optional(
        Type.Integer({ minimum: 1, description: 'The version the ops were made on; the current one when left out' }),
      ),
      key: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description:
            'Makes the request safe to send again: the same key from the same user on this playlist, with the same ' +
            '`ops`, `base`, `atomic` and `seen`, answers what the first request answered and applies nothing again; with ' +
            `another request, 422. The newest ${limits.editKeysPerUser} keys of each user are kept, within the ` +
            "history's retention",
        }),
      ),
      atomic: Type.Optional(Type.Boolean({ description: 'Apply every op or none (409)', default: false })),
      seen: Type.Optional(
        Type.Array(
          Type.String({ minLength: 1, maxLength: 100, description: 'The key of an earlier request of yours' }),
          {
            maxItems: 100,
            description:
              'Keys of your earlier requests on this playlist whose answers your copy has taken in (1.8.0): what they wrote after `base` counts as known, not as another’s change, so a queue sent as several requests on the same `base`, each naming the ones before it, merges as the whole queue sent at once. A key that is not one of yours here is 422',
          },
        ),
      ),
      ops: Type.Array(Type.Ref('editOp'), { minItems: 1, maxItems: MAX_OPS }),
    },
    { additionalProperties: false },
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/entries',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylistentries',
        summary: "Get a playlist's entries",
        tags: LIBRARY,
        security: SECURITY,
        description:
          'The playlist with the entry of each slot: an id of its own, kept through every edit until the slot is ' +
          'removed, which merged edits (`POST …/edits`) name. With `limit`, a page of them: follow `Link` ' +
          '`rel="next"` to the end; each page carries the `version` it was read at, and a client whose pages ' +
          'carry different versions reads them again from the first.',
        params: PlaylistParams,
        querystring: EntriesQuery,
        headers: conditionalHeaders,
        response: {
          200: revalidatedJson(
            'The playlist with its entries; with `limit`, with those of the page only.',
            Type.Ref('playlistentries'),
            `${ENTRIES_ETAG} A page's: ${PAGE_ETAG}`,
            NEXT_LINK,
          ),
          304: notModified(
            'The entries (or the page) have not changed since the ETag sent in `If-None-Match`.',
            ENTRIES_ETAG,
            NEXT_LINK,
          ),
          400: BAD_REQUEST,
          404: NOT_FOUND,
          409: error(
            '`after` is not an entry of the playlist now (it was removed since the page before was read, or it never was one): read the pages again from the first.',
          ),
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { userId } = request.caller;
        const id = request.params.playlistId;
        const { limit, after } = request.query;
        if (limit === undefined) {
          if (after !== undefined)
            throw ApiError.badRequest('The "after" query parameter needs "limit": it starts a page.');
          const read = () => edits.entries(userId, id);
          return sendRevalidated(request, reply, await readWaiting(request, reply, live, read));
        }
        const read = () => edits.entriesPage(userId, id, limit, after);
        const page = await readWaiting(request, reply, live, read);
        if (page.next !== undefined) {
          const path = request.url.split('?')[0] ?? '/';
          const query = new URLSearchParams({ limit: String(limit), after: page.next });
          reply.header('link', `<${path}?${query.toString()}>; rel="next"`);
        }
        return sendRevalidated(request, reply, page);
      },
    },
    '',
  );

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/playlist/:playlistId/edits',
      onRequest: authenticate,
      schema: {
        operationId: 'editplaylistentries',
        summary: 'Edit a playlist by its entries, merged',
        tags: LIBRARY,
        security: SECURITY,
        description:
          'Inserts, removes and moves entries and renames the playlist, as made on version `base`, merged with ' +
          "what happened since: an anchor removed since still places the op where it stood, everyone's inserts " +
          'land, removing or moving an entry already removed is not applied (`removed`), and a rename is not ' +
          'applied when the name was changed since to another (`conflict`). What was applied is one revision. ' +
          '`If-Match` (412) for a client that wants no merge.',
        params: PlaylistParams,
        headers: Type.Object({
          'if-match': Type.Optional(
            Type.String({
              description:
                'Apply only if the playlist is still as this ETag describes it: the current tag of any of its forms ' +
                '(entries, JSON, a file, an earlier edit), compressed or not; `*`: any current version. Otherwise 412.',
            }),
          ),
          prefer: PREFER_HEADER,
        }),
        body: Body,
        response: {
          200: writeAnswerDoc(
            'The playlist as the edit left it, in its entries form (`GET …/entries`), and one result per op, in ' +
              'order; with `Prefer: return=minimal`, `{"version", "results"}`: the version the edit left instead ' +
              'of the playlist (the same `ETag`, no `Content-Location`).',
            Type.Object({ playlist: Type.Ref('playlistentries'), results: Type.Array(editResultRef) }),
            minimalSchema({ results: Type.Array(editResultRef) }),
            {
              ETag: {
                type: 'string' as const,
                description:
                  'The ETag of the entries form, as `GET …/entries` now answers it (304 to it in `If-None-Match`).',
              },
              'Content-Location': {
                type: 'string' as const,
                description:
                  'The entries form that `playlist` is: `/v3/playlist/{id}/entries` (not with `Prefer: return=minimal`).',
              },
            },
          ),
          400: BAD_REQUEST,
          403: FORBIDDEN,
          404: NOT_FOUND,
          409: {
            description: `With \`atomic\`, an op that does not apply (the body's \`results\` say which); or the edit would leave more than ${limits.songsMax} songs. Nothing was written.`,
            content: { 'application/json': { schema: Type.Ref('refusedEdits') } },
          },
          410: GONE,
          412: error(
            '`If-Match` names no current ETag of the playlist: nothing changed; the answer carries the current ETag.',
            {
              ETag: { type: 'string' as const, description: "The current ETag of the playlist's entries form." },
            },
          ),
          413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
          415: UNSUPPORTED_JSON_BODY,
          422: error(
            'A song id not in the catalog, an entry this playlist never had, a `key` sent before with another ' +
              'request, or a key in `seen` that is not one of yours on this playlist; `errormsg` says which. Nothing ' +
              'was written.',
          ),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { userId } = request.caller;
        const body = request.body as EditsRequest;
        const done = await edits.edit(
          userId,
          request.params.playlistId,
          body,
          expectedEtag(request.headers['if-match']),
        );
        reply.header('cache-control', 'no-store');
        const entries = `/v3/playlist/${request.params.playlistId}/entries`;
        return sendWriteAnswer(request, reply, done, { 'content-location': entries });
      },
    },
    '',
  );
}
