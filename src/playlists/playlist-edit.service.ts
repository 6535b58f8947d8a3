import { boundedPerKey } from '../concurrency/bounded.js';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { ifMatch, preconditionFailed } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import { playlistDocument } from '../search/search-text.js';
import { findSongsByIds, type CatalogSong } from '../songs/song.repository.js';
import { playlistForEdit, playlistLength, saveEdit } from './playlist-edit.repository.js';
import { EditRefused } from './playlist-edit.checks.js';
import type { PlaylistDocument } from './playlist-edit.operations.js';
import { asSeenBy, playlistAnswer, type PlaylistAnswer } from './playlist.answers.js';
import { LONG_PLAYLIST, largeRequests, notInCatalog } from './playlist.rules.js';
import type { Grant, PlaylistAccess } from './playlist.access.js';

/** An edit: the playlist as it is now to the playlist as it will be, or an EditRefused that changes nothing. */
export type Edit = (current: PlaylistDocument) => PlaylistDocument;

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
  const longEdits = largeRequests(2, 'Your previous long edits are still being saved; wait for them first.');
  const busyPlaylist = () =>
    ApiError.unavailable('This playlist has many edits waiting already; try again shortly.', 1);
  const perPlaylist = boundedPerKey({ limit: 1, queue: 64, waitMs: 10_000, refuse: busyPlaylist });

  async function edit(
    userId: number,
    grant: Grant,
    id: number,
    precondition: string | undefined,
    change: Edit,
    kind: 'edit' | 'restore',
  ): Promise<PlaylistAnswer & { id: number }> {
    const answer = await db.write(async (trx) => {
      const current = await playlistForEdit(trx, db.dialect, id);
      if (current === undefined) throw await access.refusal(userId, id, trx);
      // The edit is worked out first, but a refusal of it answers only once the precondition holds.
      let next: PlaylistDocument | undefined;
      let refused: unknown;
      try {
        next = applied(change, { name: current.name, songs: current.songIds.map((songId) => ({ id: songId })) });
      } catch (error) {
        refused = error;
      }
      const songIds = next?.songs.map((song) => song.id) ?? [];
      // The songs before (for the ETag If-Match names) and after, read in one statement.
      const catalog = await catalogSongs(trx, precondition === undefined ? songIds : [...current.songIds, ...songIds]);
      if (precondition !== undefined) {
        const songs = inOrder(catalog, current.songIds);
        // The caller's own view of it: a member's answers carry the owner and their role, and their own ETag.
        const now = asSeenBy(
          playlistAnswer({ id, name: current.name, songs: songs.map(({ genre: _, ...song }) => song) }),
          grant,
        );
        if (!ifMatch(precondition, now.etag)) throw preconditionFailed(now.etag);
      }
      if (next === undefined) throw refused;
      const songs = inOrder(catalog, songIds);
      const doc = playlistDocument(next.name, songs);
      await saveEdit(trx, db.dialect, id, current, { name: next.name, songIds, doc }, kind, userId);
      return asSeenBy(
        playlistAnswer({ id, name: next.name, songs: songs.map(({ genre: _, ...song }) => song) }),
        grant,
      );
    });
    onEdited(id);
    return { id, ...answer };
  }

  return {
    /**
     * Applies `change` to the playlist when `If-Match` (if sent) names its current answer; `kind` is the revision it
     * records (a restore goes this way too).
     */
    async edit(
      userId: number,
      id: number,
      precondition: string | undefined,
      change: Edit,
      cost = 0,
      kind: 'edit' | 'restore' = 'edit',
    ) {
      const grant = await access.requireAccess(userId, id, 'edit');
      const length = await playlistLength(db.kysely, id);
      const run = () => edit(userId, grant, id, precondition, change, kind);
      return perPlaylist(id, () => (length + cost > LONG_PLAYLIST ? longEdits(userId, run) : run()));
    },
  };
}

/** The edited playlist; a refused edit is a 400 (malformed) or a 409 (a conflict with the playlist as it is). */
function applied(change: Edit, current: PlaylistDocument): PlaylistDocument {
  try {
    return change(current);
  } catch (error) {
    if (!(error instanceof EditRefused)) throw error;
    throw error.reason === 'malformed' ? ApiError.badRequest(error.message) : ApiError.conflict(error.message);
  }
}

/** The catalog's songs of these ids, by id. */
async function catalogSongs(trx: Db['kysely'], ids: readonly number[]) {
  const found = await findSongsByIds(trx, ids);
  return new Map(found.map((song) => [song.id, song]));
}

/** The songs of these ids, in their order; 422 naming the ids the catalog does not have. */
function inOrder(catalog: ReadonlyMap<number, CatalogSong>, ids: readonly number[]) {
  const unknown = [...new Set(ids.filter((id) => !catalog.has(id)))];
  if (unknown.length > 0) throw notInCatalog(unknown);
  return ids.map((id) => {
    const { title, artist, genre } = catalog.get(id)!;
    return { id, title, artist, genre };
  });
}
