import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { ChangeKind } from './revision.repository.js';

type Q = Kysely<Database>;

/**
 * A place in the change feed: every revision at or before (`xid`, `seq`) was delivered. On SQLite `xid` is always 0
 * and `seq` alone orders revisions: one writer at a time commits them in the order it numbers them. On PostgreSQL a
 * sequence number taken in a transaction that commits after a later one would be skipped by a reader already past
 * it; so each revision carries its transaction's id, and a reader delivers only revisions of transactions older
 * than the oldest still running (the horizon, `pg_snapshot_xmin`): no revision can appear there any more.
 */
export interface FeedPosition {
  readonly xid: number;
  readonly seq: number;
}

export interface FeedRow {
  readonly id: number;
  readonly version: number;
  readonly change: ChangeKind;
  readonly at: number;
  readonly position: FeedPosition;
}

/**
 * Where the feed stands now: every revision before it is committed and visible to any read that starts after this
 * one. PostgreSQL: (horizon, 0); SQLite: the last revision written.
 */
export async function feedHorizon(db: Q, dialect: Dialect): Promise<FeedPosition> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ h: string }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h`.execute(db);
    return { xid: Number(rows[0]!.h), seq: 0 };
  }
  const row = await db
    .selectFrom('playlist_revisions')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .executeTakeFirst();
  return { xid: 0, seq: Number(row?.seq ?? 0) };
}

/**
 * The owner's revisions after `after`, oldest first, at most `limit`; on PostgreSQL only those of transactions below
 * `horizon` (a horizon read before this statement: all of them are finished and visible to it).
 */
export async function revisionsAfter(
  db: Q,
  ownerId: number,
  after: FeedPosition,
  horizon: number | undefined,
  limit: number,
): Promise<FeedRow[]> {
  let query = db
    .selectFrom('playlist_revisions')
    .select(['seq', 'xid', 'playlist_id', 'version', 'change', 'at'])
    .where('owner_id', '=', ownerId)
    .where(sql<boolean>`(xid, seq) > (${after.xid}, ${after.seq})`);
  if (horizon !== undefined) query = query.where('xid', '<', horizon);
  const rows = await query.orderBy('xid').orderBy('seq').limit(limit).execute();
  return rows.map((row) => ({
    id: row.playlist_id,
    version: Number(row.version),
    change: row.change as ChangeKind,
    at: Number(row.at),
    position: { xid: Number(row.xid), seq: Number(row.seq) },
  }));
}

/** The owner's current playlists after id `after`, in id order, at most `limit`, each with its last revision. */
export async function playlistsAfter(
  db: Q,
  ownerId: number,
  after: number,
  limit: number,
): Promise<Omit<FeedRow, 'position'>[]> {
  const rows = await db
    .selectFrom('playlists as p')
    .leftJoin('playlist_revisions as r', (join) =>
      join.onRef('r.playlist_id', '=', 'p.id').onRef('r.version', '=', 'p.version'),
    )
    .select(['p.id', 'p.version', 'p.created_at', 'r.change', 'r.at'])
    .where('p.owner_id', '=', ownerId)
    .where('p.id', '>', after)
    .orderBy('p.id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    version: Number(row.version),
    change: (row.change ?? 'create') as ChangeKind,
    at: Number(row.at ?? row.created_at),
  }));
}

/** The key the instances share to sign the feed's tokens. */
export async function feedKey(db: Q): Promise<string> {
  const row = await db.selectFrom('service_keys').select('key').where('name', '=', 'changes').executeTakeFirstOrThrow();
  return row.key;
}
