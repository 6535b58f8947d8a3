import type { Db } from '../db/database.js';
import { clientKey } from '../http/client-address.js';
import {
  budgetKey,
  type BudgetWindow,
  countFailures,
  giveBackFailure,
  markKnown,
  readBudgets,
  removeExpired,
} from './budget.repository.js';

/** Failed sign-in budgets, each over the same window. */
export interface ThrottlePolicy {
  /** Failures of one name from one address. */
  readonly perAddressAndName: number;
  /** Failures from one address, whatever the names. */
  readonly perAddress: number;
  /** Failures of one name from every address together: distributed guessing. */
  readonly perName: number;
  readonly windowMs: number;
  /** How long an address stays known for a name after a sign-in as it, or a request with its verified credential. */
  readonly knownMs: number;
  /** Attempts this instance counts a second (each writes up to three budget rows); half are kept for known addresses. */
  readonly attemptsPerSecond: number;
  /** IPv6 addresses are counted by this many leading bits (see `clientKey`). */
  readonly ipv6PrefixBits: number;
}

/** An attempt that has been counted as a failure until it is known to have succeeded. */
export interface Attempt {
  /** The budgets it was counted in, sorted. */
  readonly keys: readonly string[];
  /** The key that marks its address as known for its name. */
  readonly known: string;
  /** The client key of the address. */
  readonly address: string;
  /** Whether the address was known for the name when the attempt began. */
  readonly knownAddress: boolean;
}

/** Sign-ins from one address checked at the same time; more are refused at once and not counted. */
const IN_FLIGHT_PER_ADDRESS = 4;

/** How often an instance removes budgets whose window has ended. */
const CLEANUP_INTERVAL_MS = 1000;

/**
 * An attempt not checked: a budget of failures is spent (`spent`), this address already has as many sign-ins
 * being checked as it may (`busy`), or this instance counts as many attempts a second as it may (`crowded`).
 */
export interface Refused {
  readonly retryAfterSeconds: number;
  readonly why: 'spent' | 'busy' | 'crowded';
}

/**
 * The attempts an instance counts: a bucket of `perSecond` tokens, refilled continuously. An attempt from an address
 * not known for its name takes one only while more than half are left, so that a flood of guesses from new addresses
 * leaves the other half to the users signing in from theirs.
 */
class AttemptRate {
  #tokens: number;
  #at: number;

  constructor(
    private readonly perSecond: number,
    now: number,
  ) {
    this.#tokens = perSecond;
    this.#at = now;
  }

  take(knownAddress: boolean, now: number): boolean {
    this.#tokens = Math.min(this.perSecond, this.#tokens + (Math.max(0, now - this.#at) * this.perSecond) / 1000);
    this.#at = now;
    const needed = knownAddress ? 1 : 1 + Math.floor(this.perSecond / 2);
    if (this.#tokens < needed) return false;
    this.#tokens -= 1;
    return true;
  }
}

/** Thrown inside the counting transaction to undo it: a budget was already spent. */
class BudgetSpent extends Error {
  override name = 'BudgetSpent';

  constructor(readonly expiresAt: number) {
    super('a failed sign-in budget is spent');
  }
}

/**
 * The sign-in throttle. An attempt is counted as a failure when it begins, before any password is hashed, so that
 * concurrent attempts cannot all slip past the check; a success gives it back. Budgets are kept per address and
 * name, per address, and per name across addresses, so that one address guessing a name spends its own budget,
 * not the name's owner's. An address that signed in as a name within the window keeps signing in while only the
 * per-name budget is spent: an attack spread over many addresses cannot lock a user out of their usual one.
 *
 * An address stays known for a name for `knownMs` after its last sign-in, renewed while its verified credential is
 * used (`renewKnown`).
 *
 * The budgets and the known addresses are kept in the database, so that every instance on it counts against the
 * same budgets: each count is one transaction that adds the failure to every budget and is undone when one of
 * them was already spent. A read comes first, so that an attempt refused for a budget already spent writes nothing.
 * A database fault while counting fails the attempt (503 from the error handler); it is never let through
 * uncounted. Each instance counts at most `attemptsPerSecond` attempts a second, so that the table holds at most
 * three rows per attempt that an instance counts over a window (and a second), whatever the number of attempts;
 * ended windows are removed each second, twice as many rows as can have ended since. The cap on sign-ins being
 * checked at once from one address and the rate are this instance's, since they guard its hash queue and writes.
 */
export class SignInThrottle {
  readonly #inFlight = new Map<string, number>();
  readonly #rate: AttemptRate;
  #nextCleanup = 0;

  constructor(
    private readonly db: Db,
    private readonly policy: ThrottlePolicy,
    private readonly now: () => number = Date.now,
  ) {
    this.#rate = new AttemptRate(policy.attemptsPerSecond, now());
  }

  /** Counts the attempt, or returns the seconds to wait when a budget is spent; rejects on a database fault. */
  async begin(name: string, clientAddress: string): Promise<Attempt | Refused> {
    const address = clientKey(clientAddress, this.policy.ipv6PrefixBits);
    // A burst of different names from one address must not fill the hash queue that every other client waits in.
    const inFlight = this.#inFlight.get(address) ?? 0;
    if (inFlight >= IN_FLIGHT_PER_ADDRESS) return { retryAfterSeconds: 1, why: 'busy' };
    this.#inFlight.set(address, inFlight + 1);
    const known = budgetKey('known', address, name);
    const now = this.now();
    try {
      const { policy } = this;
      const limits = new Map([
        [budgetKey('address-and-name', address, name), policy.perAddressAndName],
        [budgetKey('address', address), policy.perAddress],
        [budgetKey('name', name), policy.perName],
      ]);
      const seen = await readBudgets(this.db.kysely, [known, ...limits.keys()]);
      const knownAddress = (seen.get(known)?.expiresAt ?? 0) > now;
      if (knownAddress) limits.delete(budgetKey('name', name));
      spentBy([...seen.values()], limits, now, 0);
      if (!this.#rate.take(knownAddress, now)) {
        this.#release(address);
        return { retryAfterSeconds: 1, why: 'crowded' };
      }
      const keys = await this.#count(limits, now);
      this.#cleanUp(now);
      return { keys, known, address, knownAddress };
    } catch (error) {
      this.#release(address);
      if (error instanceof BudgetSpent) {
        return { retryAfterSeconds: Math.max(1, Math.ceil((error.expiresAt - now) / 1000)), why: 'spent' };
      }
      throw error;
    }
  }

  /** The attempt's check is over, whichever way it went. */
  finished(attempt: Attempt): void {
    this.#release(attempt.address);
  }

  /** The attempt succeeded: it is not a failure, and its address is known for its name. */
  async succeeded(attempt: Attempt): Promise<void> {
    const now = this.now();
    await this.db.write(async (trx) => {
      await giveBackFailure(trx, attempt.keys, now);
      await markKnown(trx, attempt.known, now + this.policy.knownMs);
    });
  }

  /** The name's verified credential was used from the address: it stays known there for `knownMs` from now. */
  async renewKnown(name: string, clientAddress: string): Promise<void> {
    const known = budgetKey('known', clientKey(clientAddress, this.policy.ipv6PrefixBits), name);
    const until = this.now() + this.policy.knownMs;
    await this.db.write((trx) => markKnown(trx, known, until));
  }

  /** Adds a failure to each budget in one transaction; the sorted keys, or BudgetSpent. */
  #count(limits: ReadonlyMap<string, number>, now: number): Promise<string[]> {
    const keys = [...limits.keys()].sort();
    return this.db.write(async (trx) => {
      spentBy(await countFailures(trx, keys, now, this.policy.windowMs), limits, now, 1);
      return keys;
    });
  }

  /**
   * Now and then, the budgets whose window has ended are removed, a bounded number at a time. Best effort: a row
   * left behind starts a new window at its key's next count all the same, and the next cleanup takes it.
   */
  #cleanUp(now: number): void {
    if (now < this.#nextCleanup) return;
    const elapsed = Math.min(now - this.#nextCleanup + CLEANUP_INTERVAL_MS, this.policy.windowMs);
    this.#nextCleanup = now + CLEANUP_INTERVAL_MS;
    // Each count writes at most three rows: twice as many as this instance can have written since the last cleanup.
    const rows = Math.max(
      1000,
      Math.ceil((6 * this.policy.attemptsPerSecond * (elapsed + CLEANUP_INTERVAL_MS)) / 1000),
    );
    this.db.write((trx) => removeExpired(trx, this.db.dialect, now, rows)).catch(() => undefined);
  }

  #release(address: string): void {
    const left = (this.#inFlight.get(address) ?? 1) - 1;
    if (left <= 0) this.#inFlight.delete(address);
    else this.#inFlight.set(address, left);
  }
}

/**
 * Throws BudgetSpent when a window has not ended and holds more failures than its limit allows: `counted` is 1 for
 * windows that include this attempt, 0 for windows read before counting it.
 */
function spentBy(windows: readonly BudgetWindow[], limits: ReadonlyMap<string, number>, now: number, counted: number) {
  const spent = windows.filter((window) => {
    const limit = limits.get(window.key);
    return limit !== undefined && window.expiresAt > now && window.failures + 1 - counted > limit;
  });
  if (spent.length > 0) throw new BudgetSpent(Math.max(...spent.map((window) => window.expiresAt)));
}
