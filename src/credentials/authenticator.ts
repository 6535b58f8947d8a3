import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { Bounded } from '../concurrency/bounded.js';
import type { AuthConfig } from '../config.js';
import type { Db } from '../db/database.js';
import type { Caller, CallerCheck } from '../http/auth.js';
import { ApiError } from '../http/errors.js';
import { UserError, userName } from '../users/user-name.js';
import { findUserById, findUserByName } from '../users/user.repository.js';
import { bearerToken, credentialToken, readCredential } from './credential.js';
import { HmacKey } from './hmac.js';
import { hashPassword, verifyPassword } from './password.js';
import { SignInThrottle, type Attempt } from './throttle.js';

interface Verified {
  readonly userId: number;
  readonly name: string;
  readonly passwordHash: string;
  checkedAt: number;
}

const CHALLENGE = { 'www-authenticate': 'Basic realm="mixtape", charset="UTF-8"' } as const;

export const unauthorized = (message: string): ApiError => new ApiError(401, message, CHALLENGE);

/** The challenge of an app token that is malformed, unknown, revoked or expired (RFC 6750). */
const INVALID_TOKEN = { 'www-authenticate': 'Bearer error="invalid_token"' } as const;

const BAD_TOKEN =
  'This token is malformed, unknown, revoked or expired: make a new one (POST /v3/token) with the password.';

/**
 * The name every failed token is counted under in the sign-in throttle: one no user can have (a NUL), so that a flood
 * of unknown tokens spends its address's budgets, as wrong passwords do, and never a user's.
 */
const TOKEN_ATTEMPTS = '\u0000app-token';

/** What checks an app token (tokens/tokens.service.ts, which app.ts passes): its caller, or undefined. */
export interface BearerCheck {
  caller(token: string, source: Caller['source']): Promise<Caller | undefined>;
  /** The token's caller when known without a promise, undefined otherwise (then `caller` decides). */
  cached?(token: string, source: Caller['source']): Caller | undefined;
  /** A request with the token was answered. */
  used(tokenId: number): void;
}

const WRONG = 'The user name or password is wrong.';

const renewKey = (name: string, address: string) => `${address}\u0000${name}`;

const crowded = () => ApiError.unavailable('Too many sign-ins are being checked; try again in a moment.', 1);

/**
 * Checks Basic credentials, and app tokens (`Bearer`, 1.11.0) through the `BearerCheck` it is given. A slow hash on every request would cap the service, so verified credentials are
 * cached, keyed by an HMAC with a per-process key of the credential's token as sent (the base64 of `name:password`,
 * never decoded on a cached request), so that the cache holds no password and a request it answers costs one HMAC
 * and one lookup. Two encodings of one credential (base64 admits a few) are two entries, each verified once. A
 * cached entry is checked against the database again after `recheckMs`, so a password change or removal reaches
 * every instance within that time.
 *
 * A credential that is not cached is a sign-in attempt: it is counted by the throttle, in the database that every
 * instance shares, before its hash is computed (429 once a budget is spent), and hashes are computed a few at a
 * time (each takes about 32 MB and 60 ms), with a short queue; beyond it, 503. Attempts from an address not known
 * for their name may take only half of that queue, so that guesses from elsewhere leave room for users signing in
 * from their own addresses. A request answered from the cache keeps its address known for its name (a write at
 * most every quarter of `knownMs` per name and address on each instance), so that an address in use never lapses.
 */
export class Authenticator implements CallerCheck {
  readonly #key = new HmacKey(randomBytes(32));
  readonly #verified: LRUCache<string, Verified>;
  /** When this instance last renewed each address's known mark for a name. */
  readonly #renewed: LRUCache<string, number>;
  readonly #checking = new Map<string, Promise<Verified | undefined>>();
  readonly #throttle: SignInThrottle;
  readonly #hashing: Bounded;
  readonly #dummyHash: Promise<string>;

  readonly #db: Db;
  readonly #config: AuthConfig;
  readonly #now: () => number;
  readonly #bearer: BearerCheck | undefined;

  constructor(db: Db, config: AuthConfig, now: () => number = Date.now, bearer?: BearerCheck) {
    this.#db = db;
    this.#config = config;
    this.#now = now;
    this.#bearer = bearer;
    this.#verified = new LRUCache({ max: config.cacheSize });
    this.#renewed = new LRUCache({ max: config.cacheSize });
    this.#throttle = new SignInThrottle(db, config.throttle, now);
    this.#hashing = new Bounded({
      limit: config.hashConcurrency,
      queue: config.hashQueue,
      waitMs: config.hashWaitMs,
      refuse: crowded,
    });
    // Unknown users are checked against this hash so that they take as long as a wrong password.
    this.#dummyHash = hashPassword(randomBytes(16).toString('hex'));
  }

  /**
   * The caller, when the credential was verified and rechecked recently enough to need nothing else: no promise,
   * no database (an app token: when its check says so, `BearerCheck.cached`). Undefined otherwise (then
   * `authenticate` decides).
   */
  cachedCaller(headers: Readonly<Record<string, string | string[] | undefined>>, address: string): Caller | undefined {
    const bearer = bearerToken(headers);
    if (bearer !== undefined) return this.#bearer?.cached?.(bearer.token, bearer.source);
    const found = credentialToken(headers);
    if (found.kind !== 'token' || /^bearer\s/i.test(found.token)) return undefined;
    const cached = this.#verified.get(this.#key.digest(found.token));
    if (cached === undefined || this.#now() - cached.checkedAt >= this.#config.recheckMs) return undefined;
    this.#renewKnown(cached.name, address);
    return { userId: cached.userId, name: cached.name, source: found.source, via: 'password', scope: 'all' };
  }

  /** A request of the caller's was answered: a token's use is noted. */
  answered(caller: Caller): void {
    if (caller.tokenId !== undefined) this.#bearer?.used(caller.tokenId);
  }

  /** The caller, or an ApiError: 401 for a missing, malformed or wrong credential, 429 when throttled, 503. */
  async authenticate(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    address: string,
  ): Promise<Caller> {
    const bearer = bearerToken(headers);
    if (bearer !== undefined) return this.#tokenCaller(bearer.token, bearer.source, address);
    const result = readCredential(headers);
    switch (result.kind) {
      case 'missing':
        throw unauthorized('This request needs a credential: send Basic base64(user:password) in the security header.');
      case 'malformed':
        throw unauthorized('The credential is malformed: send Basic base64(user:password).');
      case 'too-long':
        // Never hashed, but counted like any wrong password.
        this.#throttle.finished(await this.#begin(result.name, address));
        throw unauthorized(WRONG);
      case 'ok':
        break;
    }
    const { credential } = result;
    const name = await this.#userName(credential.name, address);
    const cacheKey = this.#key.digest(credential.token);
    const cached = this.#verified.get(cacheKey);
    if (cached !== undefined && (await this.#stillValid(cached))) {
      this.#renewKnown(cached.name, address);
      return { userId: cached.userId, name: cached.name, source: credential.source, via: 'password', scope: 'all' };
    }
    if (cached !== undefined) this.#verified.delete(cacheKey);

    // The same credential sent on several connections at once (a client starting up) is one attempt, checked once.
    let check = this.#checking.get(cacheKey);
    if (check === undefined) {
      check = this.#signIn(name, credential.password, address).finally(() => {
        this.#checking.delete(cacheKey);
      });
      this.#checking.set(cacheKey, check);
    }
    const verified = await check;
    if (verified === undefined) throw unauthorized(WRONG);
    this.#verified.set(cacheKey, verified);
    return { userId: verified.userId, name: verified.name, source: credential.source, via: 'password', scope: 'all' };
  }

  /**
   * The caller of an app token: a digest and one lookup, never a password hash. A token that is malformed, unknown,
   * revoked or expired is a failed sign-in attempt from its address (429 once its budgets are spent), counted under
   * a name no user has, then 401.
   */
  async #tokenCaller(token: string, source: Caller['source'], address: string): Promise<Caller> {
    const caller = await this.#bearer?.caller(token, source);
    if (caller !== undefined) return caller;
    this.#throttle.finished(await this.#begin(TOKEN_ATTEMPTS, address));
    throw new ApiError(401, BAD_TOKEN, INVALID_TOKEN);
  }

  /**
   * The name as users are stored (NFC), so that either form of `josé` signs in as the one user and spends one
   * budget. A name that no user can have is counted as a failed attempt and answered with the rule it breaks.
   */
  async #userName(given: string, address: string): Promise<string> {
    try {
      return userName(given);
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      this.#throttle.finished(await this.#begin(given, address));
      throw unauthorized(error.message);
    }
  }

  /** One sign-in attempt: counted, then the password checked; the user, or undefined for a wrong credential. */
  async #signIn(name: string, password: string, address: string): Promise<Verified | undefined> {
    const attempt = await this.#begin(name, address);
    try {
      const user = await findUserByName(this.#db.kysely, name);
      const stored = user?.password_hash ?? (await this.#dummyHash);
      if (!attempt.knownAddress && this.#queueFull(Math.ceil(this.#config.hashQueue / 2))) throw crowded();
      const ok = await this.#hashing.run(() => verifyPassword(password, stored));
      if (user === undefined || !ok) return undefined;
      await this.#throttle.succeeded(attempt);
      this.#renewed.set(renewKey(user.name, address), this.#now());
      return { userId: user.id, name: user.name, passwordHash: user.password_hash, checkedAt: this.#now() };
    } finally {
      this.#throttle.finished(attempt);
    }
  }

  /** Counts a sign-in attempt as failed until it succeeds; 429 when a budget is spent. */
  async #begin(name: string, address: string): Promise<Attempt> {
    const attempt = await this.#throttle.begin(name, address);
    if ('retryAfterSeconds' in attempt) {
      if (attempt.why === 'crowded') throw crowded();
      throw ApiError.tooManyRequests(
        attempt.retryAfterSeconds,
        attempt.why === 'spent'
          ? `Too many failed sign-in attempts; wait ${ApiError.waitInWords(attempt.retryAfterSeconds)} before trying again.`
          : 'Too many sign-ins from your address are being checked at once; try again in a moment.',
      );
    }
    return attempt;
  }

  /** Whether every hashing slot is taken and at least `waiting` attempts wait. */
  #queueFull(waiting: number): boolean {
    return this.#hashing.active >= this.#config.hashConcurrency && this.#hashing.waiting >= waiting;
  }

  /** Keeps the address known for the name, writing at most once a quarter of `knownMs` from this instance. */
  #renewKnown(name: string, address: string): void {
    const key = renewKey(name, address);
    const now = this.#now();
    const last = this.#renewed.get(key);
    if (last !== undefined && now - last < this.#config.throttle.knownMs / 4) return;
    this.#renewed.set(key, now);
    this.#throttle.renewKnown(name, address).catch(() => {
      // Tried again at the next request.
      this.#renewed.delete(key);
    });
  }

  async #stillValid(entry: Verified): Promise<boolean> {
    if (this.#now() - entry.checkedAt < this.#config.recheckMs) return true;
    const user = await findUserById(this.#db.kysely, entry.userId);
    if (user?.password_hash !== entry.passwordHash) return false;
    entry.checkedAt = this.#now();
    return true;
  }
}
