import { boundedPerKey, boundedWithShares } from '../concurrency/bounded.js';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { ifMatch, preconditionFailed } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import { playlistDocument } from '../search/search-text.js';
import { findSongsByIds } from '../songs/song.repository.js';
import { playlistForEdit, playlistLength, saveEdit } from './playlist-edit.repository.js';
import type { PlaylistDocument } from './playlist-edit.operations.js';
import { playlistAnswer, type PlaylistAnswer } from './playlist.answers.js';
import { replacePlaylistDocument } from '../search/playlist-search.js';
import type { PlaylistAccess } from './playlist.access.js';

/** An edit: the playlist as it is now to the playlist as it will be, or an ApiError that changes nothing. */
export type Edit = (current: PlaylistDocument) => PlaylistDocument;

/**
 * Edits that touch more songs than this (the playlist's and those sent) are run a few at a time: each takes
 * milliseconds of the event loop.
 */
const LONG_EDIT = 100;

/**
 * Edits through the one write path (SQLite's group commit, a transaction on PostgreSQL). First the caller's access
 * is asked for (another user's playlist answers 404 or 410 with none of its songs read), then the edit waits its
 * turn: edits of one playlist one at a time in this process (so none holds a pooled connection waiting for another's
 * lock), and long ones a few at a time, one of them a user's.
 *
 * Everything else that decides the outcome is read inside the transaction: whether the playlist is still there (410
 * before any precondition; an owner never changes, ids are never reused), its current answer for `If-Match`, and the
 * songs it holds, so two edits can never both pass the same tag and appends sent together all land. The answer is
 * the edited playlist as GET will answer it, with its new ETag.
 */
export function playlistEditor(db: Db, limits: Limits, access: PlaylistAccess, onEdited: (id: number) => void) {
  const refuse = () => ApiError.unavailable('The service is busy with other large requests; try again shortly.', 1);
  const yours = () =>
    ApiError.tooManyRequests(1, 'Your previous long edits are still being saved; wait for them first.');
  const longEdits = boundedWithShares(
    { limit: 2, queue: 256, waitMs: 10_000, refuse },
    { limit: 1, queue: 32, refuse: yours },
  );
  const busyPlaylist = () =>
    ApiError.unavailable('This playlist has many edits waiting already; try again shortly.', 1);
  const perPlaylist = boundedPerKey({ limit: 1, queue: 64, waitMs: 10_000, refuse: busyPlaylist });

  async function edit(
    userId: number,
    id: number,
    precondition: string | undefined,
    change: Edit,
  ): Promise<PlaylistAnswer & { id: number }> {
    const answer = await db.write(async (trx) => {
      const current = await playlistForEdit(trx, db.dialect, id);
      if (current === undefined) throw await access.refusal(userId, id, trx);
      if (precondition !== undefined) {
        const songs = await songsInOrder(trx, current.songIds);
        const now = playlistAnswer({ id, name: current.name, songs: songs.map(({ genre: _, ...song }) => song) });
        if (!ifMatch(precondition, now.etag)) throw preconditionFailed(now.etag);
      }
      const next = change({ name: current.name, songs: current.songIds.map((songId) => ({ id: songId })) });
      const songIds = next.songs.map((song) => song.id);
      const songs = await songsInOrder(trx, songIds);
      await saveEdit(trx, id, current, { name: next.name, songIds });
      await replacePlaylistDocument(trx, userId, id, playlistDocument(next.name, songs));
      return playlistAnswer({ id, name: next.name, songs: songs.map(({ genre: _, ...song }) => song) });
    });
    onEdited(id);
    return { id, ...answer };
  }

  return {
    /** Applies `change` to the playlist when `If-Match` (if sent) names its current answer. */
    async edit(userId: number, id: number, precondition: string | undefined, change: Edit, cost = 0) {
      await access.requireAccess(userId, id, 'edit');
      const length = await playlistLength(db.kysely, id);
      const run = () => edit(userId, id, precondition, change);
      return perPlaylist(id, () => (length + cost > LONG_EDIT ? longEdits(userId, run) : run()));
    },
  };
}

/** The catalog's songs for these ids, in their order; 422 naming the ids the catalog does not have. */
async function songsInOrder(trx: Db['kysely'], ids: readonly number[]) {
  const found = await findSongsByIds(trx, ids);
  const byId = new Map(found.map((song) => [song.id, song]));
  const unknown = [...new Set(ids.filter((id) => !byId.has(id)))];
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 20).join(', ');
    const more = unknown.length > 20 ? ` and ${unknown.length - 20} more` : '';
    throw ApiError.unprocessable(
      `${unknown.length === 1 ? 'This song id is' : 'These song ids are'} not in the catalog: ${shown}${more}.`,
    );
  }
  return ids.map((id) => {
    const { title, artist, genre } = byId.get(id)!;
    return { id, title, artist, genre };
  });
}
