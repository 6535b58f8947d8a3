import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { Bounded } from '../concurrency/bounded.js';
import type { Db, Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../http/errors.js';
import { catalogVersion } from '../playlists/playlist.cache.js';
import { characterCount, containsPattern, playlistDocument } from './search-text.js';

/**
 * Playlist search: each playlist's document (its name and its songs' titles, artists and genres, normalised), kept
 * by owner in `playlist_documents`, and the bounded searches that find an owner's playlists by words reading only
 * that owner's documents. Playlists and the catalog hand it what changed; the answers a search shows come from the
 * playlist cache.
 */

type Q = Kysely<Database>;

/** How searches are bounded: each one's time over the caller's library, and how many run at once. */
export interface SearchSettings {
  /** A search still reading the caller's documents after this long answers 503. */
  readonly timeoutMs: number;
  /** Searches that read documents at the same time, across all users; one more per user waits for the first. */
  readonly concurrency: number;
}

/**
 * A slice is read in one query. Its size adapts to what the documents cost, so that one slice takes about
 * SLICE_TARGET_MS whatever they hold: long, repetitive documents give small slices, ordinary ones large; and the
 * event loop is let go whenever the search has held it that long. The first slice reads an ordinary library of a
 * hundred playlists at once; at worst it holds the event loop a few milliseconds: 128 names that normalise to
 * 1 200 characters of one repeated sequence against a 200-character word take 2.3 ms (18 µs each with instr()),
 * 128 playlists of 1 000 distinct songs (48 KB documents) 8 ms (62 µs each).
 */
const SLICE_FIRST = 128;

/** Words up to this many characters are matched with SQLite's LIKE, longer ones with instr() (see `slice`). */
const LIKE_UP_TO = 12;
const SLICE_MAX = 4096;
const SLICE_TARGET_MS = 2;

/** The next slice's size from how long this one took: toward the target, at most sixteen times larger or half. */
export function nextSliceSize(size: number, elapsedMs: number): number {
  const scaled = Math.floor((size * SLICE_TARGET_MS) / Math.max(elapsedMs, 0.01));
  return Math.max(1, Math.min(SLICE_MAX, size * 16, Math.max(Math.floor(size / 2), scaled)));
}

/**
 * One slice of the owner's documents after `after`, in playlist order, each with whether it contains every word
 * (documents and words are both normalised, so this is a plain substring test). Only the owner's rows are read,
 * through the key (owner, playlist): the cost depends on the owner's own library alone.
 */
function slice(db: Q, dialect: Dialect, ownerId: number, words: readonly string[], after: number, size: number) {
  // SQLite's LIKE decodes and compares a character at a time from every place the word could start: quick on
  // ordinary text (2.6 µs a 1 KB document, where instr() takes 3.7), but with a long word against text that repeats
  // it, 355 µs a document (a 199-letter word, 1 200 letters) where instr(), which compares bytes, takes 18. Up to 12
  // characters LIKE's work stays bounded (at worst about 35 µs for the 600 letters 200 × `ⅲ` make); longer words
  // go to instr(). PostgreSQL's strpos() compares bytes.
  const contains = (word: string) =>
    dialect === 'postgres'
      ? sql<boolean>`strpos(d.doc, ${word}) > 0`
      : characterCount(word) <= LIKE_UP_TO
        ? sql<boolean>`d.doc LIKE ${containsPattern(word)} ESCAPE '\\'`
        : sql<boolean>`instr(d.doc, ${word}) > 0`;
  return db
    .selectFrom('playlist_documents as d')
    .select([
      'd.playlist_id as id',
      sql<number | boolean>`${sql.join(words.map(contains), sql` AND `)}`.as('hit'),
      // The first slice reads the catalog's version with the ids, for the answers built from them (see pageOfIds).
      after === 0 ? catalogVersion : sql<null>`NULL`.as('catalog_version'),
    ])
    .where('d.owner_id', '=', ownerId)
    .where(
      dialect === 'sqlite'
        ? sql<boolean>`d.playlist_id > ${after}`
        : // As a row comparison only the key (owner, playlist) can serve it: with a range on the playlist id alone,
          // PostgreSQL's planner may read every owner's later documents through the index of playlist ids.
          sql<boolean>`(d.owner_id, d.playlist_id) > (${ownerId}, ${after})`,
    )
    .orderBy('d.owner_id')
    .orderBy('d.playlist_id')
    .limit(size);
}

/**
 * Searches of the owner's playlists, bounded: each reads the owner's documents a slice at a time with the event loop
 * free in between, for at most `timeoutMs` (then 503); one at a time per user, and `concurrency` at once in all.
 */
export function playlistSearch(db: Db, settings: SearchSettings) {
  const busy = () => ApiError.unavailable('The service is busy with other searches; try again shortly.', 1);
  const searches = new Bounded({ limit: settings.concurrency, queue: 256, waitMs: settings.timeoutMs, refuse: busy });
  const perUser = new Map<number, Bounded>();
  const oneAtATime = () =>
    ApiError.tooManyRequests(1, 'Your previous searches are still running; wait for their answers first.');

  /** The ids of the owner's playlists that contain every word, in playlist order, and the catalog's version. */
  async function matchingIds(ownerId: number, words: readonly string[]): Promise<Matches> {
    const deadline = performance.now() + settings.timeoutMs;
    const ids: number[] = [];
    let catalog: number | string | undefined;
    let after = 0;
    let size = SLICE_FIRST;
    let held = performance.now();
    for (;;) {
      const started = performance.now();
      const rows = await slice(db.kysely, db.dialect, ownerId, words, after, size).execute();
      const finished = performance.now();
      for (const row of rows) if (Number(row.hit) === 1) ids.push(row.id);
      catalog ??= rows[0]?.catalog_version ?? undefined;
      const last = rows[rows.length - 1];
      if (last === undefined || rows.length < size) return { ids, catalogVersion: catalog };
      if (finished > deadline) {
        throw ApiError.unavailable(
          `This search read your playlists for longer than ${settings.timeoutMs / 1000} s and was stopped; ` +
            'try again shortly.',
          1,
        );
      }
      after = last.id;
      size = nextSliceSize(size, finished - started);
      if (finished - held >= SLICE_TARGET_MS) {
        await nextTurn();
        held = performance.now();
      }
    }
  }

  return {
    /**
     * The ids of the owner's playlists that contain every (normalised) word, in playlist order, with the catalog's
     * version read in the same statement as the first of them (undefined when the owner has no playlist).
     */
    async matching(ownerId: number, words: readonly string[]): Promise<Matches> {
      let mine = perUser.get(ownerId);
      if (mine === undefined) {
        mine = new Bounded({ limit: 1, queue: 1, refuse: oneAtATime });
        perUser.set(ownerId, mine);
      }
      const gate = mine;
      try {
        return await gate.run(() => searches.run(() => matchingIds(ownerId, words)));
      } finally {
        if (gate.active === 0 && gate.waiting === 0) perUser.delete(ownerId);
      }
    },
  };
}

export type PlaylistSearch = ReturnType<typeof playlistSearch>;

/** What a search found: every matching playlist id, in order, and the catalog version read with them. */
export interface Matches {
  readonly ids: number[];
  readonly catalogVersion: number | string | undefined;
}

/** The playlist's search document, in the transaction that creates the playlist. */
export async function addPlaylistDocument(db: Q, ownerId: number, playlistId: number, doc: string): Promise<void> {
  await db.insertInto('playlist_documents').values({ owner_id: ownerId, playlist_id: playlistId, doc }).execute();
}

/** Replaces the playlist's document: a catalog change of its songs' text, or an edit, in its transaction. */
export async function replacePlaylistDocument(db: Q, ownerId: number, playlistId: number, doc: string): Promise<void> {
  await db
    .updateTable('playlist_documents')
    .set({ doc })
    .where('owner_id', '=', ownerId)
    .where('playlist_id', '=', playlistId)
    .execute();
}

/** Recomputes the documents of the playlists that hold any of these songs (the catalog changed their text). */
export async function reindexPlaylistsWithSongs(db: Db, songIds: readonly number[]): Promise<void> {
  const playlistIds = (
    await db.kysely
      .selectFrom('playlist_songs')
      .select('playlist_id')
      .distinct()
      .where('song_id', 'in', songIds)
      .execute()
  ).map((r) => r.playlist_id);
  for (const playlistId of playlistIds) {
    await db.kysely.transaction().execute(async (trx) => {
      const playlist = await trx
        .selectFrom('playlists')
        .select(['name', 'owner_id'])
        .where('id', '=', playlistId)
        .executeTakeFirst();
      if (playlist === undefined) return;
      const songs = await trx
        .selectFrom('playlist_songs as ps')
        .innerJoin('songs as s', 's.id', 'ps.song_id')
        .select(['s.title', 's.artist', 's.genre'])
        .where('ps.playlist_id', '=', playlistId)
        .execute();
      const doc = playlistDocument(playlist.name, songs);
      await replacePlaylistDocument(trx, playlist.owner_id, playlistId, doc);
    });
  }
}
