import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { recordRevision } from '../history/revision.repository.js';
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

/**
 * Writes the edited playlist: its name, a new version, and of its entries only what changed from the first
 * difference on (an append writes the new songs alone; a change at the front rewrites them all); and records the
 * revision, made by `byId`. Returns the new version.
 */
export async function saveEdit(
  trx: Q,
  id: number,
  before: PlaylistForEdit,
  after: { readonly name: string; readonly songIds: readonly number[] },
  change: 'edit' | 'restore' = 'edit',
  byId = before.ownerId,
): Promise<number> {
  let same = 0;
  const shorter = Math.min(before.songIds.length, after.songIds.length);
  while (same < shorter && before.songIds[same] === after.songIds[same]) same++;
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
  const row = await trx
    .updateTable('playlists')
    .set({ name: after.name, version: before.version + 1 })
    .where('id', '=', id)
    .returning('version')
    .executeTakeFirstOrThrow();
  const version = Number(row.version);
  await recordRevision(trx, {
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
  return version;
}
