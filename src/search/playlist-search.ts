import { LRUCache } from 'lru-cache';
import type { SearchSettings } from '../config.js';
import { batchedPerTurn } from '../db/batched.js';
import type { Db } from '../db/database.js';
import { matchInSlices, type SearchGate } from './bounded-search.js';
import { playlistDocument } from '../domain/search-text.js';
import {
  documentSlice,
  documentSource,
  libraryVersion,
  libraryVersions,
  type LibraryVersionRead,
  playlistsWithSongs,
  replacePlaylistDocument,
  sharedDocumentSlice,
} from './search.repository.js';

/**
 * Playlist search: each playlist's document (its name and its songs' titles, artists and genres, normalised), kept
 * by owner in `playlist_documents` (search.repository.ts), and the bounded searches that find an owner's playlists by words reading only
 * that owner's documents. Playlists and the catalog hand it what changed; the answers a search shows come from the
 * playlist cache.
 */

/** Playlist ids that kept searches may hold in all (a few MB). */
const KEPT_IDS = 1_000_000;

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
  // while that version stands (any write of one of the user's documents, on any instance, counts it up). On SQLite
  // also with what every connection had committed when that version was confirmed (`committed`): while nothing has
  // been committed since, the version stands without a statement. Bounded by the ids held.
  const found = new LRUCache<string, KeptSearch>({
    maxSize: KEPT_IDS,
    sizeCalculation: (entry) => entry.ids.length + 16,
  });

  // PostgreSQL: the library versions that the searches of one turn confirm, read in one statement.
  const versionReads =
    db.dialect === 'postgres'
      ? batchedPerTurn((reads: readonly LibraryVersionRead[]) => libraryVersions(db.kysely, reads))
      : undefined;

  return {
    /**
     * The ids of the owner's playlists that contain every (normalised) word, in playlist order, with the catalog's
     * version read in the same statement as the first of them (undefined when the owner has no playlist).
     */
    async matching(
      ownerId: number,
      words: readonly string[],
      scope: SearchScope = 'own',
      page?: { readonly offset: number; readonly limit: number },
      committed?: string,
    ): Promise<Matches> {
      if (scope !== 'own') return this.read(ownerId, words, scope);
      const key = `${ownerId} ${words.join(' ')}`;
      // SQLite, `committed` given by a request that has caught up with every connection's commits: a search kept
      // when they stood where they stand now was confirmed since the last commit anywhere.
      if (committed !== undefined) {
        const same = found.get(key);
        if (same?.committed === committed) return { ids: same.ids, catalogVersion: same.catalog };
      }
      // PostgreSQL, a search kept here: the page it would show has its versions read with the library's.
      const before = db.dialect === 'postgres' ? found.peek(key) : undefined;
      const pageIds =
        before === undefined || page === undefined
          ? undefined
          : before.ids.slice(page.offset, page.offset + page.limit);
      const read = versionReads === undefined ? undefined : await versionReads({ userId: ownerId, ids: pageIds });
      const now = versionReads === undefined ? await libraryVersion(db.kysely, ownerId) : read;
      const withVersions = pageIds === undefined ? undefined : read;
      const kept = found.get(key);
      if (now === undefined) return { ids: [], catalogVersion: undefined };
      const library = Number(now.library_version);
      if (kept?.library === library) {
        if (committed !== undefined) found.set(key, { ...kept, catalog: now.catalog_version, committed });
        const versions =
          withVersions !== undefined && kept === before
            ? new Map<number, number>(withVersions.versions ?? [])
            : undefined;
        return { ids: kept.ids, catalogVersion: now.catalog_version, ...(versions === undefined ? {} : { versions }) };
      }
      // Read at the version seen before the read (and, on SQLite, at what was committed before that): a write
      // meanwhile makes the entry stale, never wrong.
      const matches = await this.read(ownerId, words, scope);
      found.set(key, { ids: matches.ids, library, catalog: matches.catalogVersion, committed });
      return matches;
    },

    /** The matching ids as `matching` finds them, read from the documents. */
    read(ownerId: number, words: readonly string[], scope: SearchScope): Promise<Matches> {
      const q = db.kysely;
      const own = (after: number, size: number) => documentSlice(q, db.dialect, ownerId, words, after, size).execute();
      const shared = (after: number, size: number) =>
        sharedDocumentSlice(q, db.dialect, ownerId, words, after, size).execute();
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

/** A search of a user's own playlists kept in memory (see `playlistSearch`). */
interface KeptSearch {
  readonly ids: number[];
  /** The user's library version the ids were confirmed at. */
  readonly library: number;
  /** The catalog version read with it. */
  readonly catalog: number | string | undefined;
  /** SQLite: what every connection had committed before that library version was read (`Freshness.committed`). */
  readonly committed: string | undefined;
}

/** What a search found: every matching playlist id, in order, and the catalog version read with them. */
export interface Matches {
  readonly ids: number[];
  readonly catalogVersion: number | string | undefined;
  /**
   * PostgreSQL, a kept search asked for a page: the current versions of the page's playlists (`ids` sliced as the
   * page asked), read with the library version; a playlist deleted since is not among them.
   */
  readonly versions?: ReadonlyMap<number, number>;
}

/** Recomputes the documents of the playlists that hold any of these songs (the catalog changed their text). */
export async function reindexPlaylistsWithSongs(db: Db, songIds: readonly number[]): Promise<void> {
  for (const playlistId of await playlistsWithSongs(db.kysely, songIds)) {
    await db.kysely.transaction().execute(async (trx) => {
      const source = await documentSource(trx, playlistId);
      if (source === undefined) return;
      const doc = playlistDocument(source.name, source.songs);
      await replacePlaylistDocument(trx, source.ownerId, playlistId, doc);
    });
  }
}
