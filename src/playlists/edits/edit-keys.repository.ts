import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

type Q = Kysely<Database>;

/** The results a merged edit sent with this key by this user on this playlist answered (JSON), if any is kept. */
export async function findEditKey(q: Q, playlistId: number, userId: number, key: string): Promise<string | undefined> {
  const row = await q
    .selectFrom('edit_keys')
    .select('results')
    .where('playlist_id', '=', playlistId)
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row?.results;
}

/** Keeps what a merged edit with a key answered, in the edit's own transaction. */
export async function insertEditKey(
  trx: Q,
  row: { playlistId: number; userId: number; key: string; at: number; results: string },
): Promise<void> {
  await trx
    .insertInto('edit_keys')
    .values({ playlist_id: row.playlistId, user_id: row.userId, key: row.key, at: row.at, results: row.results })
    .execute();
}

/** Forgets the oldest keys older than `cutoff` (Unix ms), about `limit` of them at most; returns how many. */
export async function deleteEditKeysBefore(trx: Q, cutoff: number, limit: number): Promise<number> {
  // The time of the limit-th oldest key bounds the batch (keys made in the same millisecond go together).
  const last = await trx
    .selectFrom('edit_keys')
    .select('at')
    .where('at', '<', cutoff)
    .orderBy('at')
    .offset(limit - 1)
    .limit(1)
    .executeTakeFirst();
  const result = await trx
    .deleteFrom('edit_keys')
    .where('at', last === undefined ? '<' : '<=', last === undefined ? cutoff : Number(last.at))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
