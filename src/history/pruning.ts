import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import { versionContent } from './revision.repository.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Old revisions read per look: at most this many, then as many playlists as they belong to, one write each. */
const BATCH = 200;
/** Looks per round; the next round comes after the interval. */
const BATCHES_PER_ROUND = 20;
const INTERVAL_MS = 10 * 60 * 1000;

/**
 * Prunes one batch: the playlists of the oldest revisions older than `cutoff`, each in a write of its own. A
 * playlist keeps every revision from `cutoff` on, and its current one always; the first revision it keeps becomes a
 * snapshot if it was a splice (the snapshot the splices after it start from). A deleted playlist whose delete is
 * older than `cutoff` loses its whole history, its members and its links (it can no longer be restored; it still
 * answers 410 to its owner). Returns how
 * many playlists it looked at.
 */
export async function pruneHistory(db: Db, cutoff: number): Promise<number> {
  const old = await db.kysely
    .selectFrom('playlist_revisions')
    .select('playlist_id')
    .where('at', '<', cutoff)
    .orderBy('at')
    .limit(BATCH)
    .execute();
  const ids = [...new Set(old.map((row) => row.playlist_id))];
  for (const id of ids) await db.write((trx) => prunePlaylist(trx, db.dialect, id, cutoff));
  return ids.length;
}

async function prunePlaylist(trx: Db['kysely'], dialect: Db['dialect'], id: number, cutoff: number): Promise<void> {
  // PostgreSQL: the newest revision locked, so that two instances prune a playlist one after the other.
  const newestQuery = trx
    .selectFrom('playlist_revisions')
    .select('version')
    .where('playlist_id', '=', id)
    .orderBy('version', 'desc')
    .limit(1);
  const newest = await (dialect === 'postgres' ? newestQuery.forUpdate() : newestQuery).executeTakeFirst();
  if (newest === undefined) return;
  const live = await trx.selectFrom('playlists').select('id').where('id', '=', id).executeTakeFirst();
  const firstKept = await trx
    .selectFrom('playlist_revisions')
    .select((eb) => eb.fn.min<number | string | null>('version').as('version'))
    .where('playlist_id', '=', id)
    .where('at', '>=', cutoff)
    .executeTakeFirst();
  const first = firstKept?.version ?? null;
  const keepFrom = first !== null ? Number(first) : live === undefined ? undefined : Number(newest.version);
  if (keepFrom === undefined) {
    // It can no longer be restored: its members and links go with its history.
    await trx.deleteFrom('playlist_revisions').where('playlist_id', '=', id).execute();
    await trx.deleteFrom('playlist_members').where('playlist_id', '=', id).execute();
    await trx.deleteFrom('playlist_links').where('playlist_id', '=', id).execute();
    return;
  }
  const kept = await versionContent(trx, id, keepFrom);
  if (kept === undefined) return;
  if (kept.chain !== 0 || (await isSplice(trx, id, keepFrom))) {
    await trx
      .updateTable('playlist_revisions')
      .set({ splice_at: null, splice_deleted: null, songs: kept.songIds.join(','), chain: 0 })
      .where('playlist_id', '=', id)
      .where('version', '=', keepFrom)
      .execute();
  }
  await trx.deleteFrom('playlist_revisions').where('playlist_id', '=', id).where('version', '<', keepFrom).execute();
}

/**
 * Prunes one batch of member events older than `cutoff` (the change feed refuses tokens that old); returns how many
 * it removed.
 */
export async function pruneMemberEvents(db: Db, cutoff: number): Promise<number> {
  const removed = await db.write((trx) =>
    trx
      .deleteFrom('member_events')
      .where('seq', 'in', (eb) =>
        eb.selectFrom('member_events').select('seq').where('at', '<', cutoff).orderBy('at').limit(BATCH),
      )
      .executeTakeFirst(),
  );
  return Number(removed.numDeletedRows);
}

async function isSplice(trx: Db['kysely'], id: number, version: number): Promise<boolean> {
  const row = await trx
    .selectFrom('playlist_revisions')
    .select('splice_at')
    .where('playlist_id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return row !== undefined && row.splice_at !== null;
}

/**
 * Prunes revisions and member events older than the retention in the background: a round every ten minutes (the first a minute after
 * start), at most BATCHES_PER_ROUND batches each, so that a backlog is worked off without holding the writer long.
 */
export function startHistoryPruning(db: Db, historyDays: number, log: FastifyBaseLogger): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const round = async () => {
    try {
      for (let i = 0; i < BATCHES_PER_ROUND && !stopped; i++) {
        if ((await pruneHistory(db, Date.now() - historyDays * DAY_MS)) === 0) break;
      }
      for (let i = 0; i < BATCHES_PER_ROUND && !stopped; i++) {
        if ((await pruneMemberEvents(db, Date.now() - historyDays * DAY_MS)) < BATCH) break;
      }
    } catch (error) {
      log.warn({ err: error }, 'pruning old playlist revisions or member events failed; trying again later');
    }
    if (!stopped) schedule(INTERVAL_MS);
  };
  const schedule = (ms: number) => {
    timer = setTimeout(() => void round(), ms);
    timer.unref();
  };
  schedule(60_000);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
