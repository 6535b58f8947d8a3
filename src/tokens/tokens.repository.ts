import type { Kysely } from 'kysely';
import { compiledOnce } from '../db/compiled.js';
import { lockingRows, type Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';

type Q = Kysely<Database>;

export type TokenScope = 'read' | 'write';

/** A token as its user lists it: never its secret, which is not stored. */
export interface TokenRow {
  id: number | string;
  name: string;
  scope: TokenScope;
  created_at: number | string;
  expires_at: number | string;
  last_used_at: number | string | null;
}

/** What a live token's digest stands for: the token, its scope and its user. */
export interface TokenCaller {
  id: number | string;
  scope: TokenScope;
  user_id: number;
  name: string;
  expires_at: number | string;
}

const LISTED = ['id', 'name', 'scope', 'created_at', 'expires_at', 'last_used_at'] as const;

/**
 * The live token of a digest, with its user's name, in one statement through the digest's unique index whatever the
 * outcome: an unknown, revoked (deleted) or expired token finds nothing, by the same statement. Compiled once: every
 * request with a token runs it.
 */
const liveByDigest = compiledOnce(
  'app-token-by-digest',
  (p: { digest: string; now: number }) => (q) =>
    q
      .selectFrom('app_tokens as t')
      .innerJoin('users as u', 'u.id', 't.user_id')
      .select(['t.id', 't.scope', 't.user_id', 'u.name', 't.expires_at'])
      .where('t.digest', '=', p.digest)
      .where('t.expires_at', '>', p.now),
);

export async function findLiveToken(db: Q, digest: string, now: number): Promise<TokenCaller | undefined> {
  const { rows } = await liveByDigest(db, { digest, now });
  return rows[0];
}

/** Notes a use of the token, unless one was noted less than `everyMs` ago (by this instance or another). */
const noteUse = compiledOnce(
  'app-token-used',
  (p: { id: number; now: number; since: number }) => (q) =>
    q
      .updateTable('app_tokens')
      .set({ last_used_at: p.now })
      .where('id', '=', p.id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', p.since)])),
);

export async function noteTokenUse(db: Q, id: number, now: number, everyMs: number): Promise<void> {
  await noteUse(db, { id, now, since: now - everyMs });
}

/** Holds the user's row until the transaction ends (PostgreSQL), so that two new tokens are counted one by one. */
export async function lockUser(db: Q, dialect: Dialect, userId: number): Promise<boolean> {
  const row = await lockingRows(
    db.selectFrom('users').select('id').where('id', '=', userId),
    dialect,
  ).executeTakeFirst();
  return row !== undefined;
}

/** Forgets the user's expired tokens: they work nowhere, and no one lists them. */
export async function deleteExpiredTokens(db: Q, userId: number, now: number): Promise<void> {
  await db.deleteFrom('app_tokens').where('user_id', '=', userId).where('expires_at', '<=', now).execute();
}

export async function countLiveTokens(db: Q, userId: number, now: number): Promise<number> {
  const row = await db
    .selectFrom('app_tokens')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function insertToken(
  db: Q,
  token: { userId: number; name: string; scope: TokenScope; digest: string; createdAt: number; expiresAt: number },
): Promise<{ id: number | string }> {
  return db
    .insertInto('app_tokens')
    .values({
      user_id: token.userId,
      name: token.name,
      scope: token.scope,
      digest: token.digest,
      created_at: token.createdAt,
      expires_at: token.expiresAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
}

/** The user's live tokens, oldest first. */
export function liveTokens(db: Q, userId: number, now: number): Promise<TokenRow[]> {
  return db
    .selectFrom('app_tokens')
    .select(LISTED)
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .orderBy('id')
    .execute();
}

/** Deletes one live token of the user; false when they have no such token (or it had expired). */
export async function deleteToken(db: Q, userId: number, id: number, now: number): Promise<boolean> {
  const result = await db
    .deleteFrom('app_tokens')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}
