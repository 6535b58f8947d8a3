import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import { catalogVersion, type BigintColumn } from '../db/playlist-changes.js';
import { prepared } from '../db/postgres.js';
import type { Database, PlaylistMemberTable } from '../db/schema.js';
import { joinIds, recordDelete, recordRevision } from '../history/revision.repository.js';
import { INSERT_CHUNK } from './playlist.rules.js';

type Q = Kysely<Database>;

export interface PlaylistSongRow {
  playlist_id: number;
  position: number;
  id: number;
  title: string;
  artist: string;
}

/** Creates the playlist's row and records its first revision (its entries are written by `insertEntries`). */
export async function insertPlaylist(
  db: Q,
  ownerId: number,
  name: string,
  now: number,
  songIds: readonly number[],
): Promise<number> {
  const row = await db
    .insertInto('playlists')
    .values({ owner_id: ownerId, name, created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  await recordRevision(db, {
    playlistId: row.id,
    ownerId,
    byId: ownerId,
    version: 1,
    change: 'create',
    name,
    before: undefined,
    after: songIds,
    at: now,
  });
  return row.id;
}

/** What a new playlist is made of: its owner, name, songs (in order) and search document. */
export interface NewPlaylistRow {
  readonly ownerId: number;
  readonly name: string;
  readonly songIds: readonly number[];
  readonly doc: string;
  readonly now: number;
}

/**
 * PostgreSQL: a whole create in one statement, and so one round trip and its own transaction: the owner's slot
 * under the quota, the playlist's row, its entries, its first revision (a snapshot of its songs, as
 * `recordRevision` writes one for a create) and its search document. Undefined, with nothing written, when the
 * owner has `quota` playlists already. Seven round trips (`BEGIN`, five statements, `COMMIT`) answered 0.63 as
 * many creates a second (docs/benchmarks.md).
 */
export async function createPlaylistAtOnce(
  db: Q,
  playlist: NewPlaylistRow,
  quota: number,
): Promise<number | undefined> {
  const { ownerId, name, songIds, doc, now } = playlist;
  const result = await sql<{ id: number | string }>`${prepared('playlist-create')}
    WITH slot AS (
      UPDATE users SET playlist_count = playlist_count + 1
      WHERE id = ${ownerId} AND playlist_count < ${quota}
      RETURNING id
    ), playlist AS (
      INSERT INTO playlists (owner_id, name, created_at) SELECT id, ${name}, ${now} FROM slot RETURNING id
    ), entries AS (
      INSERT INTO playlist_songs (playlist_id, position, song_id)
      SELECT playlist.id, entry.position - 1, entry.song_id
      FROM playlist, unnest(${songIds}::bigint[]) WITH ORDINALITY AS entry (song_id, position)
    ), revision AS (
      INSERT INTO playlist_revisions
        (playlist_id, owner_id, version, at, by_id, change, name, song_count, splice_at, splice_deleted, songs, chain)
      SELECT id, ${ownerId}, 1, ${now}, ${ownerId}, 'create', ${name}, ${songIds.length}, NULL, NULL,
        ${joinIds(songIds)}, 0
      FROM playlist
    ), document AS (
      INSERT INTO playlist_documents (owner_id, playlist_id, doc) SELECT ${ownerId}, id, ${doc} FROM playlist
    )
    SELECT id FROM playlist`.execute(db);
  const row = result.rows[0];
  return row === undefined ? undefined : Number(row.id);
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
    .select((eb) => ['s.artist', eb.fn.min('ps.position').as('first')])
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
    .orderBy('ps.position');

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
export function playlistEntries(db: Q, id: number): Promise<(PlaylistEntryRow & { version: number | string })[]> {
  return entriesOfPlaylist(db, id).select(['p.name', 'p.version', 's.id as song_id', 's.title', 's.artist']).execute();
}

/** An entry with what the catalog knows of its song (for the playlist files). */
export interface ExportEntryRow extends PlaylistEntryRow {
  album: string | null;
  duration: number | null;
}

/** The playlist with what the catalog knows of each song, in one query, as `playlistEntries` reads it. */
export function playlistEntriesForExport(db: Q, id: number): Promise<ExportEntryRow[]> {
  return entriesOfPlaylist(db, id)
    .select(['p.name', 's.id as song_id', 's.title', 's.artist', 's.album', 's.duration'])
    .execute();
}

/** The caller's standing towards a playlist as the database holds it (see playlist.access.ts, the one caller). */
export interface AccessRow {
  readonly owner_id: number;
  readonly version: number | string;
  readonly catalog_version: BigintColumn;
  /** The caller's role when they are a member, null when they own it. */
  readonly role: 'viewer' | 'editor' | null;
  /** The owner's name. */
  readonly owner_name: string;
}

/**
 * The playlist's owner, version and the catalog's version, and the caller's membership, in one indexed read, if
 * `userId` owns it or is one of its members: none otherwise, whether it is another user's or not there at all.
 */
export function playlistAccessRow(db: Q, id: number, userId: number): Promise<AccessRow | undefined> {
  return db
    .selectFrom('playlists as p')
    .innerJoin('users as o', 'o.id', 'p.owner_id')
    .leftJoin('playlist_members as m', (join) => join.onRef('m.playlist_id', '=', 'p.id').on('m.user_id', '=', userId))
    .select(['p.owner_id', 'p.version', catalogVersion, 'm.role', 'o.name as owner_name'])
    .where('p.id', '=', id)
    .where((eb) => eb.or([eb('p.owner_id', '=', userId), eb('m.user_id', '=', userId)]))
    .executeTakeFirst();
}

/** A caller's `AccessRow` as `playlistAccessRows` reads it: which request it answers. */
export interface AccessRowOf extends AccessRow {
  readonly id: number | string;
  readonly user_id: number | string;
}

/**
 * `playlistAccessRow` for several (playlist, caller) pairs in one statement (PostgreSQL): the rows of the pairs where
 * the caller owns the playlist or is one of its members, each naming its pair.
 */
export async function playlistAccessRows(
  db: Q,
  pairs: readonly { readonly id: number; readonly userId: number }[],
): Promise<AccessRowOf[]> {
  const ids = pairs.map((pair) => pair.id);
  const users = pairs.map((pair) => pair.userId);
  const { rows } = await sql<AccessRowOf>`${prepared('playlist-access')}
    SELECT r.id, r.user_id, p.owner_id, p.version, (SELECT version FROM catalog_version) AS catalog_version, m.role,
      o.name AS owner_name
    FROM unnest(${ids}::bigint[], ${users}::bigint[]) AS r (id, user_id)
    JOIN playlists p ON p.id = r.id
    JOIN users o ON o.id = p.owner_id
    LEFT JOIN playlist_members m ON m.playlist_id = p.id AND m.user_id = r.user_id
    WHERE p.owner_id = r.user_id OR m.user_id IS NOT NULL`.execute(db);
  return rows;
}

/** Whether the user is a member of the playlist (kept while it is deleted, so that its members are answered 410). */
export async function isMember(db: Q, id: number, userId: number): Promise<boolean> {
  const row = await db
    .selectFrom('playlist_members')
    .select('role')
    .where('playlist_id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row !== undefined;
}

export function findDeletedPlaylist(db: Q, id: number): Promise<{ owner_id: number } | undefined> {
  return db.selectFrom('deleted_playlists').select('owner_id').where('id', '=', id).executeTakeFirst();
}

/**
 * Deletes the playlist (its entries and search document go with it) and records the deletion with its owner, who is
 * answered 410 from then on, and its revision; false when it was already gone.
 */
export async function deletePlaylist(db: Q, id: number, ownerId: number, now: number): Promise<boolean> {
  const deleted = await db
    .deleteFrom('playlists')
    .where('id', '=', id)
    .returning(['version', 'name'])
    .executeTakeFirst();
  if (deleted === undefined) return false;
  await db.insertInto('deleted_playlists').values({ id, owner_id: ownerId, deleted_at: now }).execute();
  const version = Number(deleted.version) + 1;
  await recordDelete(db, { playlistId: id, ownerId, byId: ownerId, version, name: deleted.name, at: now });
  return true;
}

/**
 * The query of a page of the owner's playlist ids and versions, in creation order, with how many the owner has on
 * every row (so that a page is one statement; a page past the end has no row, and `countPlaylists` tells then).
 */
export function pageOfPlaylists(db: Q, ownerId: number, limit: number, offset: number) {
  return db
    .selectFrom('playlists as p')
    .select([
      'p.id',
      'p.version',
      (eb) => eb.selectFrom('users').select('playlist_count').where('users.id', '=', ownerId).as('total'),
    ])
    .where('p.owner_id', '=', ownerId)
    .orderBy('p.id')
    .limit(limit)
    .offset(offset);
}

/**
 * The query of a page of the ids and versions of the playlists shared with the member, in id order, each with the
 * member's role and the owner's name, and with how many are shared with them on every row (a page past the end has
 * no row, and `countSharedPlaylists` tells then): one statement for what took three.
 */
export function pageOfSharedPlaylists(db: Q, userId: number, limit: number, offset: number) {
  return sharedPlaylistIds(db, userId)
    .select(sharedCount(db, userId).as('total'))
    .orderBy('id')
    .limit(limit)
    .offset(offset);
}

/**
 * The query of a page of the ids and versions of the user's playlists and of those shared with them, in id order,
 * with the role and owner's name of those shared (null for their own), and how many there are in all on every row.
 */
export function pageOfAllPlaylists(db: Q, userId: number, limit: number, offset: number) {
  const own = db
    .selectFrom('playlists')
    .select(['id', 'version', sql<Role | null>`NULL`.as('role'), sql<string | null>`NULL`.as('owner_name')])
    .where('owner_id', '=', userId);
  const ownCount = db.selectFrom('users').select('playlist_count').where('users.id', '=', userId);
  return db
    .selectFrom(own.unionAll(sharedPlaylistIds(db, userId)).as('x'))
    .select([
      'x.id',
      'x.version',
      'x.role',
      'x.owner_name',
      sql<number | string>`(${ownCount}) + (${sharedCount(db, userId)})`.as('total'),
    ])
    .orderBy('x.id')
    .limit(limit)
    .offset(offset);
}

/** A member's role, as `playlist_members` holds it. */
type Role = PlaylistMemberTable['role'];

/**
 * The ids and versions of the current playlists shared with the user, through the key (member, playlist), with the
 * member's role and the owner's name.
 */
const sharedPlaylistIds = (db: Q, userId: number) =>
  db
    .selectFrom('playlist_members as m')
    .innerJoin('playlists as p', 'p.id', 'm.playlist_id')
    .innerJoin('users as o', 'o.id', 'm.owner_id')
    .select(['m.playlist_id as id', 'p.version', 'm.role', 'o.name as owner_name'])
    .where('m.user_id', '=', userId);

/** The query of how many current playlists are shared with the user (one row, one column). */
const sharedCount = (db: Q, userId: number) =>
  db
    .selectFrom('playlist_members as m')
    .innerJoin('playlists as p', 'p.id', 'm.playlist_id')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('m.user_id', '=', userId);

/** How many current playlists are shared with the user. */
export async function countSharedPlaylists(db: Q, userId: number): Promise<number> {
  const row = await sharedCount(db, userId).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** A member's role in a playlist, and the name of the playlist's owner. */
export interface Membership {
  readonly role: Role;
  readonly ownerName: string;
}

/** The user's memberships among these playlists: role and owner's name, by playlist id. */
export async function membershipsOf(db: Q, userId: number, ids: readonly number[]): Promise<Map<number, Membership>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('playlist_members as m')
    .innerJoin('users as o', 'o.id', 'm.owner_id')
    .select(['m.playlist_id', 'm.role', 'o.name'])
    .where('m.user_id', '=', userId)
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
    .select(['ps.playlist_id', 'ps.position', 's.id', 's.title', 's.artist'])
    .orderBy('ps.playlist_id')
    .orderBy('ps.position')
    .limit(limit)
    .execute();
}
