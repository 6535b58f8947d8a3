import { batchedPerTurn } from '../db/batched.js';
import type { Db } from '../db/database.js';
import {
  playlistAccessRow,
  playlistAccessRowCounted,
  playlistAccessRows,
  type AccessRow,
} from './playlist-access.repository.js';

/**
 * Reads a caller's standing towards a playlist: its row, or undefined when they neither own it nor are a member.
 * With `count`, PostgreSQL also counts the playlist's songs in the same statement (`songCount`); SQLite never does.
 */
export type AccessReader = (
  id: number,
  userId: number,
  count?: boolean,
) => Promise<(AccessRow & { readonly songCount?: number }) | undefined>;

/**
 * The one repository read behind access: the playlist's owner, version and the catalog version, with the caller's
 * membership, in one indexed statement. On SQLite each request makes its own (a few microseconds, on the event
 * loop); on PostgreSQL the reads of the requests that arrive in one turn of the event loop go as one statement, in
 * one round trip, each still read after its request arrived (nothing is kept between turns). A read that counts the
 * songs (an edit's) goes alone, so that no other request waits for the count.
 */
export function accessReader(db: Db): AccessReader {
  const q = db.kysely;
  if (db.dialect !== 'postgres') return (id, userId) => playlistAccessRow(q, id, userId);
  const reads = batchedPerTurn((pairs: readonly { id: number; userId: number }[]) => playlistAccessRows(q, pairs));
  return async (id, userId, count = false) => {
    if (!count) return reads({ id, userId });
    const row = await playlistAccessRowCounted(q, id, userId);
    if (row === undefined) return undefined;
    const { song_count, ...rest } = row;
    return { ...rest, songCount: Number(song_count) };
  };
}
