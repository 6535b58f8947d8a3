import type { FastifyBaseLogger } from 'fastify';
import { deleteCatalogChangesBefore } from '../catalog/catalog.repository.js';
import type { Db } from '../db/database.js';
import { playlistExists } from '../playlists/playlist.repository.js';
import { deleteLinksOf } from '../sharing/links.repository.js';
import { deleteMemberEventsBefore, deleteMembersOf } from '../sharing/members.repository.js';
import {
  deleteEntryOriginsOf,
  deleteRevisionsBefore,
  firstVersionSince,
  isSplice,
  lockNewestRevision,
  makeSnapshot,
  playlistsWithRevisionsBefore,
} from './pruning.repository.js';
import { versionContent } from './revision.repository.js';
import { deleteEditKeysBefore } from '../playlists/edits/edit-keys.repository.js';

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
  const ids = await playlistsWithRevisionsBefore(db.kysely, cutoff, BATCH);
  for (const id of ids) await db.write((trx) => prunePlaylist(trx, db.dialect, id, cutoff));
  return ids.length;
}

async function prunePlaylist(trx: Db['kysely'], dialect: Db['dialect'], id: number, cutoff: number): Promise<void> {
  const newest = await lockNewestRevision(trx, dialect, id);
  if (newest === undefined) return;
  const live = await playlistExists(trx, id);
  const keepFrom = (await firstVersionSince(trx, id, cutoff)) ?? (live ? newest : undefined);
  if (keepFrom === undefined) {
    // It can no longer be restored: its members, links and entries' origins go with its history.
    await deleteRevisionsBefore(trx, id, undefined);
    await deleteEntryOriginsOf(trx, id);
    await deleteMembersOf(trx, id);
    await deleteLinksOf(trx, id);
    return;
  }
  const kept = await versionContent(trx, id, keepFrom);
  if (kept === undefined) return;
  if (kept.chain !== 0 || (await isSplice(trx, id, keepFrom)))
    await makeSnapshot(trx, id, keepFrom, kept.songIds, kept.entries);
  await deleteRevisionsBefore(trx, id, keepFrom);
}

/**
 * Prunes one batch of member events older than `cutoff` (the change feed refuses tokens that old); returns how many
 * it removed.
 */
export function pruneMemberEvents(db: Db, cutoff: number): Promise<number> {
  return db.write((trx) => deleteMemberEventsBefore(trx, cutoff, BATCH));
}

/** Prunes one batch of merged edits' keys older than `cutoff` (kept as long as the history); returns how many. */
export function pruneEditKeys(db: Db, cutoff: number): Promise<number> {
  return db.write((trx) => deleteEditKeysBefore(trx, cutoff, BATCH));
}

/**
 * Prunes revisions, member events, merged edits' keys and catalog changes older than the retention in the
 * background: a round every ten minutes (the first a minute after start), at most BATCHES_PER_ROUND batches each,
 * so that a backlog is worked off without holding the writer long.
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
      for (let i = 0; i < BATCHES_PER_ROUND && !stopped; i++) {
        if ((await pruneEditKeys(db, Date.now() - historyDays * DAY_MS)) < BATCH) break;
      }
      // One row per catalog import: a handful at most.
      if (!stopped) await db.write((trx) => deleteCatalogChangesBefore(trx, Date.now() - historyDays * DAY_MS));
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
