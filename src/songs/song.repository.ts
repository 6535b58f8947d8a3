import { sql, type Kysely } from 'kysely';
import { compiledRows } from '../db/compiled.js';
import type { Dialect } from '../db/database.js';
import { catalogVersion, readCatalogVersion } from '../db/playlist-changes.js';
import type { Database, SongRow } from '../db/schema.js';

type Q = Kysely<Database>;

/** A song as the songs API answers it (`added` in Unix ms, a bigint's text on PostgreSQL). */
export type CatalogSongRow = Pick<SongRow, 'id' | 'title' | 'artist' | 'album' | 'genre' | 'duration' | 'added'>;

const COLUMNS = ['id', 'title', 'artist', 'album', 'genre', 'duration', 'added'] as const;

// Ids per IN list: well under SQLite's limit of bound variables.
const LOOKUP_CHUNK = 5000;

/** Lists of up to this many ids are read by a statement compiled once for their count (db/compiled.ts). */
const COMPILED_LOOKUP = 100;

const songsOfIds = compiledRows(
  'songs-of-ids',
  (_p: object, ids: readonly { id: number }[]) => (q) =>
    q
      .selectFrom('songs')
      .select(['id', 'title', 'artist', 'genre', catalogVersion])
      .where(
        'id',
        'in',
        ids.map((row) => row.id),
      ),
);

/** The songs of these ids (at most LOOKUP_CHUNK), each with the catalog's version read in the same statement. */
async function songsWithCatalogVersion(db: Q, ids: readonly number[]) {
  if (ids.length <= COMPILED_LOOKUP)
    return (
      await songsOfIds(
        db,
        {},
        ids.map((id) => ({ id })),
      )
    ).rows;
  return db
    .selectFrom('songs')
    .select(['id', 'title', 'artist', 'genre', catalogVersion])
    .where('id', 'in', ids)
    .execute();
}

/** What a playlist write needs of a catalog song: its answer's fields and its search document's. */
export type CatalogSong = Pick<SongRow, 'id' | 'title' | 'artist' | 'genre'>;

/** The catalog rows of these ids (each once, in no particular order); unknown ids are left out. */
export async function findSongsByIds(
  db: Q,
  ids: readonly number[],
): Promise<Pick<SongRow, 'id' | 'title' | 'artist' | 'genre'>[]> {
  const distinct = [...new Set(ids)];
  const rows: Pick<SongRow, 'id' | 'title' | 'artist' | 'genre'>[] = [];
  for (let start = 0; start < distinct.length; start += LOOKUP_CHUNK) {
    const chunk = distinct.slice(start, start + LOOKUP_CHUNK);
    for (const { catalog_version: _, ...song } of await songsWithCatalogVersion(db, chunk)) rows.push(song);
  }
  return rows;
}

/**
 * As findSongsByIds, and the catalog's version read in the first statement, so before the songs (a playlist's answer
 * made of them is labelled with it: playlists/playlist.render.ts); read alone when there are no songs to read.
 */
export async function findSongsAtCatalogVersion(
  db: Q,
  ids: readonly number[],
): Promise<{ songs: Pick<SongRow, 'id' | 'title' | 'artist' | 'genre'>[]; catalogVersion: number }> {
  const distinct = [...new Set(ids)];
  const first = distinct.slice(0, LOOKUP_CHUNK);
  const rows = first.length === 0 ? [] : await songsWithCatalogVersion(db, first);
  const songs: Pick<SongRow, 'id' | 'title' | 'artist' | 'genre'>[] = rows.map(
    ({ catalog_version: _, ...song }) => song,
  );
  if (distinct.length > LOOKUP_CHUNK) songs.push(...(await findSongsByIds(db, distinct.slice(LOOKUP_CHUNK))));
  const version = rows[0]?.catalog_version;
  return { songs, catalogVersion: version === undefined ? await readCatalogVersion(db) : Number(version) };
}

export function findSong(db: Q, id: number): Promise<CatalogSongRow | undefined> {
  return db.selectFrom('songs').select(COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** A page of the catalog in id order. */
export function pageOfSongs(db: Q, limit: number, offset: number): Promise<CatalogSongRow[]> {
  return db.selectFrom('songs').select(COLUMNS).orderBy('id').limit(limit).offset(offset).execute();
}

/** A page of the songs changed after catalog version `after` (`changed_in`, set by a trigger), in id order. */
export function pageOfChangedSongs(db: Q, after: number, limit: number, offset: number): Promise<CatalogSongRow[]> {
  return db
    .selectFrom('songs')
    .select(COLUMNS)
    .where('changed_in', '>', after)
    .orderBy('id')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** How many songs changed after catalog version `after` (a range of the index `songs_changed`). */
export async function countChangedSongs(db: Q, after: number): Promise<number> {
  const row = await db
    .selectFrom('songs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('changed_in', '>', after)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * How many songs the catalog holds, read from one row that triggers on `songs` keep (migration
 * 2026-12-10-edit-keys-and-song-count) rather than counted.
 */
export async function countSongs(db: Q): Promise<number> {
  const row = await db.selectFrom('catalog_version').select('songs').executeTakeFirstOrThrow();
  return Number(row.songs);
}

/** The catalog rows of these ids (a page: at most the page limit), in id order. */
export async function songsByIds(db: Q, ids: readonly number[]): Promise<CatalogSongRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('songs').select(COLUMNS).where('id', 'in', ids).orderBy('id').execute();
}

/** Titles per statement. */
const TITLES_PER_READ = 200;

/** A song's normalised title, the first line of its search document, as the index `songs_title_key` is built. */
const titleKey = (dialect: Dialect) =>
  dialect === 'sqlite'
    ? sql`substr(search_doc, 1, instr(search_doc || char(10), char(10)) - 1)`
    : sql`split_part(search_doc, E'\n', 1)`;

/**
 * Catalog songs whose normalised title is one of these (a song's search document starts with its normalised title,
 * see `songDocument`), in id order: the candidates an imported track is matched among. Index lookups, whatever the
 * catalog's size.
 */
export async function findSongsByNormalisedTitles(
  db: Q,
  dialect: Dialect,
  titles: readonly string[],
): Promise<Pick<SongRow, 'id' | 'title' | 'artist' | 'album' | 'genre'>[]> {
  const rows: Pick<SongRow, 'id' | 'title' | 'artist' | 'album' | 'genre'>[] = [];
  const distinct = [...new Set(titles)].filter((title) => title !== '');
  for (let start = 0; start < distinct.length; start += TITLES_PER_READ) {
    const chunk = distinct.slice(start, start + TITLES_PER_READ);
    rows.push(
      ...(await db
        .selectFrom('songs')
        .select(['id', 'title', 'artist', 'album', 'genre'])
        .where(sql<boolean>`${titleKey(dialect)} IN (${sql.join(chunk)})`)
        .orderBy('id')
        .execute()),
    );
  }
  return rows.sort((a, b) => a.id - b.id);
}
