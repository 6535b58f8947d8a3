import { setImmediate as nextTurn } from 'node:timers/promises';
import { Bounded } from '../concurrency/bounded.js';
import { playlistPageJson } from './playlist.json.js';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { playlistDocument, searchWords } from '../search/search-text.js';
import { findSongsByIds } from '../songs/song.repository.js';
import { reservePlaylistSlot, releasePlaylistSlot } from '../users/user.repository.js';
import * as playlists from './playlist.repository.js';
import type { PageQuery } from '../http/schemas.js';
import type { NewPlaylist, PlaylistWithSongs } from './playlist.schemas.js';

/** What a playlist's cover shows. */
export interface PlaylistSummary {
  readonly name: string;
  readonly songCount: number;
  /** The first four distinct artists, in playlist order. */
  readonly artists: readonly string[];
}

export interface Page {
  /** The page as JSON bytes: an array of `playlistwithsongs`. */
  readonly json: Buffer;
  readonly total: number;
}

/** Songs read in one statement: about 5 ms of SQLite's time, which runs on the event loop. */
const SONGS_PER_READ = 1000;
/** Playlists longer than this are created a few at a time. */
const LONG_PLAYLIST = 100;

const ALREADY_DELETED = 'This playlist is already deleted.';
const NOT_FOUND = 'No such playlist.';

/** The playlist rules: creation against the catalog and the quota, ownership, 404 and 410. */
export function playlistService(db: Db, limits: Limits) {
  const q = db.kysely;
  // Long pages, and long playlists being created, a few at a time: each takes the event loop for a while, and a
  // long page holds megabytes until it is sent.
  const refuse = () => ApiError.unavailable('The service is busy with other large requests; try again shortly.', 1);
  const longPages = new Bounded({ limit: 1, queue: 256, waitMs: 10_000, refuse });
  const longCreates = new Bounded({ limit: 2, queue: 256, waitMs: 10_000, refuse });

  /** 410 for the owner of a deleted playlist, 404 for everyone and everything else. */
  async function missing(id: number, userId: number): Promise<ApiError> {
    const deleted = await playlists.findDeletedPlaylist(q, id);
    return deleted?.owner_id === userId ? ApiError.gone(ALREADY_DELETED) : ApiError.notFound(NOT_FOUND);
  }

  /** The page's playlists with their songs, from the entries in playlist and position order. */
  function assemble(heads: readonly playlists.PlaylistHead[], rows: readonly playlists.PlaylistSongRow[]) {
    const byPlaylist = new Map<number, PlaylistWithSongs>();
    const result = heads.map((h) => {
      const playlist: PlaylistWithSongs = { id: h.id, name: h.name, songs: [] };
      byPlaylist.set(h.id, playlist);
      return playlist;
    });
    for (const row of rows)
      byPlaylist.get(row.playlist_id)?.songs.push({ id: row.id, title: row.title, artist: row.artist });
    return result;
  }

  /**
   * A page as JSON bytes. Most pages fit in one read; a page of long playlists (up to 100 000 songs, 7 MB) is read
   * and written a piece at a time with the event loop free in between, and only a few such pages are built at
   * once, so that other users' small requests are not held up behind them (nor behind the garbage they leave).
   */
  async function pageJson(heads: readonly playlists.PlaylistHead[]): Promise<Buffer> {
    const ids = heads.map((h) => h.id);
    const rows = await playlists.songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ);
    if (rows.length < SONGS_PER_READ) return playlistPageJson(assemble(heads, rows));
    return longPages.run(async () => {
      for (let last = rows.at(-1); last !== undefined;) {
        await nextTurn();
        const after = { playlistId: last.playlist_id, position: last.position };
        const more = await playlists.songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ, after);
        for (const row of more) rows.push(row);
        last = more.length < SONGS_PER_READ ? undefined : more.at(-1);
      }
      return playlistPageJson(assemble(heads, rows));
    });
  }

  async function create(userId: number, input: NewPlaylist): Promise<PlaylistWithSongs> {
    const found = await findSongsByIds(q, input.songIds);
    const byId = new Map(found.map((s) => [s.id, s]));
    const unknown = [...new Set(input.songIds.filter((id) => !byId.has(id)))];
    if (unknown.length > 0) {
      const shown = unknown.slice(0, 20).join(', ');
      const more = unknown.length > 20 ? ` and ${unknown.length - 20} more` : '';
      throw ApiError.unprocessable(
        `${unknown.length === 1 ? 'This song id is' : 'These song ids are'} not in the catalog: ${shown}${more}.`,
      );
    }
    const songs = input.songIds.map((id) => byId.get(id)!);
    const doc = playlistDocument(input.name, songs);
    const id = await db.write(async (trx) => {
      if (!(await reservePlaylistSlot(trx, userId, limits.playlistsPerUser))) {
        throw ApiError.conflict(
          `You have reached the limit of ${limits.playlistsPerUser} playlists; delete one to make room.`,
        );
      }
      const playlistId = await playlists.insertPlaylist(trx, userId, input.name, Date.now());
      await playlists.insertEntries(trx, playlistId, input.songIds);
      await playlists.insertSearchDocument(trx, db.dialect, playlistId, doc);
      return playlistId;
    });
    return { id, name: input.name, songs: songs.map((s) => ({ id: s.id, title: s.title, artist: s.artist })) };
  }

  return {
    create(userId: number, input: NewPlaylist): Promise<PlaylistWithSongs> {
      // A long playlist takes tens of milliseconds of the event loop to check, index and write: a few at a time.
      return input.songIds.length > LONG_PLAYLIST
        ? longCreates.run(() => create(userId, input))
        : create(userId, input);
    },

    async get(userId: number, id: number): Promise<PlaylistWithSongs> {
      const found = await playlists.findPlaylistWithSongs(q, id, userId);
      if (found === undefined) throw await missing(id, userId);
      return found;
    },

    /** The owner's playlist in brief, with the same 404 and 410 answers as `get`. */
    async summary(userId: number, id: number): Promise<PlaylistSummary> {
      const head = await playlists.findPlaylist(q, id);
      if (head === undefined || head.owner_id !== userId) throw await missing(id, userId);
      return { name: head.name, ...(await playlists.coverFacts(q, id)) };
    },

    async remove(userId: number, id: number): Promise<void> {
      const deleted = await db.write(async (trx) => {
        if (!(await playlists.deletePlaylist(trx, id, userId, Date.now()))) return false;
        await releasePlaylistSlot(trx, userId);
        return true;
      });
      if (!deleted) throw await missing(id, userId);
    },

    /** A page of the caller's playlists, as the JSON array the API answers with, and how many match in all. */
    async list(userId: number, page: PageQuery): Promise<Page> {
      const words = searchWords(page.search ?? '');
      if (words.length === 0) {
        const [heads, total] = await Promise.all([
          playlists.listPlaylists(q, userId, page.limit, page.offset),
          playlists.countPlaylists(q, userId),
        ]);
        return { json: await pageJson(heads), total };
      }
      const owned = await playlists.countPlaylists(q, userId);
      if (owned === 0) return { json: await pageJson([]), total: 0 };
      const { heads, total } = await playlists.searchPlaylists(
        q,
        db.dialect,
        userId,
        words,
        owned,
        page.limit,
        page.offset,
      );
      return { json: await pageJson(heads), total };
    },
  };
}

export type PlaylistService = ReturnType<typeof playlistService>;
