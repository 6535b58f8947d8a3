import DataLoader from 'dataloader';
import type { Db } from '../db/database.js';
import { playlistAccessRow, playlistAccessRows, type AccessRow } from './playlist-access.repository.js';

/** The most access reads one PostgreSQL statement makes. */
const ACCESS_READS_PER_STATEMENT = 256;

/** Reads a caller's standing towards a playlist: its row, or undefined when they neither own it nor are a member. */
export type AccessReader = (id: number, userId: number) => Promise<AccessRow | undefined>;

/**
 * The one repository read behind access: the playlist's owner, version and the catalog version, with the caller's
 * membership, in one indexed statement. On SQLite each request makes its own (a few microseconds, on the event
 * loop); on PostgreSQL the reads of the requests that arrive in one turn of the event loop go as one statement, in
 * one round trip, each still read after its request arrived (nothing is kept between turns).
 */
export function accessReader(db: Db): AccessReader {
  const q = db.kysely;
  if (db.dialect !== 'postgres') return (id, userId) => playlistAccessRow(q, id, userId);
  const reads = new DataLoader<{ id: number; userId: number }, AccessRow | undefined, string>(
    async (pairs) => {
      const rows = await playlistAccessRows(q, pairs);
      const found = new Map(rows.map((row) => [`${String(row.id)}:${String(row.user_id)}`, row]));
      return pairs.map((pair) => found.get(`${pair.id}:${pair.userId}`));
    },
    {
      cache: false,
      maxBatchSize: ACCESS_READS_PER_STATEMENT,
      batchScheduleFn: (dispatch) => setImmediate(dispatch),
    },
  );
  return (id, userId) => reads.load({ id, userId });
}
