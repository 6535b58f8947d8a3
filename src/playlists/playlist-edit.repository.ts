import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Insertable, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import { prepared } from '../db/postgres.js';
import type { Database, PlaylistRevisionTable } from '../db/schema.js';
import { revisionRow } from '../history/revision.repository.js';
import { replacePlaylistDocument } from '../search/playlist-search.js';
import { INSERT_CHUNK } from './playlist.rules.js';

type Q = Kysely<Database>;

/** A playlist as an edit starts from it. */
export interface PlaylistForEdit {
  readonly ownerId: number;
  readonly name: string;
  readonly version: number;
  readonly songIds: readonly number[];
  /** The `chain` of its current revision (see history/revision.repository.ts), null when it has none. */
  readonly revisionChain: number | null;
}

/** How long an edit on PostgreSQL waits for another instance's edit of the same playlist before a 503. */
const LOCK_WAIT = '1s';

/** How many songs the playlist holds (0 when it is gone). */
export async function playlistLength(q: Q, id: number): Promise<number> {
  const { songs } = await q
    .selectFrom('playlist_songs')
    .select((eb) => eb.fn.countAll<number | string>().as('songs'))
    .where('playlist_id', '=', id)
    .executeTakeFirstOrThrow();
  return Number(songs);
}

/**
 * The playlist with its song ids in order, read inside the edit's transaction; undefined, with none of its entries
 * read, when it is gone (access was granted before, in playlist.access.ts). On PostgreSQL the row stays locked until the transaction ends, so
 * that two edits of one playlist run one after the other and the second sees the first (this process queues its
 * own edits of a playlist before they take a connection; another instance's edit waits LOCK_WAIT at most, then
 * 503). SQLite's writes already run one at a time on the writer's connection.
 */
export async function playlistForEdit(trx: Q, dialect: Dialect, id: number): Promise<PlaylistForEdit | undefined> {
  const query = trx
    .selectFrom('playlists as p')
    .select([
      'p.owner_id',
      'p.name',
      'p.version',
      (eb) =>
        eb
          .selectFrom('playlist_revisions as r')
          .select('r.chain')
          .whereRef('r.playlist_id', '=', 'p.id')
          .whereRef('r.version', '=', 'p.version')
          .as('chain'),
    ])
    .where('p.id', '=', id);
  if (dialect === 'postgres') await sql`set local lock_timeout = ${sql.lit(LOCK_WAIT)}`.execute(trx);
  const row = await (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
  if (row === undefined) return undefined;
  // A statement of its own: on PostgreSQL one that waited for the lock above still reads from the snapshot it
  // started with, so the entries another instance's edit just committed are read here, after the lock.
  const entries = await trx
    .selectFrom('playlist_songs')
    .select('song_id')
    .where('playlist_id', '=', id)
    .orderBy('position')
    .execute();
  return {
    ownerId: row.owner_id,
    name: row.name,
    version: Number(row.version),
    songIds: entries.map((e) => e.song_id),
    revisionChain: row.chain,
  };
}

/** The playlist as an edit leaves it: its name, its songs, and its search document. */
export interface EditedPlaylist {
  readonly name: string;
  readonly songIds: readonly number[];
  readonly doc: string;
}

/**
 * Writes the edited playlist: its name, a new version, and of its entries only what changed from the first
 * difference on (an append writes the new songs alone; a change at the front rewrites them all); records the
 * revision, made by `byId`; and replaces its search document (kept by the owner's key, whoever edits). Returns the
 * new version. On PostgreSQL, whose edit holds the playlist's row locked, all of it is one statement.
 */
export async function saveEdit(
  trx: Q,
  dialect: Dialect,
  id: number,
  before: PlaylistForEdit,
  after: EditedPlaylist,
  change: 'edit' | 'restore' = 'edit',
  byId = before.ownerId,
): Promise<number> {
  let same = 0;
  const shorter = Math.min(before.songIds.length, after.songIds.length);
  while (same < shorter && before.songIds[same] === after.songIds[same]) same++;
  const version = before.version + 1;
  const revision = await revisionRow(trx, {
    playlistId: id,
    ownerId: before.ownerId,
    byId,
    version,
    change,
    name: after.name,
    before: before.songIds,
    after: after.songIds,
    at: Date.now(),
    previousChain: before.revisionChain,
  });
  if (dialect === 'postgres') {
    await saveEditAtOnce(trx, id, before.ownerId, after, same, revision);
    return version;
  }
  if (same < before.songIds.length) {
    await trx.deleteFrom('playlist_songs').where('playlist_id', '=', id).where('position', '>=', same).execute();
  }
  for (let start = same; start < after.songIds.length; start += INSERT_CHUNK) {
    // Between two statements the event loop serves other requests (SQLite runs on it).
    if (start > same) await nextTurn();
    const values = after.songIds
      .slice(start, start + INSERT_CHUNK)
      .map((songId, i) => ({ playlist_id: id, position: start + i, song_id: songId }));
    await trx.insertInto('playlist_songs').values(values).execute();
  }
  await trx.updateTable('playlists').set({ name: after.name, version }).where('id', '=', id).execute();
  await trx.insertInto('playlist_revisions').values(revision).execute();
  await replacePlaylistDocument(trx, before.ownerId, id, after.doc);
  return version;
}

/**
 * `saveEdit` on PostgreSQL, in one statement: the entries past the new end deleted, those from the first difference
 * to the end written over (an upsert, so that the delete and the writes touch different rows whatever order they
 * run in), the row's name and version, the revision and the search document: one round trip where an append took
 * four, and a change at the front five (docs/benchmarks.md, "Edits and members' lists in fewer statements").
 */
async function saveEditAtOnce(
  trx: Q,
  id: number,
  ownerId: number,
  after: EditedPlaylist,
  same: number,
  revision: Insertable<PlaylistRevisionTable>,
): Promise<void> {
  const r = revision;
  await sql`${prepared('playlist-edit')}
    WITH gone AS (
      DELETE FROM playlist_songs WHERE playlist_id = ${id} AND position >= ${after.songIds.length}::integer
    ), entries AS (
      INSERT INTO playlist_songs (playlist_id, position, song_id)
      SELECT ${id}::bigint, ${same}::integer + entry.position::integer - 1, entry.song_id
      FROM unnest(${after.songIds.slice(same)}::bigint[]) WITH ORDINALITY AS entry (song_id, position)
      ON CONFLICT (playlist_id, position) DO UPDATE SET song_id = excluded.song_id
    ), revision AS (
      INSERT INTO playlist_revisions
        (playlist_id, owner_id, version, at, by_id, change, name, song_count, splice_at, splice_deleted, songs, chain)
      VALUES (${r.playlist_id}, ${r.owner_id}, ${r.version}, ${r.at}, ${r.by_id}, ${r.change}, ${r.name},
        ${r.song_count}, ${r.splice_at}::integer, ${r.splice_deleted}::integer, ${r.songs}, ${r.chain})
    ), document AS (
      UPDATE playlist_documents SET doc = ${after.doc} WHERE owner_id = ${ownerId} AND playlist_id = ${id}
    )
    UPDATE playlists SET name = ${after.name}, version = ${r.version} WHERE id = ${id}`.execute(trx);
}
