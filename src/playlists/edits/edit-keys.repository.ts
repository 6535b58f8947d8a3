import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

type Q = Kysely<Database>;

/**
 * What a merged edit sent with this key by this user on this playlist answered (see kept-results.ts) and the digest
 * of its request (null for a key kept before digests were), if the key is kept.
 */
export function findEditKey(
  q: Q,
  playlistId: number,
  userId: number,
  key: string,
): Promise<{ results: string; digest: string | null } | undefined> {
  return q
    .selectFrom('edit_keys')
    .select(['results', 'digest'])
    .where('playlist_id', '=', playlistId)
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/**
 * Keeps what a merged edit with a key answered, in the edit's own transaction, and forgets the user's keys past the
 * newest `keep`, oldest first (in the order of their time, then playlist and key, which no two keys share), through
 * the index (user_id, at): the user's keys are read up to the first one forgotten.
 */
export async function insertEditKey(
  trx: Q,
  row: {
    playlistId: number;
    userId: number;
    key: string;
    at: number;
    results: string;
    digest: string;
    /** The version the edit made; null when it changed nothing. */
    version: number | null;
    /** The name its applied renames left; null when none applied. */
    renamed: string | null;
  },
  keep: number,
): Promise<void> {
  await trx
    .insertInto('edit_keys')
    .values({
      playlist_id: row.playlistId,
      user_id: row.userId,
      key: row.key,
      at: row.at,
      results: row.results,
      digest: row.digest,
      version: row.version,
      renamed: row.renamed,
    })
    .execute();
  const past = await trx
    .selectFrom('edit_keys')
    .select(['at', 'playlist_id', 'key'])
    .where('user_id', '=', row.userId)
    .orderBy('at', 'desc')
    .orderBy('playlist_id', 'desc')
    .orderBy('key', 'desc')
    .offset(keep)
    .limit(1)
    .executeTakeFirst();
  if (past === undefined) return;
  await trx
    .deleteFrom('edit_keys')
    .where('user_id', '=', row.userId)
    .where(sql<boolean>`(at, playlist_id, key) <= (${Number(past.at)}, ${past.playlist_id}, ${past.key})`)
    .execute();
}

/** What the user's kept keys among `keys` on this playlist wrote: the version each made and the name it left. */
export async function writesOfKeys(
  q: Q,
  playlistId: number,
  userId: number,
  keys: readonly string[],
): Promise<Map<string, { version: number | null; renamed: string | null }>> {
  const rows = await q
    .selectFrom('edit_keys')
    .select(['key', 'version', 'renamed'])
    .where('playlist_id', '=', playlistId)
    .where('user_id', '=', userId)
    .where('key', 'in', keys)
    .execute();
  return new Map(
    rows.map((row) => [row.key, { version: row.version === null ? null : Number(row.version), renamed: row.renamed }]),
  );
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
