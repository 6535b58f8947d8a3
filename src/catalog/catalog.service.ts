import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { reindexPlaylistsWithSongs } from '../search/playlist-search.js';
import { searchDocument } from '../search/search-text.js';
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

const songDocument = (s: { title: string; artist: string; album: string; genre: string }) =>
  searchDocument([s.title, s.artist, s.album, s.genre]);

/**
 * Adds or updates catalog songs, idempotently: an entry with an id updates that song, one without an id
 * updates the song with the same title, artist and album, anything else is added. Playlists that hold a
 * song whose title, artist or genre changed get their search documents rebuilt.
 */
export async function importCatalog(
  db: Db,
  entries: readonly CatalogEntry[],
  onProgress: (done: number) => void = () => {},
): Promise<ImportResult> {
  const result: ImportResult = { inserted: 0, updated: 0, unchanged: 0 };
  const renamed = new Set<number>();
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
      const ids = chunk.flatMap((e) => (e.id === undefined ? [] : [e.id]));
      const titles = [...new Set(chunk.map((e) => e.title))];
      const byId = new Map(
        ids.length === 0
          ? []
          : (await trx.selectFrom('songs').selectAll().where('id', 'in', ids).execute()).map((s) => [s.id, s]),
      );
      const byKey = new Map(
        (await trx.selectFrom('songs').selectAll().where('title', 'in', titles).execute()).map((s) => [
          `${s.title}\u0000${s.artist}\u0000${s.album}`,
          s,
        ]),
      );
      for (const entry of chunk) {
        const existing =
          entry.id !== undefined
            ? byId.get(entry.id)
            : byKey.get(`${entry.title}\u0000${entry.artist}\u0000${entry.album}`);
        const values = { ...entry, search_doc: songDocument(entry) };
        if (existing === undefined) {
          const { id, ...rest } = values;
          // Another process may be importing the same songs at this moment (two instances seeding at once).
          const added = await trx
            .insertInto('songs')
            .values(id === undefined ? rest : values)
            .onConflict((oc) => oc.doNothing())
            .executeTakeFirst();
          if (added.numInsertedOrUpdatedRows === 0n) result.unchanged += 1;
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
        await trx.updateTable('songs').set(changes).where('id', '=', existing.id).execute();
        if (existing.title !== entry.title || existing.artist !== entry.artist || existing.genre !== entry.genre) {
          renamed.add(existing.id);
        }
        result.updated += 1;
      }
    });
    onProgress(Math.min(start + CHUNK, entries.length));
  }
  // Songs inserted with their own ids leave PostgreSQL's sequence behind them.
  if (db.dialect === 'postgres' && entries.some((e) => e.id !== undefined)) {
    await sql`SELECT setval(pg_get_serial_sequence('songs', 'id'), GREATEST((SELECT max(id) FROM songs), 1))`.execute(
      db.kysely,
    );
  }
  if (renamed.size > 0) await reindexPlaylistsWithSongs(db, [...renamed]);
  return result;
}

/** Fills an empty catalog with the built-in demo songs; returns how many it added. */
export async function seedDemoCatalog(db: Db): Promise<number> {
  const any = await db.kysely.selectFrom('songs').select('id').limit(1).executeTakeFirst();
  if (any !== undefined) return 0;
  // Fixed ids, so that every fresh installation (and the specification's examples) name the same songs.
  return (
    await importCatalog(
      db,
      demoCatalog.map((song, i) => ({ ...song, id: i + 1 })),
    )
  ).inserted;
}
