import type { SearchSettings } from '../config.js';
import type { Db } from '../db/database.js';
import { matchInSlices, type SearchGate } from './bounded-search.js';
import { songSlice } from './search.repository.js';

/**
 * Searches of the song catalog by words, bounded as playlist searches are (see bounded-search.ts): the catalog is
 * read a slice of songs at a time in id order, with the event loop free in between, for at most the search timeout,
 * through the gate every search shares. Without a bound a word absent from a catalog of 200 000 songs held the event
 * loop 12 ms for the count and as long again for the page, at every request.
 */
export function catalogSearch(db: Db, settings: SearchSettings, gate: SearchGate) {
  return {
    /** The ids of the songs whose search document contains every (normalised) word, in id order. */
    matching(userId: number, words: readonly string[]): Promise<number[]> {
      return gate(userId, () =>
        matchInSlices(
          (after, size) => songSlice(db.kysely, db.dialect, words, after, size),
          settings.timeoutMs,
          'the song catalog',
        ),
      );
    },
  };
}

export type CatalogSearch = ReturnType<typeof catalogSearch>;
