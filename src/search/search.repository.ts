import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Dialect } from '../db/database.js';
import { catalogVersion } from '../db/playlist-changes.js';
import type { Database } from '../db/schema.js';
import { characterCount, containsPattern } from '../domain/search-text.js';
import { compiledOnce } from '../db/compiled.js';
import { prepared } from '../db/postgres.js';
import { memberships, ownedBy } from '../db/access-rule.js';

/**
 * What searches read and write: the playlists' documents (`playlist_documents`, by owner), the slices of them and of
 * the catalog that bounded searches read, and the substring test both use.
 */

type Q = Kysely<Database>;

/** Words up to this many characters are matched with SQLite's LIKE, longer ones with instr() (see `contains`). */
const LIKE_UP_TO = 12;

/**
 * Whether a normalised text column contains every normalised word, as a plain substring test. SQLite's LIKE decodes
 * and compares a character at a time from every place the word could start: quick on ordinary text (2.6 µs a 1 KB
 * document, where instr() takes 3.7), but with a long word against text that repeats it, 355 µs a document (a
 * 199-letter word, 1 200 letters) where instr(), which compares bytes, takes 18. Up to 12 characters LIKE's work
 * stays bounded (at worst about 35 µs for the 600 letters 200 × `ⅲ` make); longer words go to instr().
 * PostgreSQL's strpos() compares bytes.
 */
export function containsEvery(dialect: Dialect, column: RawBuilder<string>, words: readonly string[]) {
  const contains = (word: string) =>
    dialect === 'postgres'
      ? sql<boolean>`strpos(${column}, ${word}) > 0`
      : characterCount(word) <= LIKE_UP_TO
        ? sql<boolean>`${column} LIKE ${containsPattern(word)} ESCAPE '\\'`
        : sql<boolean>`instr(${column}, ${word}) > 0`;
  return sql<number | boolean>`${sql.join(words.map(contains), sql` AND `)}`;
}

/**
 * One slice of the owner's documents after `after`, in playlist order, each with whether it contains every word
 * (documents and words are both normalised, so this is a plain substring test). Only the owner's rows are read,
 * through the key (owner, playlist): the cost depends on the owner's own library alone.
 */
export function documentSlice(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  words: readonly string[],
  after: number,
  size: number,
) {
  return db
    .selectFrom('playlist_documents as d')
    .select([
      'd.playlist_id as id',
      containsEvery(dialect, sql<string>`d.doc`, words).as('hit'),
      // The first slice reads the catalog's version with the ids, for the answers built from them (see pageOfIds).
      after === 0 ? catalogVersion : sql<null>`NULL`.as('catalog_version'),
    ])
    .where(ownedBy(ownerId, 'd'))
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
 * One slice of the documents of the playlists shared with the member after `after`, in playlist order, as
 * `documentSlice` reads the owner's: through the key (member, playlist) of the memberships, each document by its own key.
 */
export function sharedDocumentSlice(
  db: Q,
  dialect: Dialect,
  userId: number,
  words: readonly string[],
  after: number,
  size: number,
) {
  return memberships(db, userId)
    .innerJoin('playlist_documents as d', (join) =>
      join.onRef('d.owner_id', '=', 'm.owner_id').onRef('d.playlist_id', '=', 'm.playlist_id'),
    )
    .select([
      'm.playlist_id as id',
      containsEvery(dialect, sql<string>`d.doc`, words).as('hit'),
      after === 0 ? catalogVersion : sql<null>`NULL`.as('catalog_version'),
    ])
    .where(
      dialect === 'sqlite'
        ? sql<boolean>`m.playlist_id > ${after}`
        : sql<boolean>`(m.user_id, m.playlist_id) > (${userId}, ${after})`,
    )
    .orderBy('m.user_id')
    .orderBy('m.playlist_id')
    .limit(size);
}

/** The user's library version and the catalog's, in one indexed read: every search of one's own playlists asks. */
const readLibraryVersion = compiledOnce(
  'library-version',
  (p: { userId: number }) => (q) =>
    q.selectFrom('users').select(['library_version', catalogVersion]).where('id', '=', p.userId),
);

export async function libraryVersion(db: Q, userId: number) {
  return (await readLibraryVersion(db, { userId })).rows[0];
}

/** What `libraryVersions` reads for one search: the user, and the playlists of the page it would show (if any). */
export interface LibraryVersionRead {
  readonly userId: number;
  readonly ids: readonly number[] | undefined;
}

/**
 * PostgreSQL: `libraryVersion` for several searches in one statement, with the current versions of the playlists
 * each names (`[id, version]` pairs, a deleted one absent; null when it names none or none is left): the searches of
 * one turn confirm what they show in one round trip. A row for each read whose user exists, named by its place (`n`).
 */
export async function libraryVersions(db: Q, reads: readonly LibraryVersionRead[]) {
  const users = reads.map((read) => read.userId);
  // Each read's ids as an array literal, so that reads of any length go in one array parameter.
  const ids = reads.map((read) => (read.ids === undefined ? null : `{${read.ids.join(',')}}`));
  const { rows } = await sql<{
    n: number | string;
    library_version: number | string;
    catalog_version: number | string;
    versions: [number, number][] | null;
  }>`${prepared('library-versions')}
    SELECT r.n, u.library_version, (SELECT version FROM catalog_version) AS catalog_version,
      (SELECT json_agg(json_build_array(p.id, p.version)) FROM playlists p WHERE p.id = ANY(r.ids::bigint[]))
        AS versions
    FROM unnest(${users}::bigint[], ${ids}::text[]) WITH ORDINALITY AS r (user_id, ids, n)
    JOIN users u ON u.id = r.user_id`.execute(db);
  return rows;
}

/** The playlist's search document, in the transaction that creates the playlist. */
const insertDocument = compiledOnce(
  'insert-playlist-document',
  (p: { ownerId: number; playlistId: number; doc: string }) => (q) =>
    q.insertInto('playlist_documents').values({ owner_id: p.ownerId, playlist_id: p.playlistId, doc: p.doc }),
);

export async function addPlaylistDocument(db: Q, ownerId: number, playlistId: number, doc: string): Promise<void> {
  await insertDocument(db, { ownerId, playlistId, doc });
}

/** Replaces the playlist's document: a catalog change of its songs' text, or an edit, in its transaction. */
const updateDocument = compiledOnce(
  'update-playlist-document',
  (p: { ownerId: number; playlistId: number; doc: string }) => (q) =>
    q
      .updateTable('playlist_documents')
      .set({ doc: p.doc })
      .where('owner_id', '=', p.ownerId)
      .where('playlist_id', '=', p.playlistId),
);

export async function replacePlaylistDocument(db: Q, ownerId: number, playlistId: number, doc: string): Promise<void> {
  await updateDocument(db, { ownerId, playlistId, doc });
}

/** The playlists that hold any of these songs. */
export async function playlistsWithSongs(db: Q, songIds: readonly number[]): Promise<number[]> {
  const rows = await db
    .selectFrom('playlist_songs')
    .select('playlist_id')
    .distinct()
    .where('song_id', 'in', songIds)
    .execute();
  return rows.map((row) => row.playlist_id);
}

/** What the playlist's document is made of: its owner, its name and its songs' text; undefined when it is gone. */
export async function documentSource(
  db: Q,
  playlistId: number,
): Promise<{ ownerId: number; name: string; songs: { title: string; artist: string; genre: string }[] } | undefined> {
  const playlist = await db
    .selectFrom('playlists')
    .select(['name', 'owner_id'])
    .where('id', '=', playlistId)
    .executeTakeFirst();
  if (playlist === undefined) return undefined;
  const songs = await db
    .selectFrom('playlist_songs as ps')
    .innerJoin('songs as s', 's.id', 'ps.song_id')
    .select(['s.title', 's.artist', 's.genre'])
    .where('ps.playlist_id', '=', playlistId)
    .execute();
  return { ownerId: playlist.owner_id, name: playlist.name, songs };
}

/** One slice of the catalog after song `after`, in id order, each song with whether its document contains every word. */
export function songSlice(db: Q, dialect: Dialect, words: readonly string[], after: number, size: number) {
  return db
    .selectFrom('songs')
    .select(['id', containsEvery(dialect, sql<string>`search_doc`, words).as('hit')])
    .where('id', '>', after)
    .orderBy('id')
    .limit(size)
    .execute();
}
