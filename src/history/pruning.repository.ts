import type { Kysely } from 'kysely';
import { lockingRows, type Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { joinIds } from './revision.repository.js';

type Q = Kysely<Database>;

/** The playlists of the oldest `limit` revisions older than `cutoff`, each once. */
export async function playlistsWithRevisionsBefore(db: Q, cutoff: number, limit: number): Promise<number[]> {
  const old = await db
    .selectFrom('playlist_revisions')
    .select('playlist_id')
    .where('at', '<', cutoff)
    .orderBy('at')
    .limit(limit)
    .execute();
  return [...new Set(old.map((row) => row.playlist_id))];
}

/**
 * The version of the playlist's newest revision, held until the write commits, so that two instances prune a
 * playlist one after the other; undefined when it has none.
 */
export async function lockNewestRevision(trx: Q, dialect: Dialect, id: number): Promise<number | undefined> {
  const query = trx
    .selectFrom('playlist_revisions')
    .select('version')
    .where('playlist_id', '=', id)
    .orderBy('version', 'desc')
    .limit(1);
  const row = await lockingRows(query, dialect).executeTakeFirst();
  return row === undefined ? undefined : Number(row.version);
}

/** The playlist's first version written at or after `at`, undefined when none was. */
export async function firstVersionSince(trx: Q, id: number, at: number): Promise<number | undefined> {
  const row = await trx
    .selectFrom('playlist_revisions')
    .select((eb) => eb.fn.min<number | string | null>('version').as('version'))
    .where('playlist_id', '=', id)
    .where('at', '>=', at)
    .executeTakeFirst();
  return row?.version === null || row === undefined ? undefined : Number(row.version);
}

/** Whether the revision is a splice of the version before (not a whole copy of the songs). */
export async function isSplice(trx: Q, id: number, version: number): Promise<boolean> {
  const row = await trx
    .selectFrom('playlist_revisions')
    .select('splice_at')
    .where('playlist_id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return row !== undefined && row.splice_at !== null;
}

/** Makes the revision a whole copy of these songs, which the splices after it start from. */
export async function makeSnapshot(
  trx: Q,
  id: number,
  version: number,
  songIds: readonly number[],
  entries: readonly number[] | undefined,
): Promise<void> {
  await trx
    .updateTable('playlist_revisions')
    .set({
      splice_at: null,
      splice_deleted: null,
      songs: joinIds(songIds),
      entries: entries === undefined ? '' : joinIds(entries),
      chain: 0,
    })
    .where('playlist_id', '=', id)
    .where('version', '=', version)
    .execute();
}

/** Deletes the playlist's revisions before `version` (every one when undefined). */
export async function deleteRevisionsBefore(trx: Q, id: number, version: number | undefined): Promise<void> {
  let query = trx.deleteFrom('playlist_revisions').where('playlist_id', '=', id);
  if (version !== undefined) query = query.where('version', '<', version);
  await query.execute();
}

/** Deletes the origins of a playlist's entries (once it can no longer be restored). */
export async function deleteEntryOriginsOf(trx: Q, id: number): Promise<void> {
  await trx.deleteFrom('playlist_entry_origins').where('playlist_id', '=', id).execute();
}
