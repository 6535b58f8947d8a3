import type { Db } from '../db/database.js';
import type { Limits, SearchSettings } from '../config.js';
import { ApiError } from '../http/errors.js';
import { rfc3339 } from '../http/times.js';
import type { PageQuery } from '../http/schemas.js';
import { searchTerms, type SearchGate } from '../search/bounded-search.js';
import { catalogSearch } from '../search/catalog-search.js';
import * as songs from './song.repository.js';

/** A song as the API answers it: `added` as every time is answered, RFC 3339 in UTC with milliseconds. */
export type CatalogSongAnswer = Omit<songs.CatalogSongRow, 'added'> & { readonly added: string };

const answer = ({ added, ...song }: songs.CatalogSongRow): CatalogSongAnswer => ({
  ...song,
  added: rfc3339(Number(added)),
});

/**
 * The song catalog as clients read it: a page of songs, or of those matching every search word (a bounded search,
 * one read for the page and the total), or one song.
 */
export function songService(db: Db, limits: Limits, searchSettings: SearchSettings, searchGate: SearchGate) {
  const search = catalogSearch(db, searchSettings, searchGate);
  return {
    async list(
      userId: number,
      page: PageQuery & { changedSince?: number | undefined },
    ): Promise<{ items: CatalogSongAnswer[]; total: number }> {
      const words = searchTerms(page.search, limits.searchMaxLength);
      const { changedSince } = page;
      if (changedSince !== undefined) {
        if (words.length > 0) throw ApiError.badRequest('changedSince and search cannot be used together.');
        // In id order, so that a song changed again while the pages are read moves nothing: pages skip no song.
        const [items, total] = await Promise.all([
          songs.pageOfChangedSongs(db.kysely, changedSince, page.limit, page.offset),
          songs.countChangedSongs(db.kysely, changedSince),
        ]);
        return { items: items.map(answer), total };
      }
      if (words.length === 0) {
        const [items, total] = await Promise.all([
          songs.pageOfSongs(db.kysely, page.limit, page.offset),
          songs.countSongs(db.kysely),
        ]);
        return { items: items.map(answer), total };
      }
      const ids = await search.matching(userId, words);
      const items = await songs.songsByIds(db.kysely, ids.slice(page.offset, page.offset + page.limit));
      return { items: items.map(answer), total: ids.length };
    },

    async get(id: number): Promise<CatalogSongAnswer> {
      const song = await songs.findSong(db.kysely, id);
      if (song === undefined) throw ApiError.notFound('No song has this id.');
      return answer(song);
    },
  };
}

export type SongService = ReturnType<typeof songService>;
