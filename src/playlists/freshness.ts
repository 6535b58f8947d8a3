import type { Db } from '../db/database.js';
import { ChangeLog, type ChangeListener } from '../db/playlist-changes.js';

/** A memory of this process that holds what a playlist was: it forgets what a change makes untrue. */
export type Forgetting = ChangeListener;

/**
 * The one place that decides whether what this process remembers of playlists is still true: it catches up with the
 * change log (SQLite: every connection's deletes, edits and membership changes, and the catalog version) and tells
 * every memory that depends on it what to forget, the standings access remembers (remembered-standings.ts) and the
 * answers' snapshots (playlist.cache.ts). A write of this process tells it too (`forget`), before the log does.
 *
 * `generation` counts every telling: a read that began at one generation keeps what it read only if none came since
 * (a read begun before a delete must not store what it read after it). A request catches up at most once: access
 * does when it answers from memory, a page of search results before it reads ids; a read that confirmed versions
 * itself (PostgreSQL's every read, SQLite's access reads and page queries) needs no catch-up.
 */
export class Freshness {
  readonly #changes: ChangeLog | undefined;
  readonly #memories: Forgetting[] = [];
  #generation = 0;

  constructor(db: Db) {
    this.#changes =
      db.dialect === 'sqlite'
        ? new ChangeLog(db, {
            changed: (ids) => {
              this.#tell((memory) => {
                memory.changed(ids);
              });
            },
            all: () => {
              this.#tell((memory) => {
                memory.all();
              });
            },
          })
        : undefined;
  }

  /** Whether there is a change log to catch up with (SQLite), so that what is remembered can be trusted. */
  get logged(): boolean {
    return this.#changes !== undefined;
  }

  /**
   * SQLite: what every connection had committed at the last catch-up, as `ChangeLog.seen` (a value that stays the
   * same while nothing is committed anywhere); undefined on PostgreSQL and before the first catch-up.
   */
  get committed(): string | undefined {
    return this.#changes?.seen;
  }

  /** Counts the times memories were told to forget. */
  get generation(): number {
    return this.#generation;
  }

  /** Adds a memory that hears what to forget. */
  listen(memory: Forgetting): void {
    this.#memories.push(memory);
  }

  /**
   * SQLite: brings every memory up to what every connection has committed (without I/O when nothing was), and returns
   * the catalog version; undefined on PostgreSQL, which has no change log (its reads confirm versions themselves).
   */
  caughtUp(): number | Promise<number> | undefined {
    return this.#changes?.caughtUp();
  }

  /** A write of this process deleted or edited the playlist: every memory forgets it now. */
  forget(id: number): void {
    this.#tell((memory) => {
      memory.changed([id]);
    });
  }

  #tell(what: (memory: Forgetting) => void): void {
    for (const memory of this.#memories) what(memory);
    this.#generation += 1;
  }
}
