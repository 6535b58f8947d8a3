import { LRUCache } from 'lru-cache';
import { clientKey } from '../http/client-address.js';

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
  readonly keys: readonly string[];
  readonly known: string;
  /** The client key of the address. */
  readonly address: string;
}

/** Sign-ins from one address checked at the same time; more are refused at once and not counted. */
const IN_FLIGHT_PER_ADDRESS = 4;

interface Window {
  count: number;
  until: number;
}

/**
 * The sign-in throttle. An attempt is counted as a failure when it begins, before any password is hashed, so that
 * concurrent attempts cannot all slip past the check; a success gives it back. Budgets are kept per address and
 * name, per address, and per name across addresses, so that one address guessing a name spends its own budget,
 * not the name's owner's. An address that signed in as a name within the window keeps signing in while only the
 * per-name budget is spent: an attack spread over many addresses cannot lock a user out of their usual one.
 */
export class SignInThrottle {
  readonly #windows = new LRUCache<string, Window>({ max: 200_000 });
  /** When each address that signed in as a name stops being known for it. */
  readonly #known = new LRUCache<string, number>({ max: 100_000 });
  readonly #inFlight = new Map<string, number>();

  constructor(
    private readonly policy: ThrottlePolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts the attempt, or returns the seconds to wait when a budget is spent. */
  begin(name: string, clientAddress: string): Attempt | { readonly retryAfterSeconds: number } {
    const now = this.now();
    const address = clientKey(clientAddress, this.policy.ipv6PrefixBits);
    // A burst of different names from one address must not fill the hash queue that every other client waits in.
    const inFlight = this.#inFlight.get(address) ?? 0;
    if (inFlight >= IN_FLIGHT_PER_ADDRESS) return { retryAfterSeconds: 1 };
    const known = `${address}\u0000${name}`;
    const budgets: [string, number][] = [
      [`an:${known}`, this.policy.perAddressAndName],
      [`a:${address}`, this.policy.perAddress],
    ];
    if ((this.#known.get(known) ?? 0) <= now) budgets.push([`n:${name}`, this.policy.perName]);
    for (const [key, limit] of budgets) {
      const window = this.#window(key, now, false);
      if (window !== undefined && window.count >= limit) {
        return { retryAfterSeconds: Math.max(1, Math.ceil((window.until - now) / 1000)) };
      }
    }
    const keys = budgets.map(([key]) => key);
    for (const key of keys) this.#window(key, now, true)!.count += 1;
    this.#inFlight.set(address, inFlight + 1);
    return { keys, known, address };
  }

  /** The attempt's check is over, whichever way it went. */
  finished(attempt: Attempt): void {
    const left = (this.#inFlight.get(attempt.address) ?? 1) - 1;
    if (left <= 0) this.#inFlight.delete(attempt.address);
    else this.#inFlight.set(attempt.address, left);
  }

  /** The attempt succeeded: it is not a failure, and its address is known for its name. */
  succeeded(attempt: Attempt): void {
    const now = this.now();
    for (const key of attempt.keys) {
      const window = this.#window(key, now, false);
      if (window !== undefined && window.count > 0) window.count -= 1;
    }
    this.#known.set(attempt.known, now + this.policy.windowMs);
  }

  #window(key: string, now: number, create: boolean): Window | undefined {
    const window = this.#windows.get(key);
    if (window !== undefined && window.until > now) return window;
    if (!create) return undefined;
    const fresh = { count: 0, until: now + this.policy.windowMs };
    this.#windows.set(key, fresh);
    return fresh;
  }
}
