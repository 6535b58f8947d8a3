/**
 * Runs smart playlists' rules queries (smart-songs.repository.ts) so that none holds the event loop and none runs for
 * longer than `MIXTAPE_RULES_TIMEOUT_MS`: a query that would is stopped, and its caller answered 422 saying that the
 * rules are too costly for this catalog.
 *
 * - SQLite: the query is compiled on the event loop and runs on a thread of a pool of its own, each thread with a
 *   read-only connection of its own to the same file (in WAL mode it reads the last committed state). The query
 *   stops itself once its time is up (rules-worker.ts); a thread that has still not answered GRACE_MS later is
 *   terminated.
 * - An in-memory SQLite database cannot be opened by a second connection: there the query runs on the event loop, as
 *   it is, one at a time, and is not stopped. Such a database is for trials; a service serves a file.
 * - PostgreSQL: the query runs in a read-only transaction with `SET LOCAL statement_timeout`, and a statement the
 *   server cancels for it (SQLSTATE 57014) is the 422. The bound is at most `DATABASE_QUERY_TIMEOUT_MS`, past which
 *   the client gives up on a statement anyway.
 *
 * Each user has one query running at a time and up to PER_USER_QUEUE more waiting, each at most as long as a query
 * may run, and past that 429, so that a few accounts cannot take every thread or pooled connection; everyone's are at
 * most as many as the threads on SQLite, half the pool's connections on PostgreSQL, the rest waiting up to WAIT_MS,
 * and past that 503.
 */
import { resolve } from 'node:path';
import { sql, type SqlBool } from 'kysely';
import { Piscina } from 'piscina';
import { Bounded, boundedPerKey } from '../concurrency/bounded.js';
import type { DatabaseConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { threadModule } from '../workers/worker-pool.js';
import type { Rules } from './rules.js';
import {
  DEADLINE_FUNCTION,
  type RulesQueryInput,
  type RulesQueryOutput,
  type RulesThreadData,
} from './rules-worker.js';
import { smartSongIds, smartSongsQuery, type CompileOptions } from './smart-songs.repository.js';

export interface RulesRunnerSettings {
  /** How long a query may run before it is stopped and answered 422 (`MIXTAPE_RULES_TIMEOUT_MS`). */
  readonly timeoutMs: number;
  /** The database as configured: the SQLite file the threads open, or PostgreSQL's pool and statement bound. */
  readonly database: DatabaseConfig;
  /** SQLite: the threads that run queries, and so the queries that run at once. */
  readonly threads: number;
}

export interface RulesRunner {
  /**
   * The ids of the songs the rules (from `readRules`) choose, in their order (see `smartSongsQuery`), among the
   * queries of `userId` (the user the work is done for: the caller, or a refreshed playlist's owner). Rejects with an
   * ApiError: 422 when the query runs out of time, 429 when that user's queries are too many already, 503 when
   * everyone's are.
   */
  songIds(rules: Rules, options: CompileOptions, userId: number): Promise<number[]>;
  /** Stops the threads (after the queries running now); queries asked for after it are refused with 503. */
  close(): Promise<void>;
}

/** A user's queries that may wait while one of theirs runs. */
const PER_USER_QUEUE = 8;
/** How long a query may wait for a thread or a connection that another user's query holds. */
const WAIT_MS = 10_000;
/**
 * How long after its time a thread that has not answered is terminated: the query stops itself well before, and this
 * also covers a thread that is still starting.
 */
const GRACE_MS = 5000;

/** The 422 of rules whose query ran out of time. */
export function rulesTooCostly(timeoutMs: number): ApiError {
  return ApiError.unprocessable(
    `These rules take longer than ${timeoutMs} ms over this catalog: they are too costly for it. Fewer conditions, ` +
      'or is and startsWith in place of contains and endsWith, cost less.',
  );
}

/** How one database runs a query, and how many it runs at once. */
interface Engine {
  readonly concurrency: number;
  songIds(rules: Rules, options: CompileOptions): Promise<number[]>;
  close(): Promise<void>;
}

export function rulesRunner(db: Db, settings: RulesRunnerSettings): RulesRunner {
  const { database } = settings;
  const timeoutMs =
    database.dialect === 'postgres' ? Math.min(settings.timeoutMs, database.queryTimeoutMs) : settings.timeoutMs;
  const engine =
    database.dialect === 'postgres'
      ? onPostgres(db, timeoutMs, database.poolSize)
      : database.file === ':memory:'
        ? onEventLoop(db)
        : onThreads(db, database.file, timeoutMs, settings.threads);
  const perUser = boundedPerKey({
    limit: 1,
    queue: PER_USER_QUEUE,
    waitMs: timeoutMs,
    refuse: () =>
      ApiError.tooManyRequests(1, 'Your previous smart playlists are still choosing their songs; wait for them first.'),
  });
  const everyone = new Bounded({
    limit: engine.concurrency,
    queue: 256,
    waitMs: WAIT_MS,
    refuse: () => ApiError.unavailable('The service is busy with other smart playlists; try again shortly.', 1),
  });
  // Once closed, a query that comes, or waited its turn until then, is refused rather than starting threads again.
  let closed = false;
  const run = (rules: Rules, options: CompileOptions) =>
    closed ? Promise.reject(ApiError.unavailable('The service is shutting down.')) : engine.songIds(rules, options);
  return {
    songIds: (rules, options, userId) => perUser(userId, () => everyone.run(() => run(rules, options))),
    close: () => {
      closed = true;
      return engine.close();
    },
  };
}

/** SQLite: each query on a thread of the pool, which starts with the first query. */
function onThreads(db: Db, file: string, timeoutMs: number, threads: number): Engine {
  const workerData: RulesThreadData = { file: resolve(file) };
  // Called on each song read, before the rules' conditions, so that a query that reads many and matches few stops too.
  const deadline = sql<SqlBool>`${sql.raw(DEADLINE_FUNCTION)}() = 1`;
  let pool: Piscina | undefined;
  const started = () =>
    (pool ??= new Piscina({
      ...threadModule(new URL('./rules-worker.js', import.meta.url)),
      workerData,
      minThreads: threads,
      maxThreads: threads,
      // The Bounded in front holds the queue: the pool only ever has as many queries as threads.
      maxQueue: threads,
      concurrentTasksPerWorker: 1,
      // At the event loop's priority, unlike the worker pool's threads: a query is bounded by the clock, and at a
      // lower priority it would run out of time whenever the machine is busy.
    }));
  return {
    concurrency: threads,
    async songIds(rules, options) {
      const compiled = smartSongsQuery(db.kysely, 'sqlite', rules, options, deadline).compile();
      const input: RulesQueryInput = { sql: compiled.sql, parameters: compiled.parameters, timeoutMs };
      let output: RulesQueryOutput;
      try {
        const signal = AbortSignal.timeout(timeoutMs + GRACE_MS);
        output = (await started().run(input, { name: 'rulesQuery', signal })) as RulesQueryOutput;
      } catch (error) {
        // Aborted: piscina has terminated the thread (and starts another).
        if (error instanceof Error && error.name === 'AbortError') throw rulesTooCostly(timeoutMs);
        throw error;
      }
      if ('timedOut' in output) throw rulesTooCostly(timeoutMs);
      return output.ids;
    },
    async close() {
      const closing = pool;
      pool = undefined;
      await closing?.close();
    },
  };
}

/** An in-memory SQLite database: on the event loop's connection, one at a time, not stopped. */
function onEventLoop(db: Db): Engine {
  return {
    concurrency: 1,
    songIds: (rules, options) => smartSongIds(db.kysely, db.dialect, rules, options),
    close: () => Promise.resolve(),
  };
}

/** SQLSTATE of a statement cancelled by `statement_timeout`. */
const QUERY_CANCELED = '57014';

/** PostgreSQL: each query in a read-only transaction of its own that the server stops after `timeoutMs`. */
function onPostgres(db: Db, timeoutMs: number, poolSize: number): Engine {
  // BEGIN and SET LOCAL go as one simple query: one round trip.
  const begin = sql.raw(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${Math.max(1, Math.trunc(timeoutMs))}`);
  return {
    concurrency: Math.max(1, Math.floor(poolSize / 2)),
    async songIds(rules, options) {
      const query = smartSongsQuery(db.kysely, 'postgres', rules, options).compile();
      try {
        return await db.kysely.connection().execute(async (connection) => {
          await begin.execute(connection);
          try {
            const { rows } = await connection.executeQuery(query);
            await sql.raw('COMMIT').execute(connection);
            return rows.map((row) => row.id);
          } catch (error) {
            // A rollback that fails too leaves a broken connection, which the pool replaces.
            await sql
              .raw('ROLLBACK')
              .execute(connection)
              .catch(() => undefined);
            throw error;
          }
        });
      } catch (error) {
        if ((error as { code?: unknown } | null)?.code === QUERY_CANCELED) throw rulesTooCostly(timeoutMs);
        throw error;
      }
    },
    close: () => Promise.resolve(),
  };
}
