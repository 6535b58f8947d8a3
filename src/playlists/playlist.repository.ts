import { sql, type Kysely } from 'kysely';
import { lockingRows, type Dialect } from '../db/database.js';
import { compiledOnce } from '../db/compiled.js';
import { catalogVersion } from '../db/playlist-changes.js';
import type { Database } from '../db/schema.js';
import type { MemberRole, Membership } from '../domain/roles.js';
import { memberships, ownPlaylists, sharedPlaylists } from '../db/access-rule.js';

type Q = Kysely<Database>;

export interface PlaylistSongRow {
  playlist_id: number;
  ord: string;
  id: number;
  title: string;
  artist: string;
}

/**
 * What a cover is drawn from: the playlist's name, its number of songs and the first four distinct artists, in
 * playlist order.
 */
export async function coverFacts(
  db: Q,
  playlistId: number,
): Promise<{ name: string; songCount: number; artists: string[] } | undefined> {
  const head = await db
    .selectFrom('playlists as p')
    .select([
      'p.name',
      (eb) =>
        eb
          .selectFrom('playlist_songs')
          .select((count) => count.fn.countAll<number | string>().as('n'))
          .where('playlist_id', '=', playlistId)
          .as('n'),
    ])
    .where('p.id', '=', playlistId)
    .executeTakeFirst();
  if (head === undefined) return undefined;
  const artists = await db
    .selectFrom('playlist_songs as ps')
    .innerJoin('songs as s', 's.id', 'ps.song_id')
    .select((eb) => ['s.artist', eb.fn.min('ps.ord').as('first')])
    .where('ps.playlist_id', '=', playlistId)
    .groupBy('s.artist')
    .orderBy('first')
    .limit(4)
    .execute();
  return { name: head.name, songCount: Number(head.n ?? 0), artists: artists.map((a) => a.artist) };
}

/**
 * The playlist joined to its entries and their songs, in playlist order: one row per entry (one row with no song for
 * an empty playlist), none when there is no such playlist. The caller picks the columns.
 */
const entriesOfPlaylist = (db: Q, id: number) =>
  db
    .selectFrom('playlists as p')
    .leftJoin('playlist_songs as ps', 'ps.playlist_id', 'p.id')
    .leftJoin('songs as s', 's.id', 'ps.song_id')
    .where('p.id', '=', id)
    .orderBy('ps.ord')
    .orderBy('ps.entry');

/**
 * The entries' origins beside them (`o`, migration 2026-12-14-entry-origins) and the name of who made each (`u`; null
 * for a user removed since, or an entry made before origins were kept).
 */
function withOrigins(query: ReturnType<typeof entriesOfPlaylist>) {
  return query
    .leftJoin('playlist_entry_origins as o', (join) =>
      join.onRef('o.playlist_id', '=', 'ps.playlist_id').onRef('o.entry', '=', 'ps.entry'),
    )
    .leftJoin('users as u', 'u.id', 'o.added_by');
}

/** One entry of a playlist with its song; the song's fields are null on an empty playlist's single row. */
export interface PlaylistEntryRow {
  name: string;
  song_id: number | null;
  title: string | null;
  artist: string | null;
}

/**
 * The playlist with its songs and its version in one query: one row per song (or a single row with null song fields
 * for an empty playlist), none when there is no such playlist. Read once access was granted (playlist.access.ts).
 */
export function playlistEntries(
  db: Q,
  id: number,
): Promise<(PlaylistEntryRow & { version: number | string; rules: string | null; rules_status: string | null })[]> {
  return entriesOfPlaylist(db, id)
    .select(['p.name', 'p.version', 'p.rules', 'p.rules_status', 's.id as song_id', 's.title', 's.artist'])
    .execute();
}

/**
 * The playlist's entries with their songs, its name, version, a smart playlist's rules and their status, and the
 * catalog's version, in one query, as `playlistEntries` reads them: what `GET …/entries` answers.
 */
export function playlistEntryRows(db: Q, id: number) {
  return withOrigins(entriesOfPlaylist(db, id))
    .select([
      'p.name',
      'p.version',
      'p.rules',
      'p.rules_status',
      catalogVersion,
      'ps.entry',
      's.id as song_id',
      's.title',
      's.artist',
      'u.name as added_by',
      'o.added_at',
    ])
    .execute();
}

/**
 * The playlist with what the catalog knows of each song, its version and the catalog's (which name the file's ETag),
 * in one query, as `playlistEntries` reads it.
 */
export function playlistEntriesForExport(db: Q, id: number) {
  return withOrigins(entriesOfPlaylist(db, id))
    .select([
      'p.name',
      'p.version',
      'p.owner_id',
      catalogVersion,
      's.id as song_id',
      's.title',
      's.artist',
      's.album',
      's.duration',
      'o.added_by as added_by_id',
      'u.name as added_by',
      'o.added_at',
    ])
    .execute();
}

/**
 * The playlist's current version, read in a write's transaction with its row held until the write commits, so that
 * the sharing writes of one playlist run one after the other (the members and links limits count what the one before
 * wrote) and a member event carries the version that edits committed before it left. Undefined: it is gone.
 */
export async function lockPlaylist(trx: Q, dialect: Dialect, id: number): Promise<number | undefined> {
  const row = await lockingRows(
    trx.selectFrom('playlists').select('version').where('id', '=', id),
    dialect,
  ).executeTakeFirst();
  return row === undefined ? undefined : Number(row.version);
}

/** Whether the playlist is there (not deleted). */
export async function playlistExists(db: Q, id: number): Promise<boolean> {
  return (await db.selectFrom('playlists').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

/** A deleted playlist's owner and the entry id it would give next; undefined when it is not deleted. */
export function findDeletedPlaylist(
  db: Q,
  id: number,
): Promise<{ owner_id: number; next_entry: number | string } | undefined> {
  return db.selectFrom('deleted_playlists').select(['owner_id', 'next_entry']).where('id', '=', id).executeTakeFirst();
}

/** A page query's values: whose playlists, and which of them. */
interface PageParams {
  readonly userId: number;
  readonly limit: number;
  readonly offset: number;
}

/**
 * A page of the owner's playlist ids and versions, in creation order, with how many the owner has and the catalog
 * version on every row (so that a page is one statement; a page past the end has no row, and `countPlaylists` tells
 * then). Compiled once: the list is the most frequent read after `get`.
 */
const ownPage = compiledOnce(
  'page-of-playlists',
  (p: PageParams) => (q) =>
    ownPlaylists(q, p.userId)
      .select([
        'p.id',
        'p.version',
        (eb) => eb.selectFrom('users').select('playlist_count').where('users.id', '=', p.userId).as('total'),
        catalogVersion,
      ])
      .orderBy('p.id')
      .limit(p.limit)
      .offset(p.offset),
);

/**
 * A page of the ids and versions of the playlists shared with the member, in id order, each with the member's role
 * and the owner's name, and with how many are shared with them and the catalog version on every row (a page past the
 * end has no row, and `countSharedPlaylists` tells then): one statement for what took three.
 */
const sharedPage = compiledOnce(
  'page-of-shared-playlists',
  (p: PageParams) => (q) =>
    sharedPlaylistIds(q, p.userId)
      .select([sharedCount(q, p.userId).as('total'), catalogVersion])
      .orderBy('id')
      .limit(p.limit)
      .offset(p.offset),
);

/**
 * A page of the ids and versions of the user's playlists and of those shared with them, in id order, with the role
 * and owner's name of those shared (null for their own), and how many there are in all and the catalog version on
 * every row.
 */
const allPage = compiledOnce('page-of-all-playlists', (p: PageParams) => (q) => {
  const own = ownPlaylists(q, p.userId).select([
    'p.id',
    'p.version',
    sql<MemberRole | null>`NULL`.as('role'),
    sql<string | null>`NULL`.as('owner_name'),
  ]);
  const ownCount = q.selectFrom('users').select('playlist_count').where('users.id', '=', p.userId);
  return q
    .selectFrom(own.unionAll(sharedPlaylistIds(q, p.userId)).as('x'))
    .select([
      'x.id',
      'x.version',
      'x.role',
      'x.owner_name',
      sql<number | string>`(${ownCount}) + (${sharedCount(q, p.userId)})`.as('total'),
      catalogVersion,
    ])
    .orderBy('x.id')
    .limit(p.limit)
    .offset(p.offset);
});

/** A page of the owner's playlists (see `ownPage`). */
export async function pageOfPlaylists(db: Q, userId: number, limit: number, offset: number) {
  return (await ownPage(db, { userId, limit, offset })).rows;
}

/** A page of the playlists shared with the member (see `sharedPage`). */
export async function pageOfSharedPlaylists(db: Q, userId: number, limit: number, offset: number) {
  return (await sharedPage(db, { userId, limit, offset })).rows;
}

/** A page of the user's playlists and of those shared with them (see `allPage`). */
export async function pageOfAllPlaylists(db: Q, userId: number, limit: number, offset: number) {
  return (await allPage(db, { userId, limit, offset })).rows;
}

/**
 * The ids and versions of the current playlists shared with the user, through the key (member, playlist), with the
 * member's role and the owner's name.
 */
const sharedPlaylistIds = (db: Q, userId: number) =>
  sharedPlaylists(db, userId)
    .innerJoin('users as o', 'o.id', 'm.owner_id')
    .select(['m.playlist_id as id', 'p.version', 'm.role', 'o.name as owner_name']);

/** The query of how many current playlists are shared with the user (one row, one column). */
const sharedCount = (db: Q, userId: number) =>
  sharedPlaylists(db, userId).select((eb) => eb.fn.countAll<number | string>().as('n'));

/** How many current playlists are shared with the user. */
export async function countSharedPlaylists(db: Q, userId: number): Promise<number> {
  const row = await sharedCount(db, userId).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The user's memberships among these playlists: role and owner's name, by playlist id. */
export async function membershipsOf(db: Q, userId: number, ids: readonly number[]): Promise<Map<number, Membership>> {
  if (ids.length === 0) return new Map();
  const rows = await memberships(db, userId)
    .innerJoin('users as o', 'o.id', 'm.owner_id')
    .select(['m.playlist_id', 'm.role', 'o.name'])
    .where('m.playlist_id', 'in', ids)
    .execute();
  return new Map(rows.map((row) => [row.playlist_id, { role: row.role, ownerName: row.name }]));
}

export async function countPlaylists(db: Q, ownerId: number): Promise<number> {
  const row = await db.selectFrom('users').select('playlist_count').where('id', '=', ownerId).executeTakeFirst();
  return row?.playlist_count ?? 0;
}

/** Where a read of playlist songs stopped: the last entry it returned. */
export interface SongCursor {
  readonly playlistId: number;
  readonly ord: string;
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
    entries = entries.where((eb) => eb.or([eb('ps.playlist_id', '>', after.playlistId), eb('ps.ord', '>', after.ord)]));
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
    .select(['ps.playlist_id', 'ps.ord', 's.id', 's.title', 's.artist'])
    .orderBy('ps.playlist_id')
    .orderBy('ps.ord')
    .limit(limit)
    .execute();
}

/**
 * Who made these entries of the playlist and when, with the user's name (null for a user removed since): what a kept
 * version's entries and a merged edit's answer show. An entry made before origins were kept is not among them. One
 * statement of one text whatever the count (the ids as one JSON or array parameter), so it is prepared once.
 */
export async function entryOrigins(
  db: Q,
  dialect: Dialect,
  id: number,
  entries: readonly number[],
): Promise<Map<number, { addedBy: string | null; addedAt: number }>> {
  const wanted =
    dialect === 'postgres'
      ? sql`o.entry = ANY(${entries}::bigint[])`
      : sql`o.entry IN (SELECT value FROM json_each(${JSON.stringify(entries)}))`;
  const { rows } = await sql<{ entry: number | string; name: string | null; added_at: number | string }>`
    SELECT o.entry, u.name, o.added_at FROM playlist_entry_origins o LEFT JOIN users u ON u.id = o.added_by
    WHERE o.playlist_id = ${id} AND ${wanted}`.execute(db);
  return new Map(rows.map((row) => [Number(row.entry), { addedBy: row.name, addedAt: Number(row.added_at) }]));
}
