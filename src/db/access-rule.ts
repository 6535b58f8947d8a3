import { sql, type Expression, type ExpressionBuilder, type Kysely } from 'kysely';
import type { Database } from './schema.js';

type Q = Kysely<Database>;

/**
 * Who may read a playlist: its owner, and its members (its rows of `playlist_members`). The one definition of it, in
 * two halves:
 *  - `ownedBy`: the user owns the playlist (on `p.owner_id`, or on the copy of it that the playlist's search document
 *    or a revision of it keeps, so that the owner's rows are read through that table's key (owner, …));
 *  - `sharedWith`: a membership `m` is the user's.
 * Every query of what a user may read is built from them: for one playlist `p`, `readableBy` (a condition) or
 * `readableWithRole` (the user's membership joined for its role: the access reads); for all of them, the two halves
 * read apart, each through its key, and put together (a union or a merge): `ownPlaylists`, and `memberships` or
 * `sharedPlaylists`.
 */

/** The user the rule is asked for: a value, or a column of the statement (a batch of several callers' reads). */
export type Reader = number | Expression<number>;

/**
 * The owner's half: `user` owns the playlist, on the owner column of `p` (the playlist), `d` (its search document) or
 * `r` (a revision of it).
 */
export const ownedBy = (user: Reader, row: 'p' | 'd' | 'r' = 'p') =>
  sql<boolean>`${sql.ref(`${row}.owner_id`)} = ${user}`;

/** The members' half: the membership `m` (`playlist_members as m`) is `user`'s. */
export const sharedWith = (user: Reader) => sql<boolean>`${sql.ref('m.user_id')} = ${user}`;

/** `m` is `user`'s membership of playlist `p`: read by the key (playlist, member). */
const membershipOf = (user: Reader) =>
  sql<boolean>`${sql.ref('m.playlist_id')} = ${sql.ref('p.id')} and ${sharedWith(user)}`;

/**
 * "The user owns playlist `p` or is one of its members": who may read a playlist, as a condition on a query of
 * `playlists as p`.
 */
export function readableBy(eb: ExpressionBuilder<Database & { p: Database['playlists'] }, 'p'>, user: Reader) {
  return eb.or([
    ownedBy(user),
    eb.exists(eb.selectFrom('playlist_members as m').select('m.user_id').where(membershipOf(user))),
  ]);
}

/**
 * Who may read playlist `p`, for a read that wants the member's role: `join`, the condition of a left join of
 * `playlist_members as m` to `p` (the user's membership, none for the owner); `readable`, the condition on the row it
 * makes: `user` owns `p`, or the join found their membership.
 */
export const readableWithRole = (user: Reader) => ({
  join: membershipOf(user),
  readable: sql<boolean>`(${ownedBy(user)} or ${sql.ref('m.user_id')} is not null)`,
});

/** The playlists `user` owns, `playlists as p`, through the key (owner, id). */
export const ownPlaylists = (q: Q, user: Reader) => q.selectFrom('playlists as p').where(ownedBy(user));

/**
 * `user`'s memberships, `playlist_members as m`, through the key (member, playlist): those of deleted playlists too
 * (memberships outlive a delete, see migration 2026-12-02-sharing).
 */
export const memberships = (q: Q, user: Reader) => q.selectFrom('playlist_members as m').where(sharedWith(user));

/** The current playlists shared with `user`: their memberships (`m`) joined to `playlists as p`. */
export const sharedPlaylists = (q: Q, user: Reader) =>
  memberships(q, user).innerJoin('playlists as p', 'p.id', 'm.playlist_id');
