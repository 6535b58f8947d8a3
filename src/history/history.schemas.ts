import { Type, type Static } from '@sinclair/typebox';
import type { Limits } from '../config.js';
import { Id } from '../http/schemas.js';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import { CHANGES, FEED_CHANGES, type ChangeKind, type FeedChange as FeedChangeKind } from '../domain/change-kinds.js';

const Change = Type.Unsafe<ChangeKind>({
  type: 'string',
  enum: [...CHANGES],
  description: 'What the revision did',
});
const FeedChange = Type.Unsafe<FeedChangeKind>({
  type: 'string',
  enum: [...FEED_CHANGES],
  description:
    "What happened: a revision (`create`, `edit`, `restore`, `delete`, or `refresh`: a smart playlist's songs followed its rules), or the playlist was shared with the caller or their role changed (`shared`), or it no longer is (`unshared`)",
});
const At = Type.String({ description: 'When it was written: RFC 3339, UTC, with milliseconds' });

export const Revision = Type.Object(
  {
    version: Type.Integer({
      minimum: 1,
      description: 'The version it made: 1 for the create, one more for each after',
    }),
    at: At,
    by: Type.String({ description: 'The name of the user who made it' }),
    change: Change,
    name: Type.String({ description: "The playlist's name after it" }),
    songCount: Type.Integer({ minimum: 0, description: 'How many songs the playlist held after it' }),
  },
  { $id: 'revision', title: 'revision' },
);
export type Revision = Static<typeof Revision>;

export const VersionParams = Type.Object({
  playlistId: PlaylistParams.properties.playlistId,
  version: Id('A version of the playlist'),
});

export const RestoreBody = Type.Object(
  { version: Id('The version whose name and songs the playlist takes again') },
  { description: 'Which version to restore' },
);

export function versionsQuery(limits: Limits) {
  return Type.Object({
    limit: Type.Integer({
      minimum: 1,
      maximum: limits.pageMax,
      default: limits.pageDefault,
      description: 'Number of revisions to return',
    }),
    offset: Type.Integer({
      minimum: 0,
      maximum: 2 ** 31 - 1,
      default: 0,
      description: 'Index of the first revision to return, newest first',
    }),
  });
}

export const ChangesQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      maxLength: 512,
      description:
        'The `next` token of the last answer; without it, every playlist the caller has now; `now` (1.8.0), only what changes from now on',
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Most entries to return' }),
  types: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        'The kinds of items to list (1.8.0), a comma list: `playlist` (the default: the changes of playlists and memberships), `catalog` (one item per catalog import that changed songs) and `library` (1.10.0: one item with the version of your tree of folders when it changed). Send the same with every call from one token',
    }),
  ),
  wait: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 60,
      description:
        'Seconds to wait (1.8.0): when there is nothing after `since` yet, the answer waits until a change this feed would list commits on any instance (answered at once), or this long (then no changes, and a `next` to wait from)',
    }),
  ),
});

export const ChangesStreamQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      maxLength: 512,
      description:
        'The token to start after (a `next`); without it, every playlist the caller has first; `now`, from now',
    }),
  ),
  ticket: Type.Optional(
    Type.String({ maxLength: 64, description: 'A ticket from `POST /v3/changes/tickets`, instead of a credential' }),
  ),
  types: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        'The kinds of items to list (1.8.0), a comma list: `playlist` (the default: the changes of playlists and memberships), `catalog` (one item per catalog import that changed songs) and `library` (1.10.0: one item with the version of your tree of folders when it changed). Send the same with every call from one token',
    }),
  ),
});

export const StreamTicket = Type.Object(
  {
    ticket: Type.String({ description: 'Send it once, as `?ticket=` of `GET /v3/changes/stream`' }),
    expiresAt: Type.String({ format: 'date-time', description: 'When it can no longer be used (60 s from now)' }),
  },
  { additionalProperties: false },
);

export const ChangesStreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ maxLength: 512, description: 'The `id` of the last event received: resumes after it, over `since`' }),
  ),
});

export const ChangeEntry = Type.Object(
  {
    id: Type.Integer({ minimum: 1, description: 'The playlist id' }),
    version: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Its version after the change (none for a delete or `unshared`)' }),
    ),
    change: FeedChange,
    at: At,
    by: Type.Optional(
      Type.String({
        description:
          'Who made the change (1.8.0): the name of the user, as a version’s `by`; on changes of a playlist, not on `shared` or `unshared` nor in the list of what the caller has',
      }),
    ),
  },
  { $id: 'change', title: 'change' },
);

export const CatalogChangeEntry = Type.Object(
  {
    catalog: Type.Integer({
      minimum: 0,
      description:
        'The catalog version the import reached: `GET /v3/song?changedSince=` the last one you had lists the songs it changed',
    }),
    change: Type.Literal('catalog'),
    at: At,
  },
  {
    $id: 'catalogChange',
    title: 'catalogChange',
    description:
      'A catalog import that changed songs (1.8.0, with `types=catalog`); the first answer without `since` carries the catalog version then',
  },
);

export const LibraryChangeEntry = Type.Object(
  {
    library: Type.Integer({
      minimum: 0,
      description:
        'The version of your tree of folders now: read `GET /v3/library` again when it is not the one you have',
    }),
    change: Type.Literal('library'),
    at: At,
  },
  {
    $id: 'libraryChange',
    title: 'libraryChange',
    description:
      'Your tree of folders changed (1.10.0, with `types=library`): at most one per answer, the latest; a feed from the start (without `since`) carries the version it is at once',
  },
);

export const ChangesPage = Type.Object(
  {
    changes: Type.Array(Type.Union([Type.Ref('change'), Type.Ref('catalogChange'), Type.Ref('libraryChange')]), {
      description:
        'Oldest first; a playlist changed several times may come once, its latest; several imports, the last',
    }),
    next: Type.String({ description: 'The token to send as `since` next time' }),
    more: Type.Boolean({ description: 'true: there is more now; call again with `next` at once' }),
  },
  { title: 'changes' },
);

/** What `GET …/diff` answers: the JSON Patch, or (1.8.0) the ops of a merged edit by entries. */
export const DIFF_FORMS = ['patch', 'entries'] as const;
export type DiffForm = (typeof DIFF_FORMS)[number];

export const DiffQuery = Type.Object({
  from: Id('The version the diff starts from'),
  to: Type.Optional(Id('The version the diff leads to; the current one when left out')),
  form: Type.Unsafe<DiffForm>({
    type: 'string',
    enum: [...DIFF_FORMS],
    default: 'patch',
    description:
      '`patch`: the RFC 6902 JSON Patch over `{"name", "songs"}`; `entries` (1.8.0): the ops of a merged edit (`POST …/edits`), with entry ids',
  }),
});

const EntryId = (description: string) =>
  Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_-]+$', description, examples: ['e12'] });
const After = (description: string) =>
  Type.Union([EntryId(description), Type.Null()], { description: `${description}; \`null\`: at the start` });

export const EntryDiffOp = Type.Union(
  [
    Type.Object(
      {
        op: Type.Literal('insert'),
        songIds: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, description: 'The songs, in order' }),
        after: After('After this entry, one both versions hold'),
        entries: Type.Array(EntryId('An entry of `to`'), {
          minItems: 1,
          description:
            'The entries of `to` these songs are, in order; left out when the op is sent to `POST …/edits`, where the insert makes entries of its own',
        }),
      },
      { additionalProperties: false, title: 'insert' },
    ),
    Type.Object(
      { op: Type.Literal('remove'), entry: EntryId('An entry of `from` that `to` does not hold') },
      { additionalProperties: false, title: 'remove' },
    ),
    Type.Object(
      {
        op: Type.Literal('move'),
        entry: EntryId('An entry both versions hold'),
        after: After('Right after this entry, where the ops before have put it'),
      },
      { additionalProperties: false, title: 'move' },
    ),
    Type.Object(
      { op: Type.Literal('rename'), name: Type.String({ description: 'The name of `to`' }) },
      { additionalProperties: false, title: 'rename' },
    ),
  ],
  {
    $id: 'entryDiffOp',
    title: 'entryDiffOp',
    description:
      'An op of a merged edit (`POST …/edits`), with the entries it stands for: `{"op": "insert", "songIds", "after", "entries"}`, `{"op": "remove", "entry"}`, `{"op": "move", "entry", "after"}` or `{"op": "rename", "name"}`',
  },
);

export const EntriesDiff = Type.Object(
  {
    from: Type.Integer({ minimum: 1, description: 'The version the ops start from' }),
    to: Type.Integer({ minimum: 1, description: 'The version they lead to' }),
    ops: Type.Array(Type.Ref('entryDiffOp'), {
      description:
        "In order: the rename, the removes (in `from`'s order), the moves, then the inserts (in `to`'s order); `[]` when the entries and the name are the same",
    }),
  },
  {
    $id: 'entriesDiff',
    title: 'entriesDiff',
    description:
      "The ops of a merged edit that turn version `from`'s entries into version `to`'s: applied in order to `from`'s entries, they give `to`'s, each insert's `entries` included",
  },
);
