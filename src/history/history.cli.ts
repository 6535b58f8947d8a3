import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { playlistService } from '../playlists/playlist.service.js';
import { searchGate } from '../search/bounded-search.js';
import { findUserByName } from '../users/user.repository.js';
import { historyService } from './history.service.js';

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
  const rows = await db.kysely
    .selectFrom('deleted_playlists as d')
    .leftJoin('playlist_revisions as r', (join) =>
      join.onRef('r.playlist_id', '=', 'd.id').on('r.change', '=', 'delete'),
    )
    .select(['d.id', 'd.deleted_at', 'r.name', 'r.version'])
    .where('d.owner_id', '=', user.id)
    .orderBy('d.deleted_at', 'desc')
    .orderBy('r.version', 'desc')
    .execute();
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
  const owner = await db.kysely
    .selectFrom('playlist_revisions as r')
    .innerJoin('users as u', 'u.id', 'r.owner_id')
    .select(['u.id', 'u.name', (eb) => eb.fn.max('r.version').as('newest')])
    .where('r.playlist_id', '=', id)
    .groupBy(['u.id', 'u.name'])
    .executeTakeFirst();
  if (owner === undefined) throw new HistoryCommandError(`Playlist ${id} has no history kept.`);
  const target = version ?? Number(owner.newest);
  const playlists = playlistService(db, config.limits, 0, config.search, searchGate(config.search));
  const history = historyService(db, playlists, {
    limits: config.limits,
    exports: config.exports,
    historyDays: config.historyDays,
  });
  try {
    const restored = await history.restore(owner.id, id, target, undefined);
    const body = JSON.parse(restored.body.toString('utf8')) as { songs: unknown[] };
    return { owner: owner.name, version: target, songs: body.songs.length };
  } catch (error) {
    if (error instanceof ApiError) throw new HistoryCommandError(error.message);
    throw error;
  }
}
