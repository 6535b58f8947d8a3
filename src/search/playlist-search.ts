import { sql, type Kysely } from 'kysely';
import type { Db, Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { FinalWrite } from '../db/write-batch.js';
import { characterCount, containsPattern, ftsPhrase, playlistDocument } from './search-text.js';

/**
 * Playlist search: each playlist's document (its name and its songs' titles, artists and genres, normalised), kept
 * by owner in `playlist_documents`; the trigram index over them (FTS5 on SQLite, pg_trgm on PostgreSQL); and the
 * queries that find an owner's playlists by words, with the policy of when to go through the index. Playlists and
 * the catalog hand it what changed; the answers a search shows come from the playlist cache.
 */

type Q = Kysely<Database>;

/** A bigint computed in SQL (a count), typed loosely and read with Number(). */
type BigintColumn = number | string;

/**
 * Up to this many playlists, a search reads the owner's own documents one by one (they sit side by side, keyed by
 * owner): its cost then depends on the owner's library alone, never on how many playlists everyone else has.
 * Beyond it, the trigram index narrows the candidates first.
 */
export const SCAN_OWNER_UP_TO = 2000;

/** The owner's library as search sees it. */
interface Library {
  readonly playlists: number;
  /** Search through the trigram index: on SQLite once the owner's documents are in it, on PostgreSQL by size. */
  readonly viaTrigrams: boolean;
}

async function ownerLibrary(db: Q, dialect: Dialect, ownerId: number): Promise<Library> {
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

/**
 * The query of a page of the owner's playlist ids that contain every word, with how many match in all on every row
 * (so that a page costs one query rather than a page and a count; a page past the end has no row to carry it).
 */
export function pageOfMatches(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  words: readonly string[],
  viaTrigrams: boolean,
  limit: number,
  offset: number,
) {
  return matching(db, dialect, ownerId, words, viaTrigrams)
    .select(['d.playlist_id as id', sql<BigintColumn>`count(*) over ()`.as('total')])
    .orderBy('d.playlist_id')
    .limit(limit)
    .offset(offset);
}

/** How many of the owner's documents contain every word. */
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

/** The owner's playlists that contain every word: the query of a page of their ids, and how many match in all. */
export interface Matches {
  /** The page's playlist ids (as `id`), with the number of matches on every row. */
  readonly page: ReturnType<typeof pageOfMatches>;
  /** How many match in all, from the rows the page query returned. */
  total(rows: readonly { readonly total: BigintColumn }[]): Promise<number>;
}

/** The owner's playlists that contain every word; undefined when the owner has none at all. */
export async function findMatches(
  db: Q,
  dialect: Dialect,
  ownerId: number,
  words: readonly string[],
  limit: number,
  offset: number,
): Promise<Matches | undefined> {
  const library = await ownerLibrary(db, dialect, ownerId);
  if (library.playlists === 0) return undefined;
  const { viaTrigrams } = library;
  return {
    page: pageOfMatches(db, dialect, ownerId, words, viaTrigrams, limit, offset),
    async total(rows) {
      const first = rows[0];
      if (first !== undefined) return Number(first.total);
      // A page past the end has no row to carry the total.
      return offset > 0 ? countSearchMatches(db, dialect, ownerId, words, viaTrigrams) : 0;
    },
  };
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
export async function addPlaylistDocument(
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

/**
 * Replaces the playlist's document (and its trigrams, if the owner's library is in the trigram index): a catalog
 * change of its songs' text, or an edit, in the edit's transaction.
 */
export async function replacePlaylistDocument(
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
      await replacePlaylistDocument(trx, db.dialect, playlist.owner_id, playlistId, doc);
    });
  }
}
