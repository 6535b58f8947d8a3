import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { memberships, ownedBy, ownPlaylists, sharedPlaylists } from '../db/access-rule.js';
import type { FeedChange } from '../domain/change-kinds.js';

type Q = Kysely<Database>;

/**
 * A place in one of the change feed's logs (revisions, member events): every row at or before (`xid`, `seq`) was
 * delivered. On SQLite `xid` is always 0 and `seq` alone orders a log: one writer at a time commits its rows in the
 * order it numbers them. On PostgreSQL a sequence number taken in a transaction that commits after a later one would
 * be skipped by a reader already past it; so each row carries its transaction's id, and a reader delivers only rows
 * of transactions older than the oldest still running (the horizon, `pg_snapshot_xmin`): no row can appear there any
 * more.
 */
export interface FeedPosition {
  readonly xid: number;
  readonly seq: number;
}

export interface FeedRow {
  readonly id: number;
  readonly version: number;
  readonly change: FeedChange;
  readonly at: number;
  readonly position: FeedPosition;
  /** A revision's: the user who made it. */
  readonly byId?: number;
}

/**
 * The feed reads four logs, each numbered by a sequence of its own: the revisions of the reader's playlists and of
 * those shared with them (`playlist_revisions`), what happened to their memberships (`member_events`), the
 * catalog's imports (`catalog_changes`, 1.8.0), and the reader's tree of folders (`library_changes`, 1.10.0: one row
 * per user, their latest change). A token holds a position in each.
 */
export interface FeedPositions {
  readonly revisions: FeedPosition;
  readonly members: FeedPosition;
  readonly catalog: FeedPosition;
  readonly library: FeedPosition;
}

/**
 * Where the feed stands now: every row of either log before it is committed and visible to any read that starts
 * after this one. PostgreSQL: (horizon, 0) in both; SQLite: the last row written to each.
 */
export async function feedHorizon(db: Q, dialect: Dialect): Promise<FeedPositions> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ h: string }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h`.execute(db);
    const horizon = { xid: Number(rows[0]!.h), seq: 0 };
    return { revisions: horizon, members: horizon, catalog: horizon, library: horizon };
  }
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('playlist_revisions')
        .select((inner) => inner.fn.max('seq').as('seq'))
        .as('revisions'),
      eb
        .selectFrom('member_events')
        .select((inner) => inner.fn.max('seq').as('seq'))
        .as('members'),
      eb
        .selectFrom('catalog_changes')
        .select((inner) => inner.fn.max('seq').as('seq'))
        .as('catalog'),
      eb
        .selectFrom('library_changes')
        .select((inner) => inner.fn.max('seq').as('seq'))
        .as('library'),
    ])
    .executeTakeFirst();
  return {
    revisions: { xid: 0, seq: Number(row?.revisions ?? 0) },
    members: { xid: 0, seq: Number(row?.members ?? 0) },
    catalog: { xid: 0, seq: Number(row?.catalog ?? 0) },
    library: { xid: 0, seq: Number(row?.library ?? 0) },
  };
}

/**
 * The rows of a log (`alias` names its table in the query, '' for none) past `after`, and on PostgreSQL only those of
 * transactions below `horizon`: the one filter every read of the feed's logs applies.
 */
function pastPosition(alias: string, after: FeedPosition, horizon: number | undefined) {
  const xid = sql.ref(alias === '' ? 'xid' : `${alias}.xid`);
  const seq = sql.ref(alias === '' ? 'seq' : `${alias}.seq`);
  const past = sql<boolean>`(${xid}, ${seq}) > (${after.xid}, ${after.seq})`;
  return horizon === undefined ? past : sql<boolean>`${past} AND ${xid} < ${horizon}`;
}

const byPosition = (a: { position: FeedPosition }, b: { position: FeedPosition }) =>
  a.position.xid - b.position.xid || a.position.seq - b.position.seq;

/** The first `limit` rows of two lists sorted by `order`, in that order (the first list's row first on a tie). */
export function mergeSorted<T>(a: readonly T[], b: readonly T[], order: (x: T, y: T) => number, limit: number): T[] {
  const merged: T[] = [];
  let i = 0;
  let j = 0;
  while (merged.length < limit && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && order(a[i]!, b[j]!) <= 0)) merged.push(a[i++]!);
    else merged.push(b[j++]!);
  }
  return merged;
}

/**
 * The revisions after `after`, oldest first, at most `limit`, of the user's own playlists and of those they are a
 * member of now (a deleted one's too: memberships outlive a delete, so its members hear of it); on PostgreSQL only
 * those of transactions below `horizon` (a horizon read before these statements: all of them are finished and
 * visible to them). Two indexed reads of at most `limit` rows each, merged: the owner's by `playlist_revisions_feed`,
 * and the shared ones by the reader's memberships (`playlist_members_user`), each playlist's revisions after the
 * position read by `playlist_revisions_playlist_feed`, so that nothing lists the memberships in the application.
 */
export async function revisionsAfter(
  db: Q,
  dialect: Dialect,
  userId: number,
  after: FeedPosition,
  horizon: number | undefined,
  limit: number,
): Promise<FeedRow[]> {
  const owned = db
    .selectFrom('playlist_revisions as r')
    .select(['r.seq', 'r.xid', 'r.playlist_id', 'r.version', 'r.change', 'r.at', 'r.by_id'])
    .where(ownedBy(userId, 'r'))
    .where(pastPosition('r', after, horizon));
  const [own, theirs] = await Promise.all([
    owned.orderBy('r.xid').orderBy('r.seq').limit(limit).execute(),
    sharedRevisionsAfter(db, dialect, userId, after, horizon, limit),
  ]);
  return mergeSorted(own.map(feedRow), theirs.map(feedRow), byPosition, limit);
}

/**
 * The revisions after `after` of the playlists the user is a member of, oldest first, at most `limit`: for each
 * membership, one probe of that playlist's revisions from the position on. PostgreSQL is told so (a lateral join, at
 * most `limit` rows a playlist): left to choose, it may instead walk the whole index of every playlist's revisions
 * in one merge with the memberships, which grows with everyone's history. SQLite's planner probes per membership by
 * itself, and has no lateral join.
 */
function sharedRevisionsAfter(
  db: Q,
  dialect: Dialect,
  userId: number,
  after: FeedPosition,
  horizon: number | undefined,
  limit: number,
) {
  if (dialect === 'postgres') {
    return memberships(db, userId)
      .innerJoinLateral(
        (eb) => {
          return eb
            .selectFrom('playlist_revisions as pr')
            .select(['pr.seq', 'pr.xid', 'pr.playlist_id', 'pr.version', 'pr.change', 'pr.at', 'pr.by_id'])
            .whereRef('pr.playlist_id', '=', 'm.playlist_id')
            .where(pastPosition('pr', after, horizon))
            .orderBy('pr.xid')
            .orderBy('pr.seq')
            .limit(limit)
            .as('r');
        },
        (join) => join.onTrue(),
      )
      .select(['r.seq', 'r.xid', 'r.playlist_id', 'r.version', 'r.change', 'r.at', 'r.by_id'])
      .orderBy('r.xid')
      .orderBy('r.seq')
      .limit(limit)
      .execute();
  }
  return memberships(db, userId)
    .innerJoin('playlist_revisions as r', 'r.playlist_id', 'm.playlist_id')
    .select(['r.seq', 'r.xid', 'r.playlist_id', 'r.version', 'r.change', 'r.at', 'r.by_id'])
    .where(pastPosition('r', after, horizon))
    .orderBy('r.xid')
    .orderBy('r.seq')
    .limit(limit)
    .execute();
}

/** A revision's or member event's row as the feed reads it (bigints on PostgreSQL read with Number()). */
interface LogRow {
  readonly seq: number | string;
  readonly xid: number | string;
  readonly playlist_id: number;
  readonly version: number | string;
  readonly change: string;
  readonly at: number | string;
  /** A revision's: who made it. */
  readonly by_id?: number;
}

function feedRow(row: LogRow): FeedRow {
  return {
    id: row.playlist_id,
    version: Number(row.version),
    change: row.change as FeedChange,
    at: Number(row.at),
    position: { xid: Number(row.xid), seq: Number(row.seq) },
    ...(row.by_id === undefined ? {} : { byId: row.by_id }),
  };
}

/** The names of these users, by id (one read of the key). */
export async function userNames(db: Q, ids: readonly number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('users').select(['id', 'name']).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** The user's member events after `after`, oldest first, at most `limit`; on PostgreSQL only those below `horizon`. */
export async function memberEventsAfter(
  db: Q,
  userId: number,
  after: FeedPosition,
  horizon: number | undefined,
  limit: number,
): Promise<FeedRow[]> {
  const rows = await db
    .selectFrom('member_events')
    .select(['seq', 'xid', 'playlist_id', 'version', 'change', 'at'])
    .where('user_id', '=', userId)
    .where(pastPosition('', after, horizon))
    .orderBy('xid')
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map(feedRow);
}

/**
 * The user's current playlists and those shared with them after id `after`, in id order, at most `limit`, each with
 * its last revision: two indexed reads of at most `limit` rows (by owner, and by the user's memberships), merged.
 */
export async function playlistsAfter(
  db: Q,
  userId: number,
  after: number,
  limit: number,
): Promise<Omit<FeedRow, 'position'>[]> {
  const owned = ownPlaylists(db, userId)
    .leftJoin('playlist_revisions as r', (join) =>
      join.onRef('r.playlist_id', '=', 'p.id').onRef('r.version', '=', 'p.version'),
    )
    .select(['p.id', 'p.version', 'p.created_at', 'r.change', 'r.at'])
    .where('p.id', '>', after)
    .orderBy('p.id')
    .limit(limit)
    .execute();
  const shared = sharedPlaylists(db, userId)
    .leftJoin('playlist_revisions as r', (join) =>
      join.onRef('r.playlist_id', '=', 'p.id').onRef('r.version', '=', 'p.version'),
    )
    .select(['p.id', 'p.version', 'p.created_at', 'r.change', 'r.at'])
    .where('m.playlist_id', '>', after)
    .orderBy('m.playlist_id')
    .limit(limit)
    .execute();
  const [own, theirs] = await Promise.all([owned, shared]);
  const rows = (found: typeof own) =>
    found.map((row) => ({
      id: row.id,
      version: Number(row.version),
      change: row.change ?? 'create',
      at: Number(row.at ?? row.created_at),
    }));
  return mergeSorted(rows(own), rows(theirs), (a, b) => a.id - b.id, limit);
}

/** A catalog import as the feed reads it: the catalog version it reached, when, and where it stands in its log. */
export interface CatalogFeedRow {
  readonly catalog: number;
  readonly at: number;
  readonly position: FeedPosition;
}

/** The catalog's imports after `after`, oldest first, at most `limit`; on PostgreSQL only those below `horizon`. */
export async function catalogChangesAfter(
  db: Q,
  after: FeedPosition,
  horizon: number | undefined,
  limit: number,
): Promise<CatalogFeedRow[]> {
  const rows = await db
    .selectFrom('catalog_changes')
    .select(['seq', 'xid', 'version', 'at'])
    .where(pastPosition('', after, horizon))
    .orderBy('xid')
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    catalog: Number(row.version),
    at: Number(row.at),
    position: { xid: Number(row.xid), seq: Number(row.seq) },
  }));
}

/** A change of the reader's tree of folders as the feed reads it: the tree's version it made, when, and its place. */
export interface LibraryFeedRow {
  readonly library: number;
  readonly at: number;
  readonly position: FeedPosition;
}

/**
 * The latest change of the user's tree of folders if it is after `after` (the log keeps each user's latest only); on
 * PostgreSQL only if its transaction is below `horizon`. One read by the key.
 */
export async function libraryChangesAfter(
  db: Q,
  userId: number,
  after: FeedPosition,
  horizon: number | undefined,
): Promise<LibraryFeedRow[]> {
  const rows = await db
    .selectFrom('library_changes')
    .select(['seq', 'xid', 'at'])
    .where('user_id', '=', userId)
    .where(pastPosition('', after, horizon))
    .execute();
  return rows.map((row) => ({
    library: Number(row.seq),
    at: Number(row.at),
    position: { xid: Number(row.xid), seq: Number(row.seq) },
  }));
}

/** The catalog's version now, and when the last import that changed songs was (undefined when none is kept). */
export async function currentCatalog(db: Q): Promise<{ catalog: number; at: number | undefined }> {
  const row = await db
    .selectFrom('catalog_version')
    .select((eb) => [
      'version',
      eb
        .selectFrom('catalog_changes')
        .select((inner) => inner.fn.max('at').as('at'))
        .as('at'),
    ])
    .executeTakeFirstOrThrow();
  return { catalog: row.version, at: row.at === null ? undefined : Number(row.at) };
}

/** The key the instances share to sign the feed's tokens. */
export async function feedKey(db: Q): Promise<string> {
  const row = await db.selectFrom('service_keys').select('key').where('name', '=', 'changes').executeTakeFirstOrThrow();
  return row.key;
}
