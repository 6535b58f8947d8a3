import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { isDatabaseUnavailable } from './faults.js';
import type { Database } from './schema.js';
import { beginImmediate } from './sqlite.js';

/** A unit of writes; it runs inside a transaction (and, on SQLite, inside a savepoint of its own). */
export type WriteWork<T> = (trx: Kysely<Database>) => Promise<T>;

interface Pending {
  readonly work: WriteWork<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** A unit failed in a way that ends the whole transaction (SQLite may already have rolled it back). */
class BatchFault extends Error {
  constructor(readonly error: unknown) {
    super('a unit of the batch failed the whole transaction', { cause: error });
  }
}

/**
 * Group commit for SQLite, on a connection of its own. With `synchronous=FULL` every commit waits for the disk, so
 * writes that arrive together share one transaction and one commit: while a batch commits, the next one gathers.
 *
 * Each unit of work runs inside its own savepoint, so one that fails (a full quota, say) is undone alone and the
 * others still commit. Between two units the event loop serves other requests, and reads go through another
 * connection, so a large batch does not stall them. Nobody hears back before the commit: an acknowledged write is
 * on disk. If the database fails (a full disk, an I/O error, a lock held too long by another process), every unit
 * of the batch fails with that original error, and the next batch tries again.
 */
export class WriteBatcher {
  readonly #writer: Kysely<Database>;
  readonly #lockWaitMs: number;
  readonly #maxBatch: number;
  #pending: Pending[] = [];
  #flushing = false;
  #failure: unknown;

  constructor(writer: Kysely<Database>, lockWaitMs: number, maxBatch = 512) {
    this.#writer = writer;
    this.#lockWaitMs = lockWaitMs;
    this.#maxBatch = maxBatch;
  }

  /** The database fault that failed the last batch, or undefined once a batch has committed since. */
  get failure(): unknown {
    return this.#failure;
  }

  run<T>(work: WriteWork<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#flushing) {
        this.#flushing = true;
        // Let the requests already read from the sockets in this turn of the event loop join the first batch.
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    for (let first = true; this.#pending.length > 0; first = false) {
      // The requests that came in while the last batch committed (its fsync holds the event loop) are read in this
      // turn and join the next batch: a commit shared by more writes
      // (bench/results/HISTORY.md, "Writes compiled once").
      if (!first) await nextTurn();
      const batch = this.#pending.splice(0, this.#maxBatch);
      let outcomes: Outcome[];
      try {
        outcomes = await this.#commit(batch);
        this.#failure = undefined;
      } catch (error) {
        if (isDatabaseUnavailable(error)) this.#failure = error;
        for (const item of batch) item.reject(error);
        continue;
      }
      batch.forEach((item, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) item.resolve(outcome.value);
        else item.reject(outcome.error);
      });
    }
    this.#flushing = false;
  }

  #commit(batch: readonly Pending[]): Promise<Outcome[]> {
    return this.#writer.connection().execute(async (connection) => {
      await beginImmediate(connection, this.#lockWaitMs);
      try {
        const done: Outcome[] = [];
        for (const [i, { work }] of batch.entries()) {
          if (i > 0) await nextTurn();
          done.push(await this.#inSavepoint(connection, work));
        }
        await sql`COMMIT`.execute(connection);
        return done;
      } catch (caught) {
        const error = caught instanceof BatchFault ? caught.error : caught;
        // SQLite rolls a transaction back by itself after some faults (a full disk, an I/O error); the ROLLBACK
        // then fails, and its error must not hide the one that matters.
        await sql`ROLLBACK`.execute(connection).catch(() => undefined);
        throw error;
      }
    });
  }

  async #inSavepoint(connection: Kysely<Database>, work: WriteWork<unknown>): Promise<Outcome> {
    await sql`SAVEPOINT unit`.execute(connection);
    try {
      const value = await work(connection);
      await sql`RELEASE unit`.execute(connection);
      return { ok: true, value };
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw new BatchFault(error);
      await sql`ROLLBACK TO unit`.execute(connection);
      await sql`RELEASE unit`.execute(connection);
      return { ok: false, error };
    }
  }
}
