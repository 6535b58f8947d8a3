import type { Db } from '../db/database.js';
import { clientKey } from '../http/client-address.js';
import {
  budgetKey,
  countFailures,
  giveBackFailure,
  knownUntil,
  markKnown,
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
}

/** Sign-ins from one address checked at the same time; more are refused at once and not counted. */
const IN_FLIGHT_PER_ADDRESS = 4;

/** How often an instance removes budgets whose window has ended, and how many at most each time. */
const CLEANUP_INTERVAL_MS = 10_000;
const CLEANUP_ROWS = 1000;

/**
 * An attempt not checked: a budget of failures is spent (`spent`), or this address already has as many sign-ins
 * being checked as it may (`busy`).
 */
export interface Refused {
  readonly retryAfterSeconds: number;
  readonly why: 'spent' | 'busy';
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
 * The budgets and the known addresses are kept in the database, so that every instance on it counts against the
 * same budgets: each count is one transaction that adds the failure to every budget and is undone when one of
 * them was already spent. A database fault while counting fails the attempt (503 from the error handler); it is
 * never let through uncounted. Only the cap on sign-ins being checked at once from one address is this instance's,
 * since it guards this instance's hash queue.
 */
export class SignInThrottle {
  readonly #inFlight = new Map<string, number>();
  #nextCleanup = 0;

  constructor(
    private readonly db: Db,
    private readonly policy: ThrottlePolicy,
    private readonly now: () => number = Date.now,
  ) {}

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
      const keys = await this.#count(name, address, known, now);
      this.#cleanUp(now);
      return { keys, known, address };
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
      await markKnown(trx, attempt.known, now + this.policy.windowMs);
    });
  }

  /** Adds a failure to each budget of the attempt in one transaction; the sorted keys, or BudgetSpent. */
  #count(name: string, address: string, known: string, now: number): Promise<string[]> {
    const { policy } = this;
    return this.db.write(async (trx) => {
      const limits = new Map([
        [budgetKey('address-and-name', address, name), policy.perAddressAndName],
        [budgetKey('address', address), policy.perAddress],
      ]);
      if (((await knownUntil(trx, known)) ?? 0) <= now) limits.set(budgetKey('name', name), policy.perName);
      const keys = [...limits.keys()].sort();
      const windows = await countFailures(trx, keys, now, policy.windowMs);
      const spent = windows.filter((window) => window.failures > (limits.get(window.key) ?? 0));
      if (spent.length > 0) throw new BudgetSpent(Math.max(...spent.map((window) => window.expiresAt)));
      return keys;
    });
  }

  /**
   * Now and then, the budgets whose window has ended are removed, a bounded number at a time. Best effort: a row
   * left behind starts a new window at its key's next count all the same, and the next cleanup takes it.
   */
  #cleanUp(now: number): void {
    if (now < this.#nextCleanup) return;
    this.#nextCleanup = now + CLEANUP_INTERVAL_MS;
    this.db.write((trx) => removeExpired(trx, this.db.dialect, now, CLEANUP_ROWS)).catch(() => undefined);
  }

  #release(address: string): void {
    const left = (this.#inFlight.get(address) ?? 1) - 1;
    if (left <= 0) this.#inFlight.delete(address);
    else this.#inFlight.set(address, left);
  }
}
