import { randomUUID } from 'node:crypto';
import type { Db } from '../db/database.js';
import { reindexPlaylistsWithSongs } from '../search/playlist-search.js';
import { normaliseText, searchDocument } from '../domain/search-text.js';
import {
  catalogIsEmpty,
  catchUpSongIds,
  insertSong,
  recordCatalogChange,
  songsWithIds,
  songsWithTitles,
  updateSong,
} from './catalog.repository.js';
import demoCatalog from './demo-catalog.json' with { type: 'json' };

/** One song as an import file describes it; `id` is optional. */
export interface CatalogEntry {
  id?: number | undefined;
  title: string;
  artist: string;
  album?: string | undefined;
  genre?: string | undefined;
  duration?: number | null | undefined;
}

export interface ImportResult {
  inserted: number;
  updated: number;
  unchanged: number;
}

const CHUNK = 500;

/**
 * What a song is found and chosen by, from its fields: its search document, and each text field normalised as search
 * normalises it (what smart playlist rules compare: see migration 2026-12-07-smart-playlists).
 */
export function songSearchColumns(s: { title: string; artist: string; album: string; genre: string }) {
  return {
    search_doc: searchDocument([s.title, s.artist, s.album, s.genre]),
    norm_title: normaliseText(s.title),
    norm_artist: normaliseText(s.artist),
    norm_album: normaliseText(s.album),
    norm_genre: normaliseText(s.genre),
  };
}

/**
 * Adds or updates catalog songs, idempotently: an entry with an id updates that song, one without an id
 * updates the song with the same title, artist and album, anything else is added. Playlists that hold a
 * song whose title, artist or genre changed get their search documents rebuilt. Songs it adds came into the catalog
 * at `now` (their `added`, which smart playlists sort and choose by); an update leaves a song's time as it was. An
 * import that changes songs is one `catalog` item of the change feed (`catalog_changes`, written by each of its
 * transactions that changed some).
 */
export async function importCatalog(
  db: Db,
  entries: readonly CatalogEntry[],
  onProgress: (done: number) => void = () => {},
  now: number = Date.now(),
): Promise<ImportResult> {
  const result: ImportResult = { inserted: 0, updated: 0, unchanged: 0 };
  const renamed = new Set<number>();
  // Its row in the change feed's catalog log, replaced by each transaction that changes songs.
  const importId = randomUUID();
  for (let start = 0; start < entries.length; start += CHUNK) {
    const chunk = entries.slice(start, start + CHUNK).map((e) => ({
      id: e.id,
      title: e.title,
      artist: e.artist,
      album: e.album ?? '',
      genre: e.genre ?? '',
      duration: e.duration ?? null,
    }));
    await db.kysely.transaction().execute(async (trx) => {
      const updatedBefore = result.updated;
      const ids = chunk.flatMap((e) => (e.id === undefined ? [] : [e.id]));
      const titles = [...new Set(chunk.map((e) => e.title))];
      const byId = new Map(ids.length === 0 ? [] : (await songsWithIds(trx, ids)).map((s) => [s.id, s]));
      const byKey = new Map(
        (await songsWithTitles(trx, titles)).map((s) => [`${s.title}\u0000${s.artist}\u0000${s.album}`, s]),
      );
      for (const entry of chunk) {
        const existing =
          entry.id !== undefined
            ? byId.get(entry.id)
            : byKey.get(`${entry.title}\u0000${entry.artist}\u0000${entry.album}`);
        const values = { ...entry, ...songSearchColumns(entry) };
        if (existing === undefined) {
          const { id, ...rest } = values;
          // Another process may be importing the same songs at this moment (two instances seeding at once).
          const added = await insertSong(trx, { ...(id === undefined ? rest : values), added: now });
          if (!added) result.unchanged += 1;
          else result.inserted += 1;
          continue;
        }
        const same =
          existing.title === entry.title &&
          existing.artist === entry.artist &&
          existing.album === entry.album &&
          existing.genre === entry.genre &&
          existing.duration === entry.duration;
        if (same) {
          result.unchanged += 1;
          continue;
        }
        const { id: _ignored, ...changes } = values;
        await updateSong(trx, existing.id, changes);
        if (existing.title !== entry.title || existing.artist !== entry.artist || existing.genre !== entry.genre) {
          renamed.add(existing.id);
        }
        result.updated += 1;
      }
      if (result.updated > updatedBefore) await recordCatalogChange(trx, importId, now);
    });
    onProgress(Math.min(start + CHUNK, entries.length));
  }
  // Songs inserted with their own ids leave PostgreSQL's sequence behind them.
  if (db.dialect === 'postgres' && entries.some((e) => e.id !== undefined)) {
    await catchUpSongIds(db.kysely);
  }
  if (renamed.size > 0) await reindexPlaylistsWithSongs(db, [...renamed]);
  return result;
}

/** Fills an empty catalog with the built-in demo songs; returns how many it added. */
export async function seedDemoCatalog(db: Db): Promise<number> {
  if (!(await catalogIsEmpty(db.kysely))) return 0;
  // Fixed ids, so that every fresh installation (and the specification's examples) name the same songs.
  return (
    await importCatalog(
      db,
      demoCatalog.map((song, i) => ({ ...song, id: i + 1 })),
    )
  ).inserted;
}
