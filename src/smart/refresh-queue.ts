import { setImmediate as nextTurn } from 'node:timers/promises';

/** What the queue is told of a smart playlist it refreshed. */
export type RefreshOutcome = 'changed' | 'unchanged' | 'gone';

export interface RefreshQueueOptions {
  /** Refreshes one smart playlist. */
  readonly refresh: (id: number) => Promise<RefreshOutcome>;
  /** The owners of these smart playlists; those gone, or no longer smart, are left out. */
  readonly owners: (ids: readonly number[]) => Promise<ReadonlyMap<number, number>>;
  /** Told of a refresh that failed (the queue goes on with the others). */
  readonly report: (error: unknown, id: number) => void;
  /** One owner's refreshes in one wave; the rest of theirs wait for the next wave. */
  readonly perOwner: number;
  /** Told of each refresh done, for the metrics. */
  readonly done?: ((outcome: RefreshOutcome | 'failed') => void) | undefined;
}

/**
 * The smart playlists of this instance waiting for a refresh: after a write of a playlist they follow was answered,
 * never inside it. One refresh runs at a time, with the event loop served between two, so the refreshes hold at most
 * one connection (or one of SQLite's write batches) at a time.
 *
 * - A playlist waits once, however many writes queue it (a set): ten changes of what it follows, one refresh.
 * - Refreshes run in waves: a wave is what waits when it starts; what its refreshes queue (the smart playlists that
 *   follow those that changed) waits for the next one. Layers of smart playlists that follow each other are each
 *   refreshed once per wave, never once for each path to them.
 * - A wave takes its owners in turn (one refresh of each owner, then the next of each), so one owner's many followers
 *   never hold up another owner's few, and at most `perOwner` of one owner's in a wave.
 *
 * A read may not wait for the queue: `now` refreshes one playlist at once (or waits for its refresh under way).
 */
export class RefreshQueue {
  readonly #options: RefreshQueueOptions;
  readonly #waiting = new Set<number>();
  readonly #running = new Map<number, Promise<void>>();
  #draining: Promise<void> | undefined;
  #stopped = false;

  constructor(options: RefreshQueueOptions) {
    this.#options = options;
  }

  /** How many wait. */
  get size(): number {
    return this.#waiting.size;
  }

  /** Queues these smart playlists for a refresh, after the current turn. */
  add(ids: Iterable<number>): void {
    if (this.#stopped) return;
    for (const id of ids) this.#waiting.add(id);
    if (this.#waiting.size > 0) this.#draining ??= this.#drain();
  }

  /** Refreshes this one now, taking it out of the queue (or waits for its refresh under way). */
  now(id: number): Promise<void> {
    this.#waiting.delete(id);
    return this.#run(id);
  }

  /** Takes no more, drops what waits, and resolves once the refresh under way is done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#waiting.clear();
    await this.idle();
  }

  /** Resolves once nothing waits and no refresh runs. */
  async idle(): Promise<void> {
    while (this.#draining !== undefined || this.#running.size > 0) {
      await (this.#draining ?? Promise.all(this.#running.values()));
    }
  }

  #run(id: number): Promise<void> {
    const running = this.#running.get(id);
    if (running !== undefined) return running;
    const run = (async () => {
      try {
        const outcome = await this.#options.refresh(id);
        this.#options.done?.(outcome);
      } catch (error) {
        this.#options.done?.('failed');
        this.#options.report(error, id);
      } finally {
        this.#running.delete(id);
      }
    })();
    this.#running.set(id, run);
    return run;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.size > 0) {
        await nextTurn();
        const wave = [...this.#waiting];
        this.#waiting.clear();
        let owners: ReadonlyMap<number, number>;
        try {
          owners = await this.#options.owners(wave);
        } catch (error) {
          this.#options.report(error, wave[0]!);
          continue;
        }
        for (const id of this.#turns(wave, owners)) {
          if (this.#stopped) break;
          await this.#run(id);
          await nextTurn();
        }
      }
    } finally {
      this.#draining = undefined;
      // Queued after the loop looked for the last time.
      if (this.#waiting.size > 0) this.#draining = this.#drain();
    }
  }

  /** The wave's playlists in their owners' turns; past `perOwner` of one owner's, back to wait for the next wave. */
  #turns(wave: readonly number[], owners: ReadonlyMap<number, number>): number[] {
    const byOwner = new Map<number, number[]>();
    for (const id of wave) {
      const owner = owners.get(id);
      if (owner === undefined) continue;
      const mine = byOwner.get(owner);
      if (mine === undefined) byOwner.set(owner, [id]);
      else if (mine.length < this.#options.perOwner) mine.push(id);
      else this.#waiting.add(id);
    }
    const order: number[] = [];
    const queues = [...byOwner.values()];
    for (let turn = 0; queues.some((queue) => turn < queue.length); turn += 1) {
      for (const queue of queues) if (turn < queue.length) order.push(queue[turn]!);
    }
    return order;
  }
}
