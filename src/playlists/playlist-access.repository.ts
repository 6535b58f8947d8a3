import { createQueryId, PostgresQueryCompiler, sql, type Kysely, type RawBuilder } from 'kysely';
import { memberships, readableWithRole } from '../db/access-rule.js';
import { compiledOnce } from '../db/compiled.js';
import { catalogVersion, type BigintColumn } from '../db/playlist-changes.js';
import { prepared } from '../db/postgres.js';
import type { Database } from '../db/schema.js';
import type { MemberRole } from '../domain/roles.js';
import { songCount } from './write/store.repository.js';

type Q = Kysely<Database>;

/** The access reads: a caller's standing towards a playlist, by the access rule (db/access-rule.ts). */

/**
 * The user's role in the playlist, if they are one of its members (kept while it is deleted, so that its members
 * are answered 410).
 */
export async function findMembership(db: Q, playlistId: number, userId: number): Promise<MemberRole | undefined> {
  const row = await memberships(db, userId).select('m.role').where('m.playlist_id', '=', playlistId).executeTakeFirst();
  return row?.role;
}

/** The caller's standing towards a playlist as the database holds it (its one reader: `accessReader`, playlist.access.ts). */
export interface AccessRow {
  readonly owner_id: number;
  readonly version: number | string;
  readonly catalog_version: BigintColumn;
  /** The caller's role when they are a member, null when they own it. */
  readonly role: MemberRole | null;
  /** The owner's name. */
  readonly owner_name: string;
}

/**
 * The playlist's owner, version and the catalog's version, and the caller's membership, in one indexed read, if
 * `userId` owns it or is one of its members: none otherwise, whether it is another user's or not there at all.
 */
export async function playlistAccessRow(db: Q, id: number, userId: number): Promise<AccessRow | undefined> {
  return (await accessRow(db, { id, userId })).rows[0];
}

/** The access read of one (playlist, caller) pair, as `playlistAccessRow` and `playlistAccessRowCounted` run it. */
const accessRowQuery = (q: Q, p: { id: number; userId: number }) => {
  const rule = readableWithRole(p.userId);
  return q
    .selectFrom('playlists as p')
    .innerJoin('users as o', 'o.id', 'p.owner_id')
    .leftJoin('playlist_members as m', (join) => join.on(rule.join))
    .select(['p.owner_id', 'p.version', catalogVersion, 'm.role', 'o.name as owner_name'])
    .where('p.id', '=', p.id)
    .where(rule.readable);
};

const accessRow = compiledOnce(
  'playlist-access-row',
  (p: { id: number; userId: number }) => (q) => accessRowQuery(q, p),
);

const accessRowCounted = compiledOnce(
  'playlist-access-counted',
  (p: { id: number; userId: number }) => (q) => accessRowQuery(q, p).select(songCount.as('song_count')),
);

/** A caller's `AccessRow` as `playlistAccessRows` reads it: which request it answers. */
export interface AccessRowOf extends AccessRow {
  /** The request's place in the batch, from 1. */
  readonly n: number | string;
}

/**
 * `readableWithRole` for each pair's caller in `playlistAccessRows` (`r.user_id`), as SQL text (it holds no values),
 * compiled once here: a batch then costs no more to compile than with the rule written out in it.
 */
const readableInBatch = (() => {
  const rule = readableWithRole(sql.ref<number>('r.user_id'));
  const text = (fragment: RawBuilder<boolean>) =>
    sql.raw<boolean>(new PostgresQueryCompiler().compileQuery(fragment.toOperationNode(), createQueryId()).sql);
  return { join: text(rule.join), readable: text(rule.readable) };
})();

/**
 * `playlistAccessRow` for several (playlist, caller) pairs in one statement (PostgreSQL): the rows of the pairs where
 * the caller owns the playlist or is one of its members, each naming its pair by its place.
 */
export async function playlistAccessRows(
  db: Q,
  pairs: readonly { readonly id: number; readonly userId: number }[],
): Promise<AccessRowOf[]> {
  const ids = pairs.map((pair) => pair.id);
  const users = pairs.map((pair) => pair.userId);
  const { rows } = await sql<AccessRowOf>`${prepared('playlist-access')}
    SELECT r.n, p.owner_id, p.version, (SELECT version FROM catalog_version) AS catalog_version, m.role,
      o.name AS owner_name
    FROM unnest(${ids}::bigint[], ${users}::bigint[]) WITH ORDINALITY AS r (id, user_id, n)
    JOIN playlists p ON p.id = r.id
    JOIN users o ON o.id = p.owner_id
    LEFT JOIN playlist_members m ON ${readableInBatch.join}
    WHERE ${readableInBatch.readable}`.execute(db);
  return rows;
}

/**
 * `playlistAccessRow` with how many songs the playlist holds (PostgreSQL, an edit's: a long playlist makes it a large
 * request), counted in the same statement, one round trip. A statement of its own, never in another request's batch:
 * counting a long playlist's entries, dead ones among them after many edits, must not delay anyone else's read. The
 * songs are counted only in a row the statement returns, one the caller owns or is a member of.
 */
export async function playlistAccessRowCounted(
  db: Q,
  id: number,
  userId: number,
): Promise<(AccessRow & { readonly song_count: number | string | null }) | undefined> {
  return (await accessRowCounted(db, { id, userId })).rows[0];
}
