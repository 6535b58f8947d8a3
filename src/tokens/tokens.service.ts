import { createHash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import type { Caller } from '../http/auth.js';
import { ApiError } from '../http/errors.js';
import { futureTime, rfc3339 } from '../http/times.js';
import { userName } from '../users/user-name.js';
import { findUserByName } from '../users/user.repository.js';
import * as tokens from './tokens.repository.js';
import type { TokenScope } from './tokens.repository.js';

/** What every token starts with, so that secret scanners find one leaked in code or logs. */
export const TOKEN_PREFIX = 'mixtape_';

/** Random bytes in a token: 256 bits, far past guessing. */
const TOKEN_BYTES = 32;

/** A token as made here: the prefix, then 32 bytes in base64url (43 characters). */
const TOKEN_FORM = /^mixtape_[A-Za-z0-9_-]{43}$/;

/** Live tokens a user may have at most. */
export const TOKENS_MAX = 50;

/** How long a token lives at most, and by default: a year. */
export const TOKEN_LIFETIME_MS = 365 * 86_400_000;

/** How often a token's `lastUsedAt` is written at most. */
export const LAST_USED_EVERY_MS = 60_000;

/** The one form a token is kept in and looked up by: SHA-256, hex (a token is random, so no salt is needed). */
export const tokenDigest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** A token as its user lists it. */
export interface AppToken {
  readonly id: number;
  readonly name: string;
  readonly scope: TokenScope;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly lastUsedAt: string | null;
}

/** A new token, with the one answer that ever shows its secret. */
export interface NewAppToken extends Omit<AppToken, 'lastUsedAt'> {
  readonly token: string;
}

const listed = (row: tokens.TokenRow): AppToken => ({
  id: Number(row.id),
  name: row.name,
  scope: row.scope,
  createdAt: rfc3339(Number(row.created_at)),
  expiresAt: rfc3339(Number(row.expires_at)),
  lastUsedAt: row.last_used_at === null ? null : rfc3339(Number(row.last_used_at)),
});

/** A live token as last found by its digest (SQLite), with what every connection had committed before it was read. */
interface Found {
  readonly caller: Omit<Caller, 'source'>;
  readonly expiresAt: number;
  readonly committed: string;
}

/** Tokens kept as found, at most (SQLite). */
const FOUND_MAX = 10_000;

/**
 * App tokens (API 1.11.0): a credential a user makes for one app with their password, so that the app never keeps
 * the password; listed and revoked by the user. A token is made here and shown once, in the answer that made it; only
 * its SHA-256 is stored. A request with a token costs its digest and one indexed statement, compiled once, whatever
 * the token, so that a revoked token fails at its next request on every instance. On SQLite a token found live is
 * kept by its digest with the database's `dataVersion` read before the lookup: while nothing has been committed by
 * any connection since (no revocation, no removal, on any instance) and it has not expired, its next request is
 * answered from memory, without a statement or a promise (`cached`); any commit sends it to the lookup again. A use
 * is noted (`lastUsedAt`) after the answer, at most once a minute per token from each instance, off the request's
 * path. At most TOKENS_MAX live tokens per user; expired ones are forgotten when the user's next is made.
 */
export function tokenService(db: Db, now: () => number = Date.now) {
  const q = db.kysely;
  /** When this instance last noted each token's use. */
  const noted = new LRUCache<number, number>({ max: 10_000 });
  const { dataVersion } = db;
  const found = dataVersion === undefined ? undefined : new LRUCache<string, Found>({ max: FOUND_MAX });
  const list = async (userId: number): Promise<AppToken[]> => (await tokens.liveTokens(q, userId, now())).map(listed);

  return {
    /** A new token for the user; 400 for an expiry in the past or past a year ahead, 409 past TOKENS_MAX. */
    async create(userId: number, name: string, scope: TokenScope, expiresAt: string | undefined): Promise<NewAppToken> {
      const at = now();
      let expires = at + TOKEN_LIFETIME_MS;
      if (expiresAt !== undefined) {
        const read = futureTime(expiresAt, 'expiresAt', at);
        if (read > expires) throw ApiError.badRequest('"expiresAt" must be at most a year (365 days) ahead.');
        expires = read;
      }
      const token = TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString('base64url');
      const made = await db.write(async (trx) => {
        if (!(await tokens.lockUser(trx, db.dialect, userId))) return undefined;
        await tokens.deleteExpiredTokens(trx, userId, at);
        if ((await tokens.countLiveTokens(trx, userId, at)) >= TOKENS_MAX) {
          throw ApiError.conflict(`You have ${TOKENS_MAX} live tokens, the most one user may have; revoke one first.`);
        }
        const digest = tokenDigest(token);
        return tokens.insertToken(trx, { userId, name, scope, digest, createdAt: at, expiresAt: expires });
      });
      // Removed since the request was authenticated.
      if (made === undefined) throw new ApiError(401, 'This user no longer exists.');
      return { id: Number(made.id), name, scope, createdAt: rfc3339(at), expiresAt: rfc3339(expires), token };
    },

    /** The user's live tokens, oldest first, without their secret. */
    list,

    /** Revokes a live token of the user: it works nowhere from its next request on; 404 for none. */
    async revoke(userId: number, id: number): Promise<void> {
      const deleted = await db.write((trx) => tokens.deleteToken(trx, userId, id, now()));
      if (!deleted) throw ApiError.notFound('You have no live token with this id.');
    },

    /**
     * The caller a token stands for, or undefined for a malformed, unknown, revoked or expired one (a token sent
     * by `source`). Every well-formed token costs the same: its digest and one statement.
     */
    async caller(token: string, source: Caller['source']): Promise<Caller | undefined> {
      if (!TOKEN_FORM.test(token)) return undefined;
      const digest = tokenDigest(token);
      // Read before the lookup: a commit after it, even one the lookup saw, sends the token to the lookup again.
      const committed = dataVersion?.();
      const row = await tokens.findLiveToken(q, digest, now());
      if (row === undefined) return undefined;
      const { user_id: userId, name, scope } = row;
      const caller: Found['caller'] = { userId, name, via: 'token', scope, tokenId: Number(row.id) };
      if (committed !== undefined) found?.set(digest, { caller, expiresAt: Number(row.expires_at), committed });
      return { ...caller, source };
    },

    /**
     * SQLite: the caller of a token found live by `caller` when nothing has been committed anywhere since and it has
     * not expired, without a statement or a promise; undefined otherwise (then `caller` decides).
     */
    cached(token: string, source: Caller['source']): Caller | undefined {
      if (found === undefined || !TOKEN_FORM.test(token)) return undefined;
      const digest = tokenDigest(token);
      const kept = found.get(digest);
      if (kept === undefined) return undefined;
      if (kept.expiresAt <= now() || kept.committed !== dataVersion!()) {
        found.delete(digest);
        return undefined;
      }
      return { ...kept.caller, source };
    },

    /**
     * A request with the token was answered: its use is noted, unless this instance noted one less than a minute
     * ago. Not awaited; a write that fails is tried again at the token's next request.
     */
    used(tokenId: number): void {
      const at = now();
      const last = noted.get(tokenId);
      if (last !== undefined && at - last < LAST_USED_EVERY_MS) return;
      noted.set(tokenId, at);
      db.write((trx) => tokens.noteTokenUse(trx, tokenId, at, LAST_USED_EVERY_MS)).catch(() => {
        noted.delete(tokenId);
      });
    },

    /** The command line's: a user's live tokens by name; undefined when there is no such user. */
    async listOf(name: string): Promise<AppToken[] | undefined> {
      const user = await findUserByName(q, userName(name));
      return user === undefined ? undefined : list(user.id);
    },

    /** The command line's: revokes a user's token; 'no-user' or 'no-token' when there is none. */
    async revokeOf(name: string, id: number): Promise<'revoked' | 'no-user' | 'no-token'> {
      const user = await findUserByName(q, userName(name));
      if (user === undefined) return 'no-user';
      const deleted = await db.write((trx) => tokens.deleteToken(trx, user.id, id, now()));
      return deleted ? 'revoked' : 'no-token';
    },
  };
}

export type TokenService = ReturnType<typeof tokenService>;
