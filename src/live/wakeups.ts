/**
 * After a wake-up whose change the feed does not list yet (on PostgreSQL a change is listed once every transaction
 * begun before it, anywhere on the server, has ended), the feed is read again after each of these pauses, the last
 * one repeated, until it lists it or the wait ends; another wake-up starts them again.
 */
export const SETTLE_MS = [50, 150, 400, 1000] as const;

/** Reads again after one wake-up, at most (about 7 s), before waiting quietly again. */
export const SETTLE_READS = 10;

/** The pause before the `n`th read again after a wake-up (from 0). */
export const settlePause = (n: number): number => SETTLE_MS[Math.min(n, SETTLE_MS.length - 1)]!;

/** `wakeAll` wakes this many requests, then pauses this long before the next ones. */
const WAKE_ALL_AT_ONCE = 200;
const WAKE_ALL_PAUSE_MS = 20;

/** Why a wait ended. */
/**
 * Why a wait ended: `woken`, a change of its user committed; `recheck`, a change may have been missed (read once
 * more, nothing known to be coming); `timeout`; `closing`; `displaced` by its user's newer wait.
 */
export type WakeReason = 'woken' | 'recheck' | 'timeout' | 'closing' | 'displaced';

/** Which of two reasons kept until asked wins: an end over a change, a change over a look again. */
const RANK: Record<WakeReason, number> = { recheck: 0, woken: 1, timeout: 1, closing: 2, displaced: 2 };

/**
 * One waiting request's ear: made before the request reads what it waits on, so that a commit between that read and
 * the wait still wakes it.
 */
export class Subscription {
  readonly userId: number;
  #pending: WakeReason | undefined;
  #resolve: ((reason: WakeReason) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #onDone: (subscription: Subscription) => void;

  constructor(userId: number, onDone: (subscription: Subscription) => void) {
    this.userId = userId;
    this.#onDone = onDone;
  }

  /** Whether the service closes: it will not be woken, and should not read any more. */
  get closing(): boolean {
    return this.#pending === 'closing';
  }

  /** Tells it why it should stop waiting; kept until `next` asks when it is not waiting now. */
  fire(reason: WakeReason): void {
    if (this.#resolve !== undefined) {
      const resolve = this.#resolve;
      this.#resolve = undefined;
      clearTimeout(this.#timer);
      resolve(reason);
      return;
    }
    // A closing or a displacement outlasts a wake-up, which a later closing replaces.
    if (this.#pending === undefined || RANK[reason] > RANK[this.#pending]) this.#pending = reason;
  }

  /** Resolves at the next wake-up (at once when one came since the last call), or after `ms`. */
  next(ms: number): Promise<WakeReason> {
    const pending = this.#pending;
    if (pending !== undefined) {
      if (pending === 'woken' || pending === 'recheck') this.#pending = undefined;
      return Promise.resolve(pending);
    }
    return new Promise((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(
        () => {
          this.#resolve = undefined;
          resolve('timeout');
        },
        Math.max(0, ms),
      );
    });
  }

  /** The request no longer waits: it stops hearing. */
  done(): void {
    clearTimeout(this.#timer);
    this.#resolve = undefined;
    this.#onDone(this);
  }
}

/**
 * The requests of this instance that wait for a user's change (live changes, docs/api.md): a request subscribes for
 * its user, reads, and waits for `wake` of that user when the read found nothing. At most `perUser` wait for one user
 * at once: the next one is taken and that user's oldest is told `displaced` (answered with what it has), so a client
 * that lost its requests never locks its user out. A waiting request holds nothing but this.
 */
export class Wakeups {
  readonly #perUser: number;
  readonly #byUser = new Map<number, Subscription[]>();
  #count = 0;
  #closing = false;

  constructor(perUser: number) {
    this.#perUser = perUser;
  }

  /** How many requests wait. */
  get count(): number {
    return this.#count;
  }

  subscribe(userId: number): Subscription {
    const subscription = new Subscription(userId, (done) => {
      this.#remove(done);
    });
    if (this.#closing) {
      subscription.fire('closing');
      return subscription;
    }
    const mine = this.#byUser.get(userId) ?? [];
    mine.push(subscription);
    this.#byUser.set(userId, mine);
    this.#count += 1;
    while (mine.length > this.#perUser) {
      const oldest = mine.shift()!;
      this.#count -= 1;
      oldest.fire('displaced');
    }
    return subscription;
  }

  /** Wakes every request that waits for one of these users. */
  wake(userIds: Iterable<number>): void {
    for (const userId of new Set(userIds)) {
      for (const subscription of this.#byUser.get(userId) ?? []) subscription.fire('woken');
    }
  }

  /**
   * Wakes every request (each reads again): after a wake-up may have been missed. A few hundred at a time, the event
   * loop served between two, so that ten thousand streams do not read the feed at once.
   */
  wakeAll(): void {
    const all = [...this.#byUser.values()].flat();
    const wake = (from: number) => {
      for (const subscription of all.slice(from, from + WAKE_ALL_AT_ONCE)) subscription.fire('recheck');
      if (from + WAKE_ALL_AT_ONCE >= all.length) return;
      setTimeout(() => {
        wake(from + WAKE_ALL_AT_ONCE);
      }, WAKE_ALL_PAUSE_MS).unref();
    };
    wake(0);
  }

  /** At shutdown: every request that waits is answered now, and none waits from now on. */
  close(): void {
    this.#closing = true;
    for (const mine of this.#byUser.values()) for (const subscription of mine) subscription.fire('closing');
  }

  #remove(subscription: Subscription): void {
    const mine = this.#byUser.get(subscription.userId);
    const at = mine?.indexOf(subscription) ?? -1;
    if (at < 0) return;
    mine!.splice(at, 1);
    this.#count -= 1;
    if (mine!.length === 0) this.#byUser.delete(subscription.userId);
  }
}
