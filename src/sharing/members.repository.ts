import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { MemberChange } from '../domain/change-kinds.js';
import type { MemberRole } from '../domain/roles.js';

type Q = Kysely<Database>;

/** A member of a playlist, as its list shows them. */
export interface MemberRow {
  readonly userId: number;
  readonly name: string;
  readonly role: MemberRole;
}

/**
 * The playlist's owner's name and its members with theirs, in no particular order; the owner undefined when the
 * playlist is gone (deleted since access was granted).
 */
export async function playlistMembers(
  db: Q,
  playlistId: number,
): Promise<{ owner: string | undefined; members: MemberRow[] }> {
  const [owner, members] = await Promise.all([
    db
      .selectFrom('playlists as p')
      .innerJoin('users as u', 'u.id', 'p.owner_id')
      .select('u.name')
      .where('p.id', '=', playlistId)
      .executeTakeFirst(),
    db
      .selectFrom('playlist_members as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['m.user_id', 'u.name', 'm.role'])
      .where('m.playlist_id', '=', playlistId)
      .execute(),
  ]);
  return {
    owner: owner?.name,
    members: members.map((row) => ({ userId: row.user_id, name: row.name, role: row.role })),
  };
}

export async function countMembers(trx: Q, playlistId: number): Promise<number> {
  const row = await trx
    .selectFrom('playlist_members')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('playlist_id', '=', playlistId)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** How many playlists the user is a member of, deleted ones included: a read of the key (member, playlist) alone. */
export async function countMemberships(trx: Q, userId: number): Promise<number> {
  const row = await trx
    .selectFrom('playlist_members')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Adds the member or gives them this role. */
export async function putMember(
  trx: Q,
  member: { playlistId: number; userId: number; ownerId: number; role: MemberRole; at: number },
): Promise<void> {
  await trx
    .insertInto('playlist_members')
    .values({
      playlist_id: member.playlistId,
      user_id: member.userId,
      owner_id: member.ownerId,
      role: member.role,
      added_at: member.at,
    })
    .onConflict((oc) => oc.columns(['playlist_id', 'user_id']).doUpdateSet({ role: member.role }))
    .execute();
}

/** Removes the membership; false when there was none. */
export async function deleteMember(trx: Q, playlistId: number, userId: number): Promise<boolean> {
  const result = await trx
    .deleteFrom('playlist_members')
    .where('playlist_id', '=', playlistId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Removes every member of the playlist (a deleted playlist that can no longer be restored). */
export async function deleteMembersOf(trx: Q, playlistId: number): Promise<void> {
  await trx.deleteFrom('playlist_members').where('playlist_id', '=', playlistId).execute();
}

/** Removes the oldest `limit` member events older than `cutoff`; returns how many it removed. */
export async function deleteMemberEventsBefore(trx: Q, cutoff: number, limit: number): Promise<number> {
  const removed = await trx
    .deleteFrom('member_events')
    .where('seq', 'in', (eb) =>
      eb.selectFrom('member_events').select('seq').where('at', '<', cutoff).orderBy('at').limit(limit),
    )
    .executeTakeFirst();
  return Number(removed.numDeletedRows);
}

/** Records what the member's change feed says of this membership, in the write's transaction. */
export async function recordMemberEvent(
  trx: Q,
  event: { userId: number; playlistId: number; change: MemberChange; version: number; at: number },
): Promise<void> {
  await trx
    .insertInto('member_events')
    .values({
      user_id: event.userId,
      playlist_id: event.playlistId,
      change: event.change,
      version: event.version,
      at: event.at,
    })
    .execute();
}

/**
 * Before an owner is removed (their memberships and playlists go with them by the foreign keys): `unshared` for
 * every member of their current playlists, so that the members' change feeds tell them.
 */
export async function recordOwnerLeaving(trx: Q, ownerId: number, at: number): Promise<void> {
  await trx
    .insertInto('member_events')
    .columns(['user_id', 'playlist_id', 'change', 'version', 'at'])
    .expression((eb) =>
      eb
        .selectFrom('playlist_members as m')
        .innerJoin('playlists as p', 'p.id', 'm.playlist_id')
        .select(['m.user_id', 'm.playlist_id', eb.val('unshared').as('change'), 'p.version', eb.val(at).as('at')])
        .where('m.owner_id', '=', ownerId),
    )
    .execute();
}
