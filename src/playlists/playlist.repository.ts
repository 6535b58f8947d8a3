import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { FinalWrite } from '../db/write-batch.js';
import { characterCount, containsPattern, ftsPhrase } from '../search/search-text.js';
import type { ExportPlaylist, ExportTrack } from '../formats/playlist-format.js';
import type { PlaylistWithSongs } from './playlist.schemas.js';

type Q = Kysely<Database>;

export interface PlaylistHead {
  id: number;
  name: string;
}

export interface PlaylistSongRow {
  playlist_id: number;
  position: number;
  id: number;
  title: string;
  artist: string;
  /** The catalog version, read in the same statement as the song. */
  version: number | string;
}

/** A bigint computed in SQL (a count, the catalog version), typed loosely and read with Number(). */
type BigintColumn = number | string;

/**
 * The catalog version as a column, read in the same statement (and so the same snapshot) as the rows it comes
 * with: a cached answer is tied to the version its songs were read at.
 */
const catalogVersion = sql<BigintColumn>`(SELECT version FROM catalog_version)`.as('version');

// Rows per INSERT statement: well under SQLite's limit of bound variables.
const INSERT_CHUNK = 250;

export async function insertPlaylist(db: Q, ownerId: number, name: string, now: number): Promise<number> {
  const row = await db
    .insertInto('playlists')
    .values({ owner_id: ownerId, name, created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * The playlist's entries, a statement per 250 songs. Between two statements the event loop serves other requests
 * (a thousand entries take SQLite, which runs on the event loop, about 10 ms).
 */
export async function insertEntries(db: Q, playlistId: number, songIds: readonly number[]): Promise<void> {
  for (let start = 0; start < songIds.length; start += INSERT_CHUNK) {
    if (start > 0) await nextTurn();
    const values = songIds
      .slice(start, start + INSERT_CHUNK)
      .map((songId, i) => ({ playlist_id: playlistId, position: start + i, song_id: songId }));
    await db.insertInto('playlist_songs').values(values).execute();
  }
}

/** What a write needs to know of the owner's library, from reserving its slot. */
export interface OwnerSlot {
  readonly playlists: number;
  readonly searchIndexed: boolean;
}

/**
 * The playlist's search document. On SQLite, once the owner's library outgrows `SCAN_OWNER_UP_TO`, their
 * documents also go into the trigram index: all of them the first time, then each new one. Those trigrams are
 * written through `atEnd` (see WriteWork: the full-text index is cheapest written last in a transaction).
 */
export async function insertSearchDocument(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  slot: OwnerSlot,
  playlistId: number,
  doc: string,
  atEnd: (write: FinalWrite) => void,
): Promise<void> {
  await db.insertInto('playlist_documents').values({ owner_id: ownerId, playlist_id: playlistId, doc }).execute();
  if (dialect === 'postgres') return;
  if (slot.searchIndexed) {
    atEnd((trx) => sql`INSERT INTO playlist_trigrams (rowid, doc) VALUES (${playlistId}, ${doc})`.execute(trx));
  } else if (slot.playlists > SCAN_OWNER_UP_TO) {
    await db.updateTable('users').set({ search_indexed: 1 }).where('id', '=', ownerId).execute();
    // Up to this playlist: a later one of the same transaction adds its own.
    atEnd((trx) =>
      sql`INSERT INTO playlist_trigrams (rowid, doc)
          SELECT playlist_id, doc FROM playlist_documents WHERE owner_id = ${ownerId} AND playlist_id <= ${playlistId}`.execute(
        trx,
      ),
    );
  }
}

export async function replaceSearchDocument(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  playlistId: number,
  doc: string,
): Promise<void> {
  await db
    .updateTable('playlist_documents')
    .set({ doc })
    .where('owner_id', '=', ownerId)
    .where('playlist_id', '=', playlistId)
    .execute();
  if (dialect === 'postgres') return;
  const owner = await db.selectFrom('users').select('search_indexed').where('id', '=', ownerId).executeTakeFirst();
  if (owner?.search_indexed !== 1) return;
  await sql`DELETE FROM playlist_trigrams WHERE rowid = ${playlistId}`.execute(db);
  await sql`INSERT INTO playlist_trigrams (rowid, doc) VALUES (${playlistId}, ${doc})`.execute(db);
}

/** What a cover is drawn from: the number of songs and the first four distinct artists, in playlist order. */
export async function coverFacts(db: Q, playlistId: number): Promise<{ songCount: number; artists: string[] }> {
  const count = await db
    .selectFrom('playlist_songs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('playlist_id', '=', playlistId)
    .executeTakeFirstOrThrow();
  const artists = await db
    .selectFrom('playlist_songs as ps')
    .innerJoin('songs as s', 's.id', 'ps.song_id')
    .select((eb) => ['s.artist', eb.fn.min('ps.position').as('first')])
    .where('ps.playlist_id', '=', playlistId)
    .groupBy('s.artist')
    .orderBy('first')
    .limit(4)
    .execute();
  return { songCount: count.n, artists: artists.map((a) => a.artist) };
}

/**
 * The owner's playlist joined to its entries and their songs, in playlist order: one row per entry (one row with no
 * song for an empty playlist), none when the playlist is not the owner's. The caller picks the columns.
 */
const entriesOfOwnedPlaylist = (db: Q, id: number, ownerId: number) =>
  db
    .selectFrom('playlists as p')
    .leftJoin('playlist_songs as ps', 'ps.playlist_id', 'p.id')
    .leftJoin('songs as s', 's.id', 'ps.song_id')
    .where('p.id', '=', id)
    .where('p.owner_id', '=', ownerId)
    .orderBy('ps.position');

/**
 * The owner's playlist with its songs in one query: one row per song (or a single row with null song fields for an
 * empty playlist), none when the owner has no such playlist. Ownership is part of the query, so that another
 * user's playlist costs what a missing one does and its size cannot be told from the time of the answer.
 */
export async function findPlaylistWithSongs(
  db: Q,
  id: number,
  ownerId: number,
): Promise<{ playlist: PlaylistWithSongs; version: number } | undefined> {
  const rows = await entriesOfOwnedPlaylist(db, id, ownerId)
    .select(['p.name', 's.id as song_id', 's.title', 's.artist', catalogVersion])
    .execute();
  const [first] = rows;
  if (first === undefined) return undefined;
  const songs = [];
  for (const row of rows) {
    if (row.song_id !== null) songs.push({ id: row.song_id, title: row.title!, artist: row.artist! });
  }
  return { playlist: { id, name: first.name, songs }, version: Number(first.version) };
}

/** The owner's playlist with what the catalog knows of each song (for the playlist files), in one query. */
export async function findPlaylistForExport(db: Q, id: number, ownerId: number): Promise<ExportPlaylist | undefined> {
  const rows = await entriesOfOwnedPlaylist(db, id, ownerId)
    .select(['p.name', 's.id as song_id', 's.title', 's.artist', 's.album', 's.duration'])
    .execute();
  const [first] = rows;
  if (first === undefined) return undefined;
  const tracks: ExportTrack[] = [];
  for (const row of rows) {
    if (row.song_id === null) continue;
    tracks.push({ id: row.song_id, title: row.title!, artist: row.artist!, album: row.album!, duration: row.duration });
  }
  return { id, name: first.name, tracks };
}

/** The playlist's owner and the catalog version, read together; undefined when there is no such playlist. */
export async function confirmPlaylist(db: Q, id: number): Promise<{ ownerId: number; version: number } | undefined> {
  const row = await db
    .selectFrom('playlists')
    .select(['owner_id', catalogVersion])
    .where('id', '=', id)
    .executeTakeFirst();
  return row === undefined ? undefined : { ownerId: row.owner_id, version: Number(row.version) };
}

/** The names of these playlists. */
export function playlistHeads(db: Q, ids: readonly number[]): Promise<PlaylistHead[]> {
  return db.selectFrom('playlists').select(['id', 'name']).where('id', 'in', ids).execute();
}

export function findPlaylist(db: Q, id: number): Promise<{ id: number; owner_id: number; name: string } | undefined> {
  return db.selectFrom('playlists').select(['id', 'owner_id', 'name']).where('id', '=', id).executeTakeFirst();
}

export function findDeletedPlaylist(db: Q, id: number): Promise<{ owner_id: number } | undefined> {
  return db.selectFrom('deleted_playlists').select('owner_id').where('id', '=', id).executeTakeFirst();
}

/** Deletes the owner's playlist (its entries and search document go with it) and records the deletion. */
export async function deletePlaylist(db: Q, id: number, ownerId: number, now: number): Promise<boolean> {
  const result = await db
    .deleteFrom('playlists')
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .executeTakeFirst();
  if (result.numDeletedRows === 0n) return false;
  await db.insertInto('deleted_playlists').values({ id, owner_id: ownerId, deleted_at: now }).execute();
  return true;
}

/** Ids of a page of playlists, and the catalog version they were read at (undefined for an empty page). */
export interface PageIds {
  readonly ids: number[];
  readonly version: number | undefined;
}

/**
 * A page of the owner's playlist ids, in creation order, and how many the owner has: one statement (the count rides
 * along on every row), or two for a page past the end.
 */
export async function listPlaylistIds(
  db: Q,
  ownerId: number,
  limit: number,
  offset: number,
): Promise<PageIds & { total: number }> {
  const rows = await db
    .selectFrom('playlists as p')
    .select([
      'p.id',
      catalogVersion,
      (eb) => eb.selectFrom('users').select('playlist_count').where('users.id', '=', ownerId).as('total'),
    ])
    .where('p.owner_id', '=', ownerId)
    .orderBy('p.id')
    .limit(limit)
    .offset(offset)
    .execute();
  const first = rows[0];
  if (first === undefined) return { ids: [], version: undefined, total: await countPlaylists(db, ownerId) };
  return { ids: rows.map((r) => r.id), version: Number(first.version), total: first.total ?? 0 };
}

/**
 * Up to this many playlists, a search reads the owner's own documents one by one (they sit side by side, keyed by
 * owner): its cost then depends on the owner's library alone, never on how many playlists everyone else has.
 * Beyond it, the trigram index narrows the candidates first.
 */
export const SCAN_OWNER_UP_TO = 2000;

/** The owner's library as search sees it. */
export interface Library {
  readonly playlists: number;
  /** Search through the trigram index: on SQLite once the owner's documents are in it, on PostgreSQL by size. */
  readonly viaTrigrams: boolean;
}

export async function ownerLibrary(db: Q, dialect: Dialect, ownerId: number): Promise<Library> {
  const row = await db
    .selectFrom('users')
    .select(['playlist_count', 'search_indexed'])
    .where('id', '=', ownerId)
    .executeTakeFirst();
  const playlists = row?.playlist_count ?? 0;
  const viaTrigrams = dialect === 'sqlite' ? row?.search_indexed === 1 : playlists > SCAN_OWNER_UP_TO;
  return { playlists, viaTrigrams };
}

/**
 * The owner's documents that contain every word (documents and words are both normalised, so this is a plain
 * substring test).
 *
 * A small library is read through the owner's key. A large one goes through the trigram index (FTS5 on SQLite,
 * pg_trgm on PostgreSQL) for words of three characters or more; shorter words are checked on the candidates.
 */
function matching(db: Q, dialect: Dialect, ownerId: number, words: readonly string[], viaTrigrams: boolean) {
  const query = db.selectFrom('playlist_documents as d').where('d.owner_id', '=', ownerId);
  // SQLite's LIKE is two to three times faster than its instr() over a library's documents (both are plain scans;
  // documents and words are lower case, so LIKE's ASCII case folding changes nothing).
  const contains = (word: string) =>
    dialect === 'sqlite'
      ? sql<boolean>`d.doc LIKE ${containsPattern(word)} ESCAPE '\\'`
      : sql<boolean>`strpos(d.doc, ${word}) > 0`;
  const containsAll = (list: readonly string[]) => sql<boolean>`${sql.join(list.map(contains), sql` AND `)}`;

  if (!viaTrigrams) return query.where(containsAll(words));

  if (dialect === 'postgres') {
    // LIKE, unlike strpos, can use the trigram index.
    const like = words.map((word) => sql`d.doc LIKE ${containsPattern(word)} ESCAPE '\\'`);
    return query.where(sql<boolean>`${sql.join(like, sql` AND `)}`);
  }
  const indexed = words.filter((w) => characterCount(w) >= 3);
  const short = words.filter((w) => characterCount(w) < 3);
  let narrowed = query;
  if (indexed.length > 0) {
    const expression = indexed.map(ftsPhrase).join(' AND ');
    narrowed = narrowed.where(
      sql<boolean>`d.playlist_id IN (SELECT rowid FROM playlist_trigrams WHERE playlist_trigrams MATCH ${expression})`,
    );
  }
  return short.length > 0 ? narrowed.where(containsAll(short)) : narrowed;
}

/** A page of the owner's playlists that contain every word, how many match in all, and the catalog version. */
export async function searchPlaylists(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  words: readonly string[],
  viaTrigrams: boolean,
  limit: number,
  offset: number,
): Promise<PageIds & { total: number }> {
  // The total rides along on every row, so that a page costs one query rather than a page and a count.
  const rows = await matching(db, dialect, ownerId, words, viaTrigrams)
    .select(['d.playlist_id', sql<BigintColumn>`count(*) over ()`.as('total'), catalogVersion])
    .orderBy('d.playlist_id')
    .limit(limit)
    .offset(offset)
    .execute();
  const first = rows[0];
  // A page past the end has no row to carry the total.
  const total = first?.total ?? (offset > 0 ? await countSearchMatches(db, dialect, ownerId, words, viaTrigrams) : 0);
  return {
    ids: rows.map((r) => r.playlist_id),
    total: Number(total),
    version: first === undefined ? undefined : Number(first.version),
  };
}

export async function countSearchMatches(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  words: readonly string[],
  viaTrigrams: boolean,
): Promise<number> {
  const row = await matching(db, dialect, ownerId, words, viaTrigrams)
    .select((eb) => eb.fn.countAll<BigintColumn>().as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function countPlaylists(db: Q, ownerId: number): Promise<number> {
  const row = await db.selectFrom('users').select('playlist_count').where('id', '=', ownerId).executeTakeFirst();
  return row?.playlist_count ?? 0;
}

/** Where a read of playlist songs stopped: the last entry it returned. */
export interface SongCursor {
  readonly playlistId: number;
  readonly position: number;
}

/**
 * The songs of several playlists, in playlist order then position order, at most `limit` rows from after `after`
 * (keyset paging on the entries' primary key; the ids in ascending order), so that a page of long playlists is
 * read a piece at a time. On
 * PostgreSQL each song is looked up by its key (a lateral join, kept apart from the outer query by its `LIMIT 1`):
 * left to itself, the planner sometimes hashes the whole catalog for a page of twenty playlists (12 ms instead of 4
 * on 50 000 songs).
 */
export function songsOfPlaylists(
  db: Q,
  dialect: Dialect,
  playlistIds: readonly number[],
  limit: number,
  after?: SongCursor,
): Promise<PlaylistSongRow[]> {
  // After a cursor, only its own playlist and the later ones are read, each from the start of its index range, so
  // that every piece costs the same however far into the page it is.
  const ids = after === undefined ? playlistIds : playlistIds.filter((id) => id >= after.playlistId);
  if (ids.length === 0) return Promise.resolve([]);
  let entries = db.selectFrom('playlist_songs as ps').where('ps.playlist_id', 'in', ids);
  if (after !== undefined) {
    entries = entries.where((eb) =>
      eb.or([eb('ps.playlist_id', '>', after.playlistId), eb('ps.position', '>', after.position)]),
    );
  }
  const joined =
    dialect === 'sqlite'
      ? entries.innerJoin('songs as s', 's.id', 'ps.song_id')
      : entries.innerJoinLateral(
          (eb) =>
            eb
              .selectFrom('songs')
              .select(['id', 'title', 'artist'])
              .whereRef('songs.id', '=', 'ps.song_id')
              .limit(1)
              .as('s'),
          (join) => join.onTrue(),
        );
  return joined
    .select(['ps.playlist_id', 'ps.position', 's.id', 's.title', 's.artist', catalogVersion])
    .orderBy('ps.playlist_id')
    .orderBy('ps.position')
    .limit(limit)
    .execute();
}
