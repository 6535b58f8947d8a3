import { setImmediate as nextTurn } from 'node:timers/promises';
import { Bounded } from '../concurrency/bounded.js';
import { PlaylistCache, type CachedPlaylist } from './playlist.cache.js';
import { pageEtag, pageJson, playlistAnswer, playlistAnswers, type PlaylistAnswer } from './playlist.json.js';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import type { ExportPlaylist } from '../formats/playlist-format.js';
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
  /** A weak ETag over what the page shows. */
  readonly etag: string;
}

/** Songs read in one statement: about 5 ms of SQLite's time, which runs on the event loop. */
const SONGS_PER_READ = 1000;
/** Playlists longer than this are created a few at a time. */
const LONG_PLAYLIST = 100;

const ALREADY_DELETED = 'This playlist is already deleted.';
const NOT_FOUND = 'No such playlist.';

/**
 * The playlist rules: creation against the catalog and the quota, ownership, 404 and 410; and the answers, served
 * from memory when they cannot have changed (see PlaylistCache).
 */
export function playlistService(db: Db, limits: Limits, cacheBytes: number) {
  const q = db.kysely;
  const cache = new PlaylistCache(db, cacheBytes);
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

  /** The playlists with their songs, from the entries in playlist and position order. */
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
   * The songs of these playlists. Most pages fit in one read; a page of long playlists (up to 100 000 songs, 7 MB)
   * is read a piece at a time with the event loop free in between, and only one such page is built at once, so
   * that other users' small requests are not held up behind them (nor behind the garbage they leave).
   */
  async function songsOf(ids: readonly number[]): Promise<playlists.PlaylistSongRow[]> {
    const rows = await playlists.songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ);
    if (rows.length < SONGS_PER_READ) return rows;
    return longPages.run(async () => {
      for (let last = rows.at(-1); last !== undefined;) {
        await nextTurn();
        const after = { playlistId: last.playlist_id, position: last.position };
        const more = await playlists.songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ, after);
        for (const row of more) rows.push(row);
        last = more.length < SONGS_PER_READ ? undefined : more.at(-1);
      }
      return rows;
    });
  }

  /**
   * The answers of the owner's playlists with these ids (just read from the database at catalog `version`), from
   * memory where they are kept, read and kept otherwise. A playlist deleted since its id was read is left out.
   */
  async function answersOf(ids: readonly number[], version: number, ownerId: number): Promise<PlaylistAnswer[]> {
    const kept = ids.map((id) => cache.get(id, version));
    const wanted = ids.filter((_, i) => kept[i] === undefined);
    if (wanted.length === 0) return kept as CachedPlaylist[];
    const generation = cache.generation;
    // Songs first, then the heads: entries go only with their playlist and ids are never reused, so a playlist
    // whose head is still there was read whole; one deleted in between is left out rather than shown short.
    const rows = await songsOf(wanted);
    const heads = await playlists.playlistHeads(q, wanted);
    heads.sort((a, b) => a.id - b.id);
    // Songs read in several statements may straddle a catalog change (a read that overlapped the import may show
    // either title); such answers are served but not kept.
    const versions = new Set(rows.map((r) => Number(r.version)));
    const readAt = versions.size === 0 ? version : versions.size === 1 ? [...versions][0]! : Number.NaN;
    const built = new Map<number, CachedPlaylist>();
    const answers = await playlistAnswers(assemble(heads, rows));
    answers.forEach((answer, i) => {
      const entry = { ...answer, id: heads[i]!.id, ownerId, version: readAt };
      built.set(entry.id, entry);
      cache.put(entry, generation);
    });
    return ids.flatMap((id, i) => kept[i] ?? built.get(id) ?? []);
  }

  function page(answers: readonly PlaylistAnswer[], total: number): Page {
    return { json: pageJson(answers), total, etag: pageEtag(answers, total) };
  }

  async function create(userId: number, input: NewPlaylist): Promise<PlaylistAnswer & { id: number }> {
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
    const id = await db.write(async (trx, atEnd) => {
      const slot = await reservePlaylistSlot(trx, userId, limits.playlistsPerUser);
      if (slot === undefined) {
        throw ApiError.conflict(
          `You have reached the limit of ${limits.playlistsPerUser} playlists; delete one to make room.`,
        );
      }
      const playlistId = await playlists.insertPlaylist(trx, userId, input.name, Date.now());
      await playlists.insertEntries(trx, playlistId, input.songIds);
      await playlists.insertSearchDocument(trx, db.dialect, userId, slot, playlistId, doc, atEnd);
      return playlistId;
    });
    const created = songs.map((s) => ({ id: s.id, title: s.title, artist: s.artist }));
    return { id, ...playlistAnswer({ id, name: input.name, songs: created }) };
  }

  return {
    create(userId: number, input: NewPlaylist): Promise<PlaylistAnswer & { id: number }> {
      // A long playlist takes tens of milliseconds of the event loop to check, index and write: a few at a time.
      return input.songIds.length > LONG_PLAYLIST
        ? longCreates.run(() => create(userId, input))
        : create(userId, input);
    },

    /** The owner's playlist as JSON bytes with its ETag; 404 or 410 otherwise. */
    async get(userId: number, id: number): Promise<PlaylistAnswer> {
      const synced = cache.sync();
      if (synced === undefined) {
        // PostgreSQL: one indexed read confirms that the playlist is still there, and whose it is.
        const row = await playlists.confirmPlaylist(q, id);
        if (row === undefined || row.ownerId !== userId) throw await missing(id, userId);
        cache.observe(row.version);
        const kept = cache.get(id, row.version);
        if (kept !== undefined) return kept;
      } else {
        // SQLite: nothing committed anywhere since the cache caught up, or the cache has caught up with it.
        const kept = cache.get(id, typeof synced === 'number' ? synced : await synced);
        if (kept !== undefined) {
          if (kept.ownerId === userId) return kept;
          throw await missing(id, userId);
        }
      }
      const generation = cache.generation;
      const found = await playlists.findPlaylistWithSongs(q, id, userId);
      if (found === undefined) throw await missing(id, userId);
      cache.observe(found.version);
      const entry = { ...playlistAnswer(found.playlist), id, ownerId: userId, version: found.version };
      cache.put(entry, generation);
      return entry;
    },

    /** The owner's playlist with what the catalog knows of its songs, for the playlist files; 404 or 410 otherwise. */
    async exportable(userId: number, id: number): Promise<ExportPlaylist> {
      const found = await playlists.findPlaylistForExport(q, id, userId);
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
      cache.forget(id);
    },

    /** A page of the caller's playlists, as the JSON array the API answers with, and how many match in all. */
    async list(userId: number, query: PageQuery): Promise<Page> {
      const words = searchWords(query.search ?? '');
      if (words.length === 0) {
        const found = await playlists.listPlaylistIds(q, userId, query.limit, query.offset);
        if (found.version === undefined) return page([], found.total);
        cache.observe(found.version);
        return page(await answersOf(found.ids, found.version, userId), found.total);
      }
      const library = await playlists.ownerLibrary(q, db.dialect, userId);
      if (library.playlists === 0) return page([], 0);
      const { limit, offset } = query;
      const found = await playlists.searchPlaylists(q, db.dialect, userId, words, library.viaTrigrams, limit, offset);
      if (found.version === undefined) return page([], found.total);
      cache.observe(found.version);
      return page(await answersOf(found.ids, found.version, userId), found.total);
    },
  };
}

export type PlaylistService = ReturnType<typeof playlistService>;
