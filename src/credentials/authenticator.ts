import { createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AuthConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { findUserById, findUserByName } from '../users/user.repository.js';
import { readCredential } from './credential.js';
import { hashPassword, verifyPassword } from './password.js';

/** Who a request is made for. */
export interface Caller {
  readonly userId: number;
  readonly name: string;
  /** Where the credential came from: bodies sent as text are only taken with the `security` header. */
  readonly source: 'security' | 'authorization';
}

interface Verified {
  readonly userId: number;
  readonly name: string;
  readonly passwordHash: string;
  checkedAt: number;
}

const CHALLENGE = { 'www-authenticate': 'Basic realm="mixtape", charset="UTF-8"' } as const;

export const unauthorized = (message: string): ApiError => new ApiError(401, message, CHALLENGE);

const WRONG = 'The user name or password is wrong.';

/**
 * Checks Basic credentials. A slow hash on every request would cap the service, so verified credentials are
 * cached, keyed by an HMAC of the credential with a per-process key; a cached entry is checked against the
 * database again after `recheckMs`, so a password change or removal reaches every instance within that time.
 * Failed attempts are counted per user name and per client address; past `maxFailures` in the window, 429.
 */
export class Authenticator {
  private readonly key = randomBytes(32);
  private readonly verified: LRUCache<string, Verified>;
  private readonly failures: LRUCache<string, { count: number; until: number }>;
  private readonly dummyHash: Promise<string>;

  constructor(
    private readonly db: Db,
    private readonly config: AuthConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.verified = new LRUCache({ max: config.cacheSize });
    this.failures = new LRUCache({ max: 100_000 });
    // Unknown users are checked against this hash so that they take as long as a wrong password.
    this.dummyHash = hashPassword(randomBytes(16).toString('hex'));
  }

  /** The caller, or an ApiError: 401 for a missing, malformed or wrong credential, 429 when throttled. */
  async authenticate(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    address: string,
  ): Promise<Caller> {
    const result = readCredential(headers);
    switch (result.kind) {
      case 'missing':
        throw unauthorized('This request needs a credential: send Basic base64(user:password) in the security header.');
      case 'malformed':
        throw unauthorized('The credential is malformed: send Basic base64(user:password).');
      case 'too-long':
        this.throttle(result.name, address);
        this.recordFailure(result.name, address);
        throw unauthorized(WRONG);
      case 'ok':
        break;
    }
    const { credential } = result;
    const cacheKey = createHmac('sha256', this.key).update(credential.secret).digest('base64');
    const cached = this.verified.get(cacheKey);
    if (cached !== undefined && (await this.stillValid(cached))) {
      return { userId: cached.userId, name: cached.name, source: credential.source };
    }
    if (cached !== undefined) this.verified.delete(cacheKey);

    this.throttle(credential.name, address);
    const user = await findUserByName(this.db.kysely, credential.name);
    const ok = await verifyPassword(credential.password, user?.password_hash ?? (await this.dummyHash));
    if (user === undefined || !ok) {
      this.recordFailure(credential.name, address);
      throw unauthorized(WRONG);
    }
    this.verified.set(cacheKey, {
      userId: user.id,
      name: user.name,
      passwordHash: user.password_hash,
      checkedAt: this.now(),
    });
    return { userId: user.id, name: user.name, source: credential.source };
  }

  private async stillValid(entry: Verified): Promise<boolean> {
    if (this.now() - entry.checkedAt < this.config.recheckMs) return true;
    const user = await findUserById(this.db.kysely, entry.userId);
    if (user?.password_hash !== entry.passwordHash) return false;
    entry.checkedAt = this.now();
    return true;
  }

  private throttle(name: string, address: string): void {
    const now = this.now();
    for (const key of [`user:${name}`, `addr:${address}`]) {
      const record = this.failures.get(key);
      if (record !== undefined && record.count >= this.config.maxFailures && record.until > now) {
        throw ApiError.tooManyRequests(
          (record.until - now) / 1000,
          'Too many failed sign-in attempts; wait before trying again.',
        );
      }
    }
  }

  private recordFailure(name: string, address: string): void {
    const now = this.now();
    for (const key of [`user:${name}`, `addr:${address}`]) {
      const record = this.failures.get(key);
      if (record === undefined || record.until <= now) {
        this.failures.set(key, { count: 1, until: now + this.config.failureWindowMs });
      } else {
        record.count += 1;
      }
    }
  }
}
