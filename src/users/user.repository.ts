import type { Kysely } from 'kysely';
import type { Database, UserRow } from '../db/schema.js';
import { compiledOnce } from '../db/compiled.js';

type Q = Kysely<Database>;

export function findUserByName(db: Q, name: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
}

export function findUserById(db: Q, id: number): Promise<Pick<UserRow, 'id' | 'password_hash'> | undefined> {
  return db.selectFrom('users').select(['id', 'password_hash']).where('id', '=', id).executeTakeFirst();
}

/** Inserts the user unless the name is taken; returns the new id, or undefined when it was taken. */
export async function insertUser(db: Q, name: string, passwordHash: string, now: number): Promise<number | undefined> {
  const row = await db
    .insertInto('users')
    .values({ name, password_hash: passwordHash, created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

export async function updatePasswordHash(db: Q, name: string, passwordHash: string): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ password_hash: passwordHash })
    .where('name', '=', name)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteUser(db: Q, name: string): Promise<boolean> {
  const result = await db.deleteFrom('users').where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** True when at least one user exists. */
export async function anyUser(db: Q): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

export function listUsers(db: Q): Promise<Pick<UserRow, 'id' | 'name' | 'playlist_count' | 'created_at'>[]> {
  return db.selectFrom('users').select(['id', 'name', 'playlist_count', 'created_at']).orderBy('name').execute();
}

/** Takes one slot of the user's playlist quota: how many playlists the user now has, or undefined when it is used up. */
const reserveSlot = compiledOnce(
  'reserve-playlist-slot',
  (p: { userId: number; quota: number }) => (q) =>
    q
      .updateTable('users')
      .set((eb) => ({ playlist_count: eb('playlist_count', '+', 1) }))
      .where('id', '=', p.userId)
      .where('playlist_count', '<', p.quota)
      .returning('playlist_count'),
);

export async function reservePlaylistSlot(db: Q, userId: number, quota: number): Promise<number | undefined> {
  const { rows } = await reserveSlot(db, { userId, quota });
  return rows[0]?.playlist_count;
}

export async function releasePlaylistSlot(db: Q, userId: number): Promise<void> {
  await db
    .updateTable('users')
    .set((eb) => ({ playlist_count: eb('playlist_count', '-', 1) }))
    .where('id', '=', userId)
    .where('playlist_count', '>', 0)
    .execute();
}
