import { sql, type Kysely } from 'kysely';
import { compiledOnce } from '../db/compiled.js';
import { catalogVersion, type BigintColumn } from '../db/playlist-changes.js';
import { prepared } from '../db/postgres.js';
import type { Database } from '../db/schema.js';
import type { MemberRole } from '../sharing/roles.js';

type Q = Kysely<Database>;

/** The caller's standing towards a playlist as the database holds it (see playlist-access.reader.ts, the one caller). */
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

const accessRow = compiledOnce(
  'playlist-access-row',
  (p: { id: number; userId: number }) => (q) =>
    q
      .selectFrom('playlists as p')
      .innerJoin('users as o', 'o.id', 'p.owner_id')
      .leftJoin('playlist_members as m', (join) =>
        join.onRef('m.playlist_id', '=', 'p.id').on('m.user_id', '=', p.userId),
      )
      .select(['p.owner_id', 'p.version', catalogVersion, 'm.role', 'o.name as owner_name'])
      .where('p.id', '=', p.id)
      .where((eb) => eb.or([eb('p.owner_id', '=', p.userId), eb('m.user_id', '=', p.userId)])),
);

/** A caller's `AccessRow` as `playlistAccessRows` reads it: which request it answers, and what it asked. */
export interface AccessRowOf extends AccessRow {
  /** The request's place in the batch, from 1. */
  readonly n: number | string;
  /** How many songs the playlist holds, when its request asked (an edit's); null otherwise. */
  readonly song_count: number | string | null;
}

/** One request of `playlistAccessRows`: the caller, the playlist, and whether its songs are counted. */
export interface AccessRequest {
  readonly id: number;
  readonly userId: number;
  readonly count: boolean;
}

/**
 * `playlistAccessRow` for several requests in one statement (PostgreSQL): the rows of those where the caller owns
 * the playlist or is one of its members, each naming its request by its place. A request that asks has its
 * playlist's songs counted in the same statement (an edit's, which a long playlist makes a large request); the
 * others count none.
 */
export async function playlistAccessRows(db: Q, requests: readonly AccessRequest[]): Promise<AccessRowOf[]> {
  const ids = requests.map((request) => request.id);
  const users = requests.map((request) => request.userId);
  const counts = requests.map((request) => request.count);
  const { rows } = await sql<AccessRowOf>`${prepared('playlist-access')}
    SELECT r.n, p.owner_id, p.version, (SELECT version FROM catalog_version) AS catalog_version, m.role,
      o.name AS owner_name,
      CASE WHEN r.count THEN (SELECT count(*) FROM playlist_songs s WHERE s.playlist_id = p.id) END AS song_count
    FROM unnest(${ids}::bigint[], ${users}::bigint[], ${counts}::boolean[]) WITH ORDINALITY AS r (id, user_id, count, n)
    JOIN playlists p ON p.id = r.id
    JOIN users o ON o.id = p.owner_id
    LEFT JOIN playlist_members m ON m.playlist_id = p.id AND m.user_id = r.user_id
    WHERE p.owner_id = r.user_id OR m.user_id IS NOT NULL`.execute(db);
  return rows;
}
