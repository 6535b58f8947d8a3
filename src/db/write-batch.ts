import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

export type WriteWork<T> = (trx: Transaction<Database>) => Promise<T>;

interface Pending {
  readonly work: WriteWork<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/**
 * Group commit for SQLite. With `synchronous=FULL` every commit waits for the disk, so writes that arrive together
 * share one transaction and one commit: while a batch commits, the next one gathers.
 *
 * Each unit of work runs inside its own savepoint, so one that fails (a full quota, say) is undone alone and the
 * others still commit. Nobody hears back before the commit: an acknowledged write is on disk, and if the commit
 * itself fails, every unit of the batch fails with it.
 */
export class WriteBatcher {
  readonly #kysely: Kysely<Database>;
  readonly #maxBatch: number;
  #pending: Pending[] = [];
  #flushing = false;

  constructor(kysely: Kysely<Database>, maxBatch = 512) {
    this.#kysely = kysely;
    this.#maxBatch = maxBatch;
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
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, this.#maxBatch);
      let outcomes: Outcome[];
      try {
        outcomes = await this.#kysely.transaction().execute(async (trx) => {
          const done: Outcome[] = [];
          for (const { work } of batch) done.push(await this.#inSavepoint(trx, work));
          return done;
        });
      } catch (error) {
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

  async #inSavepoint(trx: Transaction<Database>, work: WriteWork<unknown>): Promise<Outcome> {
    await sql`SAVEPOINT unit`.execute(trx);
    try {
      const value = await work(trx);
      await sql`RELEASE unit`.execute(trx);
      return { ok: true, value };
    } catch (error) {
      await sql`ROLLBACK TO unit`.execute(trx);
      await sql`RELEASE unit`.execute(trx);
      return { ok: false, error };
    }
  }
}
