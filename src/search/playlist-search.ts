import { sql, type Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { SearchSettings } from '../config.js';
import type { Db, Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { catalogVersion } from '../db/playlist-changes.js';
import { containsEvery, matchInSlices, type SearchGate } from './bounded-search.js';
import { playlistDocument } from './search-text.js';

/**
 * Playlist search: each playlist's document (its name and its songs' titles, artists and genres, normalised), kept
 * by owner in `playlist_documents`, and the bounded searches that find an owner's playlists by words reading only
 * that owner's documents. Playlists and the catalog hand it what changed; the answers a search shows come from the
 * playlist cache.
 */

type Q = Kysely<Database>;

/**
 * One slice of the owner's documents after `after`, in playlist order, each with whether it contains every word
 * (documents and words are both normalised, so this is a plain substring test). Only the owner's rows are read,
 * through the key (owner, playlist): the cost depends on the owner's own library alone.
 */
function slice(db: Q, dialect: Dialect, ownerId: number, words: readonly string[], after: number, size: number) {
  return db
    .selectFrom('playlist_documents as d')
    .select([
      'd.playlist_id as id',
      containsEvery(dialect, sql<string>`d.doc`, words).as('hit'),
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
 * One slice of the documents of the playlists shared with the member after `after`, in playlist order, as `slice`
 * reads the owner's: through the key (member, playlist) of the memberships, each document by its own key.
 */
function sharedSlice(db: Q, dialect: Dialect, userId: number, words: readonly string[], after: number, size: number) {
  return db
    .selectFrom('playlist_members as m')
    .innerJoin('playlist_documents as d', (join) =>
      join.onRef('d.owner_id', '=', 'm.owner_id').onRef('d.playlist_id', '=', 'm.playlist_id'),
    )
    .select([
      'm.playlist_id as id',
      containsEvery(dialect, sql<string>`d.doc`, words).as('hit'),
      after === 0 ? catalogVersion : sql<null>`NULL`.as('catalog_version'),
    ])
    .where('m.user_id', '=', userId)
    .where(
      dialect === 'sqlite'
        ? sql<boolean>`m.playlist_id > ${after}`
        : sql<boolean>`(m.user_id, m.playlist_id) > (${userId}, ${after})`,
    )
    .orderBy('m.user_id')
    .orderBy('m.playlist_id')
    .limit(size);
}

/** Playlist ids that kept searches may hold in all (a few MB). */
const KEPT_IDS = 1_000_000;

/** The user's library version and the catalog's, in one indexed read. */
function libraryVersion(db: Q, userId: number) {
  return db.selectFrom('users').select(['library_version', catalogVersion]).where('id', '=', userId).executeTakeFirst();
}

/** Which playlists a search covers: the caller's, those shared with them, or both. */
export type SearchScope = 'own' | 'shared' | 'all';

const SCOPE_WORDS: Readonly<Record<SearchScope, string>> = {
  own: 'your playlists',
  shared: 'the playlists shared with you',
  all: 'your playlists and those shared with you',
};

/**
 * Searches of the owner's playlists, bounded (see bounded-search.ts): each reads the owner's documents a slice at a
 * time with the event loop free in between, for at most the search timeout, through the gate every search shares.
 */
export function playlistSearch(db: Db, settings: SearchSettings, gate: SearchGate) {
  // What searches of a user's own playlists found, with the user's library version they were read at: served again
  // while that version stands (any write of one of the user's documents, on any instance, counts it up). Bounded by
  // the ids held.
  const found = new LRUCache<string, { readonly ids: number[]; readonly library: number }>({
    maxSize: KEPT_IDS,
    sizeCalculation: (entry) => entry.ids.length + 16,
  });

  return {
    /**
     * The ids of the owner's playlists that contain every (normalised) word, in playlist order, with the catalog's
     * version read in the same statement as the first of them (undefined when the owner has no playlist).
     */
    async matching(ownerId: number, words: readonly string[], scope: SearchScope = 'own'): Promise<Matches> {
      if (scope !== 'own') return this.read(ownerId, words, scope);
      const key = `${ownerId} ${words.join(' ')}`;
      const now = await libraryVersion(db.kysely, ownerId);
      const kept = found.get(key);
      if (now === undefined) return { ids: [], catalogVersion: undefined };
      const library = Number(now.library_version);
      if (kept?.library === library) return { ids: kept.ids, catalogVersion: now.catalog_version };
      // Read at the version seen before the read: a write meanwhile makes the entry stale, never wrong.
      const matches = await this.read(ownerId, words, scope);
      found.set(key, { ids: matches.ids, library });
      return matches;
    },

    /** The matching ids as `matching` finds them, read from the documents. */
    read(ownerId: number, words: readonly string[], scope: SearchScope): Promise<Matches> {
      const q = db.kysely;
      const own = (after: number, size: number) => slice(q, db.dialect, ownerId, words, after, size).execute();
      const shared = (after: number, size: number) => sharedSlice(q, db.dialect, ownerId, words, after, size).execute();
      return gate(ownerId, async () => {
        let catalog: number | string | undefined;
        const ids = await matchInSlices(
          async (after, size) => {
            let rows;
            if (scope === 'all') {
              // Both slices in id order, merged and cut at `size`: the next slice starts after the last id kept, so
              // what one side read beyond it is read again then, never skipped.
              const [mine, theirs] = await Promise.all([own(after, size), shared(after, size)]);
              rows = [...mine, ...theirs].sort((a, b) => a.id - b.id).slice(0, size);
              if (after === 0) catalog = mine[0]?.catalog_version ?? theirs[0]?.catalog_version ?? undefined;
            } else {
              rows = await (scope === 'own' ? own : shared)(after, size);
              if (after === 0) catalog = rows[0]?.catalog_version ?? undefined;
            }
            return rows;
          },
          settings.timeoutMs,
          SCOPE_WORDS[scope],
        );
        return { ids, catalogVersion: catalog };
      });
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
