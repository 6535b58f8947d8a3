import { setImmediate as nextTurn } from 'node:timers/promises';

/** What a Bounded refuses with once its queue is full, or a task has waited too long. */
export type Refusal = () => Error;

export interface BoundedOptions {
  /** Tasks that run at the same time. */
  readonly limit: number;
  /** Tasks that may wait for a free slot; one more is refused at once. */
  readonly queue: number;
  /** How long a task may wait for a slot before it is refused; no bound when left out. */
  readonly waitMs?: number;
  readonly refuse: Refusal;
}

interface Waiter {
  readonly start: () => void;
  readonly timer: NodeJS.Timeout | undefined;
}

/**
 * Bounded concurrency with a bounded, first-come-first-served queue: at most `limit` tasks run, up to `queue` more
 * wait, each at most `waitMs`; anything beyond is refused with the error `refuse` makes (a 503, typically), so
 * that a burst is answered at once instead of piling up.
 */
export class Bounded {
  readonly #options: BoundedOptions;
  readonly #waiting: Waiter[] = [];
  #active = 0;

  constructor(options: BoundedOptions) {
    this.#options = options;
  }

  /** Tasks running now. */
  get active(): number {
    return this.#active;
  }

  /** Tasks waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Whether a task that came now would be refused at once: every slot taken and the queue full. */
  get full(): boolean {
    return this.#active >= this.#options.limit && this.#waiting.length >= this.#options.queue;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    const waited = await this.#acquire();
    try {
      // A task that waited starts a turn of the event loop later, so that the requests that arrived while the
      // previous one ran are served first, rather than one heavy task following another without a break.
      if (waited) await nextTurn();
      return await task();
    } finally {
      this.#release();
    }
  }

  /** Resolves with whether the task had to wait for its slot. */
  #acquire(): Promise<boolean> {
    if (this.#active < this.#options.limit) {
      this.#active++;
      return Promise.resolve(false);
    }
    if (this.#waiting.length >= this.#options.queue) return Promise.reject(this.#options.refuse());
    return new Promise<boolean>((resolve, reject) => {
      const { waitMs } = this.#options;
      const timer =
        waitMs === undefined
          ? undefined
          : setTimeout(() => {
              const at = this.#waiting.indexOf(waiter);
              if (at >= 0) this.#waiting.splice(at, 1);
              reject(this.#options.refuse());
            }, waitMs);
      const waiter: Waiter = {
        start: () => {
          resolve(true);
        },
        timer,
      };
      this.#waiting.push(waiter);
    });
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) {
      this.#active--;
      return;
    }
    // The slot passes to the next task, so `active` does not change.
    clearTimeout(next.timer);
    next.start();
  }
}

/**
 * A Bounded for each key (a user id), made when a task for that key arrives and dropped once it has nothing running
 * or waiting: the function returned runs a task under its key's bounds. Its `isFull(key)` tells, without taking a
 * place, whether a task of that key that came now would be refused at once, so that a caller can refuse a request
 * before paying for what the task would need (reading its body); the answer may be stale by the time the task comes,
 * and the task is then bounded as any other.
 */
export function boundedPerKey(options: BoundedOptions) {
  const byKey = new Map<number, Bounded>();
  const run = async <T>(key: number, task: () => Promise<T>): Promise<T> => {
    let bounded = byKey.get(key);
    if (bounded === undefined) {
      bounded = new Bounded(options);
      byKey.set(key, bounded);
    }
    const mine = bounded;
    try {
      return await mine.run(task);
    } finally {
      if (mine.active === 0 && mine.waiting === 0) byKey.delete(key);
    }
  };
  return Object.assign(run, { isFull: (key: number): boolean => byKey.get(key)?.full ?? false });
}

export interface Share {
  /** Tasks of one key (a user) running or waiting among everyone's, at most. */
  readonly limit: number;
  /** Further tasks of that key that may wait apart; one more is refused at once. */
  readonly queue: number;
  readonly refuse: Refusal;
}

/**
 * A Bounded shared among keys (users): each key holds at most `share.limit` of its places, running or waiting, and
 * the rest of a key's burst waits apart, so that one user's burst makes that user's requests slow, not everyone's.
 * Its `isFull(key)` tells whether that key's share would refuse a task now (see boundedPerKey).
 */
export function boundedWithShares(options: BoundedOptions, share: Share) {
  const all = new Bounded(options);
  const perKey = boundedPerKey(share);
  const run = <T>(key: number, task: () => Promise<T>): Promise<T> => perKey(key, () => all.run(task));
  return Object.assign(run, { isFull: perKey.isFull });
}
