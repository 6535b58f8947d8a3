import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

type Q = Kysely<Database>;

/** A link as its owner sees it: never its token, which is not stored. */
export interface LinkRow {
  id: number;
  created_at: number | string;
  expires_at: number | string | null;
}

/** Links that have not expired at `now` (a link without an expiry never does). */
const live = (now: number) => (eb: ExpressionBuilder<Database, 'playlist_links'>) =>
  eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]);

/** Deletes every link of the playlist (a deleted playlist that can no longer be restored). */
export async function deleteLinksOf(db: Q, playlistId: number): Promise<void> {
  await db.deleteFrom('playlist_links').where('playlist_id', '=', playlistId).execute();
}

/** Forgets the playlist's expired links: they open nothing, and no one lists them. */
export async function deleteExpiredLinks(db: Q, playlistId: number, now: number): Promise<void> {
  await db.deleteFrom('playlist_links').where('playlist_id', '=', playlistId).where('expires_at', '<=', now).execute();
}

export async function countLiveLinks(db: Q, playlistId: number, now: number): Promise<number> {
  const row = await db
    .selectFrom('playlist_links')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('playlist_id', '=', playlistId)
    .where(live(now))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function insertLink(
  db: Q,
  link: { playlistId: number; ownerId: number; digest: string; createdAt: number; expiresAt: number | null },
): Promise<{ id: number }> {
  return db
    .insertInto('playlist_links')
    .values({
      playlist_id: link.playlistId,
      owner_id: link.ownerId,
      digest: link.digest,
      created_at: link.createdAt,
      expires_at: link.expiresAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}

/**
 * The playlist's live links, in id order, in one statement with the playlist's row: undefined when the playlist is
 * not there (deleted since access was granted).
 */
export async function liveLinks(db: Q, playlistId: number, now: number): Promise<LinkRow[] | undefined> {
  const rows = await db
    .selectFrom('playlists as p')
    .leftJoin('playlist_links as l', (join) =>
      join
        .onRef('l.playlist_id', '=', 'p.id')
        .on((eb) => eb.or([eb('l.expires_at', 'is', null), eb('l.expires_at', '>', now)])),
    )
    .select(['l.id', 'l.created_at', 'l.expires_at'])
    .where('p.id', '=', playlistId)
    .orderBy('l.id')
    .execute();
  if (rows.length === 0) return undefined;
  return rows.flatMap((row) =>
    row.id === null ? [] : [{ id: row.id, created_at: row.created_at!, expires_at: row.expires_at }],
  );
}

/** Deletes one live link of the playlist; false when it has no such link (or it had expired). */
export async function deleteLink(db: Q, playlistId: number, linkId: number, now: number): Promise<boolean> {
  const result = await db
    .deleteFrom('playlist_links')
    .where('id', '=', linkId)
    .where('playlist_id', '=', playlistId)
    .where(live(now))
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * What a token's digest opens, in one statement through the digest's unique index whatever the outcome: the
 * playlist, its owner and the owner's name while the link is live and its playlist is there (not deleted). An
 * unknown, revoked or expired token, or a deleted playlist's, finds nothing, by the same statement.
 */
export function openLink(
  db: Q,
  digest: string,
  now: number,
): Promise<{ playlist_id: number; owner_id: number; owner: string } | undefined> {
  return db
    .selectFrom('playlist_links as l')
    .innerJoin('playlists as p', (join) =>
      join.onRef('p.id', '=', 'l.playlist_id').onRef('p.owner_id', '=', 'l.owner_id'),
    )
    .innerJoin('users as u', 'u.id', 'l.owner_id')
    .select(['l.playlist_id', 'l.owner_id', 'u.name as owner'])
    .where('l.digest', '=', digest)
    .where((eb) => eb.or([eb('l.expires_at', 'is', null), eb('l.expires_at', '>', now)]))
    .executeTakeFirst();
}
