import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Insertable, type Kysely } from 'kysely';
import { compiledOnce, compiledRows } from '../../db/compiled.js';
import { lockingRows, type Dialect } from '../../db/database.js';
import { catalogVersion } from '../../db/playlist-changes.js';
import { prepared } from '../../db/postgres.js';
import type { Database, PlaylistRevisionTable } from '../../db/schema.js';
import { joinIds, recordDelete } from '../../history/revision.repository.js';
import { libraryChanged } from '../../library/library.repository.js';
import { replacePlaylistDocument } from '../../search/search.repository.js';
import type { StoredEntry } from '../entry-order.js';

/**
 * The statements of the playlist store (store.ts), the one module that writes playlists: their rows,
 * entries, revisions and search documents. Nothing here decides; the store calls these inside its transaction.
 */

type Q = Kysely<Database>;

/** Rows per INSERT statement: well under SQLite's limit of bound variables. */
const INSERT_CHUNK = 250;

/**
 * How long an edit on PostgreSQL waits for another instance's edit of the same playlist before a 503: the write's
 * `lockWaitMs` (see `playlistForWrite`).
 */
export const EDIT_LOCK_WAIT_MS = 1000;

/** A playlist as a write starts from it. */
export interface PlaylistForWrite {
  readonly ownerId: number;
  readonly name: string;
  readonly version: number;
  /** The catalog's version, read with the row (before the songs the edit reads). */
  readonly catalogVersion: number;
  readonly entries: readonly StoredEntry[];
  readonly nextEntry: number;
  /** The `chain` of its current revision (see history/revision.repository.ts), null when it has none. */
  readonly revisionChain: number | null;
  /** A smart playlist's rules as stored (JSON text); null for a hand-made playlist. */
  readonly rules: string | null;
  /** What a smart playlist's answers say beside its rules (JSON text); null for nothing. */
  readonly rulesStatus: string | null;
}

/** How many songs the playlist holds (0 when it is gone). */
export async function playlistLength(q: Q, id: number): Promise<number> {
  return Number((await countEntries(q, { id })).rows[0]?.songs ?? 0);
}

/**
 * The songs of the playlist `p`: what its current version's revision recorded, one row by its key; counted only when
 * that revision is not kept.
 */
export const songCount = sql<number | string>`coalesce(
  (SELECT r.song_count FROM playlist_revisions r WHERE r.playlist_id = p.id AND r.version = p.version),
  (SELECT count(*) FROM playlist_songs s WHERE s.playlist_id = p.id))`;

const countEntries = compiledOnce(
  'count-entries',
  (p: { id: number }) => (q) => q.selectFrom('playlists as p').select(songCount.as('songs')).where('p.id', '=', p.id),
);

const rowForWrite = (q: Q, id: number) =>
  q
    .selectFrom('playlists as p')
    .select([
      'p.owner_id',
      'p.name',
      'p.version',
      'p.next_entry',
      'p.rules',
      'p.rules_status',
      catalogVersion,
      (eb) =>
        eb
          .selectFrom('playlist_revisions as r')
          .select('r.chain')
          .whereRef('r.playlist_id', '=', 'p.id')
          .whereRef('r.version', '=', 'p.version')
          .as('chain'),
    ])
    .where('p.id', '=', id);

/** The row as `playlistForWrite` reads it, compiled once for each dialect (PostgreSQL's locks it). */
const readRowForWrite = {
  sqlite: compiledOnce('row-for-write', (p: { id: number }) => (q) => lockingRows(rowForWrite(q, p.id), 'sqlite')),
  postgres: compiledOnce(
    'row-for-write-locked',
    (p: { id: number }) => (q) => lockingRows(rowForWrite(q, p.id), 'postgres'),
  ),
};

const readEntries = compiledOnce(
  'read-entries',
  (p: { id: number }) => (q) =>
    q
      .selectFrom('playlist_songs')
      .select(['entry', 'song_id', 'ord'])
      .where('playlist_id', '=', p.id)
      .orderBy('ord')
      .orderBy('entry'),
);

/** PostgreSQL: the row as `rowWithEntries` reads it. */
interface LockedRow {
  readonly owner_id: number;
  readonly name: string;
  readonly version: number | string;
  readonly next_entry: number | string;
  readonly rules: string | null;
  readonly rules_status: string | null;
  readonly catalog_version: number | string;
  readonly chain: number | null;
  /** Locked: the version the statement's snapshot holds, which its other reads were made at. */
  readonly seen_version?: number | string | null;
  /** The entries in order, as [entry, song id, order key]; null when they were not read (as kept). */
  readonly entries: readonly (readonly [number, number, string])[] | null;
}

/**
 * The entries of a playlist at one version, as this process last wrote or read them: a write that finds the playlist
 * still at that version reads no entries (see the store's `kept`).
 */
export interface KeptEntries {
  readonly version: number;
  readonly entries: readonly StoredEntry[];
}

/**
 * PostgreSQL: the row with its entries and its current revision's chain, in one statement and one round trip (the
 * entries left out when it is still at `kept`'s version); `lock`, locked until the transaction ends. A lock that was
 * waited for hands over the row as the transaction that held it left it, but the statement's other reads keep the
 * snapshot it started with: a locked read's `seen_version` tells the two apart.
 */
async function rowWithEntries(q: Q, id: number, lock: boolean, kept: number): Promise<LockedRow | undefined> {
  const { rows } = await sql<LockedRow>`${prepared(lock ? 'row-for-write-with-entries' : 'row-with-entries')}
    SELECT p.owner_id, p.name, p.version, p.next_entry, p.rules, p.rules_status,
      (SELECT version FROM catalog_version) AS catalog_version,
      (SELECT r.chain FROM playlist_revisions r WHERE r.playlist_id = p.id AND r.version = p.version) AS chain,
      ${lock ? sql`(SELECT s.version FROM playlists s WHERE s.id = p.id) AS seen_version,` : sql``}
      CASE WHEN p.version = ${kept}::bigint THEN NULL ELSE
        (SELECT coalesce(json_agg(json_build_array(e.entry, e.song_id, e.ord) ORDER BY e.ord, e.entry), '[]')
        FROM playlist_songs e WHERE e.playlist_id = p.id) END AS entries
    FROM playlists p WHERE p.id = ${id}${lock ? sql` FOR UPDATE OF p` : sql``}`.execute(q);
  return rows[0];
}

const fromRowWithEntries = (row: LockedRow, kept: KeptEntries | undefined): PlaylistForWrite => ({
  ownerId: row.owner_id,
  name: row.name,
  version: Number(row.version),
  nextEntry: Number(row.next_entry),
  catalogVersion: Number(row.catalog_version),
  entries: row.entries === null ? kept!.entries : row.entries.map(([entry, songId, ord]) => ({ entry, songId, ord })),
  revisionChain: row.chain,
  rules: row.rules,
  rulesStatus: row.rules_status,
});

/**
 * PostgreSQL: the playlist with its entries in order, as one statement's snapshot holds it, with no transaction and
 * no lock; undefined when it is gone. What an edit decides from it is saved only if the playlist is still at this
 * version (`saveChangesAtOnce`).
 */
export async function playlistAsItIs(q: Q, id: number, kept?: KeptEntries): Promise<PlaylistForWrite | undefined> {
  const row = await rowWithEntries(q, id, false, kept?.version ?? -1);
  return row === undefined ? undefined : fromRowWithEntries(row, kept);
}

/**
 * The playlist with its entries in order, read inside the write's transaction; undefined, with none of its entries
 * read, when it is gone. Its entries are `kept`'s when it is still at `kept`'s version, and are not read then. On
 * PostgreSQL the row stays locked until the transaction ends, so that two writes of one playlist run one after the
 * other and the second sees the first (this process queues its own edits of a playlist before they take a
 * connection; another instance's edit waits EDIT_LOCK_WAIT_MS at most, the write's `lockWaitMs`, then 503). SQLite's
 * writes already run one at a time on the writer's connection.
 */
export async function playlistForWrite(
  trx: Q,
  dialect: Dialect,
  id: number,
  kept?: KeptEntries,
): Promise<PlaylistForWrite | undefined> {
  if (dialect === 'postgres') {
    const locked = await rowWithEntries(trx, id, true, kept?.version ?? -1);
    if (locked === undefined) return undefined;
    // Read at the version it is locked at: nobody changed it between the statement's snapshot and its lock.
    if (locked.seen_version != null && Number(locked.seen_version) === Number(locked.version)) {
      return fromRowWithEntries(locked, kept);
    }
    // Another instance's edit committed while this one waited for the lock: read it all again, after the lock.
  }
  const row = (await readRowForWrite[dialect](trx, { id })).rows[0];
  if (row === undefined) return undefined;
  const version = Number(row.version);
  // A statement of its own: on PostgreSQL, the entries another instance's edit committed are read after the lock.
  const entries =
    kept?.version === version
      ? kept.entries
      : (await readEntries(trx, { id })).rows.map((e) => ({ entry: Number(e.entry), songId: e.song_id, ord: e.ord }));
  return {
    ownerId: row.owner_id,
    name: row.name,
    version,
    nextEntry: Number(row.next_entry),
    catalogVersion: Number(row.catalog_version),
    entries,
    revisionChain: row.chain,
    rules: row.rules,
    rulesStatus: row.rules_status,
  };
}

/** What a write changes: entries removed, entries inserted or given a new key, the row's name, version, next entry. */
export interface RowChanges {
  readonly deleted: readonly number[];
  readonly written: readonly StoredEntry[];
  /** The entries this write makes (new ids), whose origin it records: `by` at `at`. */
  readonly made: readonly number[];
  readonly by: number;
  readonly at: number;
  readonly name: string;
  readonly version: number;
  readonly nextEntry: number;
  readonly ownerId: number;
  /** Whether the name changes: the version of the trees of its owner and members changes too (library/). */
  readonly renamed: boolean;
  /** The search document after the write; undefined when it is the one stored already. */
  readonly doc: string | undefined;
  readonly revision: Insertable<PlaylistRevisionTable>;
  /** The rules the playlist has after the write (JSON text), null for none. */
  readonly rules: string | null;
  /** What its answers say beside its rules after the write (JSON text), null for nothing. */
  readonly rulesStatus: string | null;
}

/** A smart playlist's `rules_status` (in the transaction that writes the version it belongs to). */
export async function writeRulesStatus(trx: Q, id: number, rulesStatus: string | null): Promise<void> {
  await trx.updateTable('playlists').set({ rules_status: rulesStatus }).where('id', '=', id).execute();
}

const deleteEntries = compiledRows(
  'delete-entries',
  (p: { id: number }, rows: readonly { entry: number }[]) => (q) =>
    q
      .deleteFrom('playlist_songs')
      .where('playlist_id', '=', p.id)
      .where(
        'entry',
        'in',
        rows.map((row) => row.entry),
      ),
);

/**
 * SQLite: the row's new name, version, next entry and rules; answers the smart playlists whose rules name it, as a
 * list of ids (`group_concat`).
 */
const updateRow = compiledOnce(
  'update-playlist-row',
  (p: { id: number; name: string; version: number; nextEntry: number; rules: string | null }) => (q) =>
    q
      .updateTable('playlists')
      .set({ name: p.name, version: p.version, next_entry: p.nextEntry, rules: p.rules })
      .where('id', '=', p.id)
      .returning((eb) =>
        eb
          .selectFrom('smart_sources')
          .select((s) => s.fn<string | null>('group_concat', ['playlist_id']).as('ids'))
          .where('source_id', '=', p.id)
          .as('dependents'),
      ),
);

/**
 * SQLite: the entries removed and written (an upsert by entry, a statement per 250 rows, the event loop served
 * between two), the row, the revision and the search document. Answers the smart playlists whose rules name the
 * playlist (`smart_sources`), read by the row's update, for the store's listeners.
 */
export async function saveChanges(trx: Q, id: number, changes: RowChanges): Promise<number[]> {
  for (let start = 0; start < changes.deleted.length; start += INSERT_CHUNK) {
    if (start > 0) await nextTurn();
    const chunk = changes.deleted.slice(start, start + INSERT_CHUNK).map((entry) => ({ entry }));
    await deleteEntries(trx, { id }, chunk);
  }
  await writeEntries(trx, id, changes.written);
  await writeOrigins(trx, id, changes.made, changes.by, changes.at);
  const { rows } = await updateRow(trx, {
    id,
    name: changes.name,
    version: changes.version,
    nextEntry: changes.nextEntry,
    rules: changes.rules,
  });
  await insertRevision(trx, changes.revision);
  if (changes.doc !== undefined) await replacePlaylistDocument(trx, changes.ownerId, id, changes.doc);
  if (changes.renamed) await libraryChanged(trx, 'sqlite', { users: [changes.ownerId], membersOf: id });
  const ids = rows[0]?.dependents;
  return ids == null || ids === ''
    ? []
    : ids
        .split(',')
        .map(Number)
        .sort((a, b) => a - b);
}

const upsertEntries = compiledRows(
  'upsert-entries',
  (p: { id: number }, rows: readonly StoredEntry[]) => (q) =>
    q
      .insertInto('playlist_songs')
      .values(rows.map((row) => ({ playlist_id: p.id, entry: row.entry, ord: row.ord, song_id: row.songId })))
      .onConflict((oc) => oc.columns(['playlist_id', 'entry']).doUpdateSet((eb) => ({ ord: eb.ref('excluded.ord') }))),
);

const insertOrigins = compiledRows(
  'insert-origins',
  (p: { id: number; by: number; at: number }, rows: readonly { entry: number }[]) => (q) =>
    q
      .insertInto('playlist_entry_origins')
      .values(rows.map((row) => ({ playlist_id: p.id, entry: row.entry, added_by: p.by, added_at: p.at })))
      .onConflict((oc) => oc.columns(['playlist_id', 'entry']).doNothing()),
);

/**
 * The origins of entries made by `by` at `at` (a statement per 250 rows): an entry that has one already (given back
 * by a restore) keeps its own.
 */
export async function writeOrigins(trx: Q, id: number, entries: readonly number[], by: number, at: number) {
  for (let start = 0; start < entries.length; start += INSERT_CHUNK) {
    if (start > 0) await nextTurn();
    const chunk = entries.slice(start, start + INSERT_CHUNK).map((entry) => ({ entry }));
    await insertOrigins(trx, { id, by, at }, chunk);
  }
}

/** Entries inserted, or given a new key when there: a statement per 250 rows, the event loop served between two. */
export async function writeEntries(trx: Q, id: number, written: readonly StoredEntry[]): Promise<void> {
  for (let start = 0; start < written.length; start += INSERT_CHUNK) {
    if (start > 0) await nextTurn();
    await upsertEntries(trx, { id }, written.slice(start, start + INSERT_CHUNK));
  }
}

/**
 * `saveChanges` on PostgreSQL, in one statement, made on the playlist at version `from`: entries removed and written
 * (an upsert by entry, so that the delete and the writes touch different rows whatever order they run in), the row's
 * name, version and next entry, the revision and the search document: one round trip where a change at the front
 * took five (bench/results/HISTORY.md, "Edits and members' lists"); a rename counts up the version of the trees of its
 * owner and members (as library.repository.ts's `libraryChanged`), after taking the owner's row (`owner`), which the
 * statement's trigger (`count_library_version`) takes at its end: every write takes the user's row before their tree's
 * version, so that two never deadlock. It writes only when the playlist
 * is still at `from` and no other transaction holds its row (`locked`, which never waits: the row a transaction of
 * this edit's own locked is its own); undefined when it wrote nothing. Otherwise it answers the smart playlists whose
 * rules name the playlist (`smart_sources`), which the store's listeners refresh, so that finding them costs no round
 * trip.
 */
export async function saveChangesAtOnce(
  q: Q,
  id: number,
  from: number,
  changes: RowChanges,
): Promise<number[] | undefined> {
  const r = changes.revision;
  const { written } = changes;
  const { rows } = await sql<{ saved: number; dependents: (number | string)[] }>`${prepared('playlist-edit')}
    WITH locked AS MATERIALIZED (
      SELECT id FROM playlists WHERE id = ${id} AND version = ${from} FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM playlist_songs
      WHERE playlist_id = (SELECT id FROM locked) AND entry = ANY(${changes.deleted}::bigint[])
    ), entries AS (
      INSERT INTO playlist_songs (playlist_id, entry, ord, song_id)
      SELECT locked.id, w.entry, w.ord, w.song_id
      FROM locked, unnest(${written.map((w) => w.entry)}::bigint[], ${written.map((w) => w.ord)}::text[],
        ${written.map((w) => w.songId)}::bigint[]) AS w (entry, ord, song_id)
      ON CONFLICT (playlist_id, entry) DO UPDATE SET ord = excluded.ord
    ), origins AS (
      INSERT INTO playlist_entry_origins (playlist_id, entry, added_by, added_at)
      SELECT locked.id, m.entry, ${changes.by}, ${changes.at}
      FROM locked, unnest(${changes.made}::bigint[]) AS m (entry)
      ON CONFLICT (playlist_id, entry) DO NOTHING
    ), revision AS (
      INSERT INTO playlist_revisions (playlist_id, owner_id, version, at, by_id, change, name, song_count, splice_at,
        splice_deleted, songs, entries, chain, rules)
      SELECT ${r.playlist_id}, ${r.owner_id}, ${r.version}, ${r.at}, ${r.by_id}, ${r.change}, ${r.name},
        ${r.song_count}, ${r.splice_at}::integer, ${r.splice_deleted}::integer, ${r.songs}, ${r.entries}, ${r.chain},
        ${r.rules ?? null}::text
      FROM locked
    ), document AS (
      UPDATE playlist_documents SET doc = ${changes.doc ?? ''}
      WHERE owner_id = ${changes.ownerId} AND playlist_id = (SELECT id FROM locked) AND ${changes.doc !== undefined}
    ), saved AS (
      UPDATE playlists SET name = ${changes.name}, version = ${changes.version}, next_entry = ${changes.nextEntry},
        rules = ${changes.rules}::text
      WHERE id = (SELECT id FROM locked)
      RETURNING id
    ), owner AS MATERIALIZED (
      SELECT id FROM users WHERE id = ${changes.ownerId} AND ${changes.renamed} AND EXISTS (SELECT 1 FROM locked)
      FOR UPDATE
    ), library AS (
      INSERT INTO library_changes (user_id, seq, at)
      SELECT x.user_id, nextval('library_changes_seq'), ${changes.at}
      FROM (SELECT id AS user_id FROM owner
        UNION SELECT user_id FROM playlist_members WHERE playlist_id = ${id} AND EXISTS (SELECT 1 FROM owner)) x
      ORDER BY x.user_id
      ON CONFLICT (user_id) DO UPDATE SET seq = nextval('library_changes_seq'),
        xid = pg_current_xact_id()::text::bigint, at = excluded.at
    )
    SELECT (SELECT count(*) FROM saved)::int AS saved,
      ARRAY(SELECT playlist_id FROM smart_sources WHERE source_id = ${id} ORDER BY playlist_id) AS dependents`.execute(
    q,
  );
  const row = rows[0];
  return row === undefined || row.saved === 0 ? undefined : row.dependents.map(Number);
}

/** What a new playlist is made of: its owner, name, entries (in order, with their keys) and search document. */
export interface NewPlaylistRow {
  readonly ownerId: number;
  readonly name: string;
  readonly entries: readonly StoredEntry[];
  readonly doc: string;
  readonly now: number;
  /** A smart playlist's rules (JSON text); null for a hand-made one. */
  readonly rules: string | null;
  /** The playlists those rules name (`smart_sources`), each once; none for a hand-made one. */
  readonly sources: readonly number[];
}

const insertRow = compiledOnce(
  'insert-playlist-row',
  (p: { ownerId: number; name: string; now: number; nextEntry: number; rules: string | null }) => (q) =>
    q
      .insertInto('playlists')
      .values({ owner_id: p.ownerId, name: p.name, created_at: p.now, next_entry: p.nextEntry, rules: p.rules })
      .returning('id'),
);

/** SQLite: the playlist's row; its entries, revision and document are written by the store after it. */
export async function insertPlaylist(trx: Q, row: NewPlaylistRow): Promise<number> {
  const { rows } = await insertRow(trx, {
    ownerId: row.ownerId,
    name: row.name,
    now: row.now,
    nextEntry: row.entries.length + 1,
    rules: row.rules,
  });
  return rows[0]!.id;
}

type RevisionRow = Insertable<PlaylistRevisionTable>;

const insertRevisionRow = compiledOnce(
  'insert-revision',
  (r: Required<Omit<RevisionRow, 'seq' | 'xid'>>) => (q) =>
    q.insertInto('playlist_revisions').values({
      playlist_id: r.playlist_id,
      owner_id: r.owner_id,
      version: r.version,
      at: r.at,
      by_id: r.by_id,
      change: r.change,
      name: r.name,
      song_count: r.song_count,
      splice_at: r.splice_at,
      splice_deleted: r.splice_deleted,
      songs: r.songs,
      entries: r.entries,
      chain: r.chain,
      rules: r.rules,
    }),
);

/** A revision row, as the store made it. */
export async function insertRevision(trx: Q, revision: RevisionRow): Promise<void> {
  await insertRevisionRow(trx, {
    ...revision,
    splice_at: revision.splice_at ?? null,
    splice_deleted: revision.splice_deleted ?? null,
    entries: revision.entries ?? '',
    rules: revision.rules ?? null,
  });
}

/**
 * PostgreSQL: a whole create in one statement, and so one round trip and its own transaction: the owner's slot
 * under the quota, the playlist's row, its entries, its first revision (a snapshot of its slots, as
 * `revisionRow` makes one for a create), its search document, for a smart playlist the playlists its rules name, and
 * the owner's tree's version (as library.repository.ts's `libraryChanged` writes it). Every write takes the user's row
 * before their tree's version, so that two never deadlock: here the version's row is written from `playlist`, which
 * is made from `slot`, the user's row, so PostgreSQL cannot write it first; the statement's trigger
 * (`count_library_version`) takes the user's row again at its end. Undefined, with nothing written, when the owner
 * has `quota` playlists already. Seven round trips (`BEGIN`, five statements, `COMMIT`) answered 0.63 as many
 * creates a second (bench/results/HISTORY.md).
 */
export async function createPlaylistAtOnce(q: Q, playlist: NewPlaylistRow, quota: number): Promise<number | undefined> {
  const { ownerId, name, entries, doc, now, rules, sources } = playlist;
  const songIds = entries.map((e) => e.songId);
  const result = await sql<{ id: number | string }>`${prepared('playlist-create')}
    WITH slot AS (
      UPDATE users SET playlist_count = playlist_count + 1
      WHERE id = ${ownerId} AND playlist_count < ${quota}
      RETURNING id
    ), playlist AS (
      INSERT INTO playlists (owner_id, name, created_at, next_entry, rules)
      SELECT id, ${name}, ${now}, ${entries.length + 1}, ${rules}::text FROM slot RETURNING id
    ), entries AS (
      INSERT INTO playlist_songs (playlist_id, entry, ord, song_id)
      SELECT playlist.id, e.entry, e.ord, e.song_id
      FROM playlist, unnest(${entries.map((e) => e.entry)}::bigint[], ${entries.map((e) => e.ord)}::text[],
        ${songIds}::bigint[]) AS e (entry, ord, song_id)
    ), origins AS (
      INSERT INTO playlist_entry_origins (playlist_id, entry, added_by, added_at)
      SELECT playlist.id, e.entry, ${ownerId}, ${now} FROM playlist, unnest(${entries.map((e) => e.entry)}::bigint[]) AS e (entry)
    ), revision AS (
      INSERT INTO playlist_revisions (playlist_id, owner_id, version, at, by_id, change, name, song_count, splice_at,
        splice_deleted, songs, entries, chain, rules)
      SELECT id, ${ownerId}, 1, ${now}, ${ownerId}, 'create', ${name}, ${songIds.length}, NULL, NULL,
        ${joinIds(songIds)}, ${joinIds(entries.map((e) => e.entry))}, 0, ${rules}::text
      FROM playlist
    ), document AS (
      INSERT INTO playlist_documents (owner_id, playlist_id, doc) SELECT ${ownerId}, id, ${doc} FROM playlist
    ), sources AS (
      INSERT INTO smart_sources (source_id, playlist_id)
      SELECT s.source_id, playlist.id FROM playlist, unnest(${sources}::bigint[]) AS s (source_id)
    ), library AS (
      INSERT INTO library_changes (user_id, seq, at)
      SELECT ${ownerId}, nextval('library_changes_seq'), ${now} FROM playlist
      ON CONFLICT (user_id) DO UPDATE SET seq = nextval('library_changes_seq'),
        xid = pg_current_xact_id()::text::bigint, at = excluded.at
    )
    SELECT id FROM playlist`.execute(q);
  const row = result.rows[0];
  return row === undefined ? undefined : Number(row.id);
}

/**
 * Deletes the playlist (its entries and search document go with it) and records the deletion with its owner, who is
 * answered 410 from then on, and its revision; false when it was already gone.
 */
export async function deletePlaylist(trx: Q, id: number, ownerId: number, now: number): Promise<boolean> {
  const deleted = await trx
    .deleteFrom('playlists')
    .where('id', '=', id)
    .returning(['version', 'name', 'next_entry', 'rules'])
    .executeTakeFirst();
  if (deleted === undefined) return false;
  await trx
    .insertInto('deleted_playlists')
    .values({
      id,
      owner_id: ownerId,
      deleted_at: now,
      next_entry: Number(deleted.next_entry),
      rules: deleted.rules,
    })
    .execute();
  const version = Number(deleted.version) + 1;
  await recordDelete(trx, { playlistId: id, ownerId, byId: ownerId, version, name: deleted.name, at: now });
  return true;
}

/**
 * Writes a deleted playlist's row back under its id, at `version`, with the rules of the version it brings back (null
 * for none), and forgets its delete (its entries, search document and revision are written beside it).
 */
export async function undeletePlaylist(
  trx: Q,
  row: {
    id: number;
    ownerId: number;
    name: string;
    now: number;
    version: number;
    nextEntry: number;
    rules: string | null;
  },
): Promise<void> {
  const { rules } = row;
  await trx
    .insertInto('playlists')
    .values({
      id: row.id,
      owner_id: row.ownerId,
      name: row.name,
      created_at: row.now,
      version: row.version,
      next_entry: row.nextEntry,
      rules,
    })
    .execute();
  await trx.deleteFrom('deleted_playlists').where('id', '=', row.id).execute();
}
