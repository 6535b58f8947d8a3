import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import type { PageQuery } from '../http/schemas.js';
import { searchWords } from '../search/search-text.js';
import * as songs from './song.repository.js';

/** The song catalog as clients read it: a page of songs matching every search word, or one song. */
export function songService(db: Db) {
  return {
    async list(page: PageQuery): Promise<{ items: songs.CatalogSongRow[]; total: number }> {
      const words = searchWords(page.search ?? '');
      const [items, total] = await Promise.all([
        songs.searchSongs(db.kysely, words, page.limit, page.offset),
        songs.countSongs(db.kysely, words),
      ]);
      return { items, total };
    },

    async get(id: number): Promise<songs.CatalogSongRow> {
      const song = await songs.findSong(db.kysely, id);
      if (song === undefined) throw ApiError.notFound('No song has this id.');
      return song;
    },
  };
}

export type SongService = ReturnType<typeof songService>;
