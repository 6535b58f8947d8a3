import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { WorkerPool } from '../workers/worker-pool.js';
import { ApiError } from '../http/errors.js';
import { playlistService } from '../playlists/playlist.service.js';
import { searchGate } from '../search/bounded-search.js';
import { rulesRunner } from '../smart/rules-runner.js';
import { findUserByName } from '../users/user.repository.js';
import { historyService } from './history.service.js';
import { deletedPlaylistsOf, historyOwner } from './revision.repository.js';

/** What an operator asked for cannot be done; the message says why. */
export class HistoryCommandError extends Error {}

export interface DeletedPlaylist {
  readonly id: number;
  readonly name: string;
  readonly deletedAt: number;
  /** The version before the delete, as a restore brings it back; undefined when its history is no longer kept. */
  readonly restorable: number | undefined;
}

/** A user's deleted playlists, newest delete first, with the version a restore brings back. */
export async function deletedPlaylists(db: Db, userName: string): Promise<DeletedPlaylist[]> {
  const user = await findUserByName(db.kysely, userName);
  if (user === undefined) throw new HistoryCommandError(`No user named "${userName}".`);
  const rows = await deletedPlaylistsOf(db.kysely, user.id);
  const seen = new Set<number>();
  return rows.flatMap((row) => {
    if (seen.has(row.id)) return [];
    seen.add(row.id);
    const restorable = row.version === null ? undefined : Number(row.version);
    return [{ id: row.id, name: row.name ?? '', deletedAt: row.deleted_at, restorable }];
  });
}

/**
 * Restores a playlist for its owner, as `POST …/restore` does: to `version`, or else a deleted playlist to what it
 * held when it was deleted. Returns the owner's name, the version restored and the playlist's song count.
 */
export async function restorePlaylist(
  db: Db,
  config: Config,
  id: number,
  version: number | undefined,
): Promise<{ owner: string; version: number; songs: number }> {
  const owner = await historyOwner(db.kysely, id);
  if (owner === undefined) throw new HistoryCommandError(`Playlist ${id} has no history kept.`);
  const target = version ?? owner.newest;
  // A restore of a smart version runs its rules: on a thread, started by the first query.
  const rules = rulesRunner(db, { timeoutMs: config.rules.timeoutMs, database: config.database, threads: 1 });
  const playlists = playlistService(db, config.limits, 0, config.search, searchGate(config.search), rules);
  // A restore reads no file and computes no diff: the pool starts no thread.
  const workers = new WorkerPool(config.workers);
  const history = historyService(
    db,
    playlists,
    { limits: config.limits, exports: config.exports, historyDays: config.historyDays },
    workers,
  );
  try {
    const restored = await history.restore(owner.id, id, target, undefined);
    return { owner: owner.name, version: target, songs: restored.songCount };
  } catch (error) {
    if (error instanceof ApiError) throw new HistoryCommandError(error.message);
    throw error;
  } finally {
    await workers.close();
    await rules.close();
  }
}
