import type SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, sql, type CompiledQuery, type LogEvent } from 'kysely';
import type { DatabaseConfig } from '../config.js';
import { startCheckpointer, type CheckpointReport } from './checkpointer.js';
import { withTimeout } from './faults.js';
import { openPostgresPool } from './postgres.js';
import type { Database } from './schema.js';
import { AUTO_CHECKPOINT_PAGES, ImmediateSqliteDialect, openSqlite, withStatementCache } from './sqlite.js';
import { WriteBatcher, type WriteWork } from './write-batch.js';

export type Dialect = DatabaseConfig['dialect'];

/**
 * The query, holding the rows it reads until the write's transaction ends: `FOR UPDATE` on PostgreSQL; a SQLite
 * write holds the whole database already.
 */
export function lockingRows<Query extends { forUpdate(): Query }>(query: Query, dialect: Dialect): Query {
  return dialect === 'postgres' ? query.forUpdate() : query;
}

/** SQLite's page cache on the connection that serves reads. */
const READ_CACHE_KIB = 32 * 1024;

/** An open database: the query layer and which dialect is behind it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: Dialect;
  /**
   * Runs a unit of writes in a transaction and settles once it is committed. On SQLite, units that arrive
   * together share one transaction and one commit (see WriteBatcher); PostgreSQL gives each its own.
   */
  write<T>(work: WriteWork<T>, options?: WriteOptions): Promise<T>;
  /**
   * Resolves when the database answers within `timeoutMs`, and on SQLite also takes writes again after a write
   * failed (a full disk, say); rejects otherwise.
   */
  ready(timeoutMs: number): Promise<void>;
  /**
   * SQLite only: a value that changes whenever anything was committed since the last call: by another connection
   * (another process, or this process's writer: `PRAGMA data_version`, read without I/O) or by the read
   * connection itself (a catalog import run in this process: `total_changes()`).
   */
  readonly dataVersion?: () => string;
  close(): Promise<void>;
}

/** How a unit of writes runs. */
export interface WriteOptions {
  /**
   * PostgreSQL: the longest any of its statements waits for a lock (`lock_timeout`), after which it fails (a 503);
   * SQLite's writes run one at a time on the writer's connection and wait for no lock.
   */
  readonly lockWaitMs?: number;
}

export interface DatabaseOptions {
  /** Called with every statement the service runs (tests count them). */
  readonly onQuery?: (query: CompiledQuery) => void;
  /** Called when a pooled PostgreSQL connection fails outside a query (server restart, network): it is replaced. */
  readonly onConnectionError?: (error: Error) => void;
  /**
   * How long a SQLite statement outside the service's write path (migrations, the command line, catalog imports)
   * waits for another process's write lock, blocking its thread. The service's own writes never block.
   */
  readonly sqliteBusyTimeoutMs?: number;
  /**
   * SQLite: checkpoint the WAL on a thread of its own this often, instead of inside whichever commit crosses the
   * threshold (the service does; short-lived commands keep SQLite's automatic checkpoints).
   */
  readonly backgroundCheckpoints?: {
    readonly intervalMs: number;
    readonly onReport: (report: CheckpointReport) => void;
  };
}

export function openDatabase(config: DatabaseConfig, options: DatabaseOptions = {}): Db {
  const { onQuery, onConnectionError = () => {}, sqliteBusyTimeoutMs = 5000, backgroundCheckpoints } = options;
  const log =
    onQuery === undefined
      ? undefined
      : (event: LogEvent) => {
          if (event.level === 'query') onQuery(event.query);
        };
  if (config.dialect === 'sqlite') return openSqliteDb(config, sqliteBusyTimeoutMs, log, backgroundCheckpoints);
  const kysely = new Kysely<Database>({
    log,
    dialect: new PostgresDialect({ pool: openPostgresPool(config, { onConnectionError }) }),
  });
  return {
    kysely,
    dialect: 'postgres',
    write: (work, options) =>
      options?.lockWaitMs === undefined
        ? kysely.transaction().execute(work)
        : transactionWaitingAtMost(kysely, options.lockWaitMs, work),
    ready: (timeoutMs) => withTimeout(sql`SELECT 1`.execute(kysely), timeoutMs, 'PostgreSQL').then(() => undefined),
    close: () => kysely.destroy(),
  };
}

/**
 * A PostgreSQL transaction whose statements wait at most `lockWaitMs` for a lock: `BEGIN` and
 * `SET LOCAL lock_timeout` go as one simple query, one round trip rather than two. On a failure it is rolled back
 * and the failure thrown (a rollback that fails too leaves a broken connection, which the pool replaces).
 */
async function transactionWaitingAtMost<T>(kysely: Kysely<Database>, lockWaitMs: number, work: WriteWork<T>) {
  return kysely.connection().execute(async (connection) => {
    await sql.raw(`BEGIN; SET LOCAL lock_timeout = ${Math.max(1, Math.trunc(lockWaitMs))}`).execute(connection);
    let result: T;
    try {
      result = await work(connection);
    } catch (error) {
      await sql
        .raw('ROLLBACK')
        .execute(connection)
        .catch(() => undefined);
      throw error;
    }
    await sql.raw('COMMIT').execute(connection);
    return result;
  });
}

/**
 * Two connections to one SQLite file: one for reads (and the writes of migrations and the command line), one that
 * only the write batcher uses. WAL lets reads go on while a batch is open. An in-memory database is one
 * connection, since a second would open a database of its own.
 */
function openSqliteDb(
  config: Extract<DatabaseConfig, { dialect: 'sqlite' }>,
  busyTimeoutMs: number,
  log: ((event: LogEvent) => void) | undefined,
  checkpoints: DatabaseOptions['backgroundCheckpoints'],
): Db {
  const open = (busy: number) => {
    const sqlite = openSqlite(config.file, busy);
    const kysely = new Kysely<Database>({
      dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }),
      log,
    });
    return { sqlite, kysely };
  };
  const memory = config.file === ':memory:';
  const reader = open(busyTimeoutMs);
  // Reads (pages, searches, sign-ins) keep 32 MB of pages rather than SQLite's 2 MB: a search reads a library's
  // documents page by page, and took about 40% longer when each page came from the operating system.
  reader.sqlite.pragma(`cache_size = -${READ_CACHE_KIB}`);
  const kysely = reader.kysely;
  const writerConnection = memory ? reader : open(0);
  const writer = writerConnection.kysely;
  // The last checkpoint failed (a full disk, say): the file does not take writes, whatever a small one shows.
  let checkpointFailure: string | undefined;
  const report = (event: CheckpointReport) => {
    checkpointFailure = event.ok ? undefined : event.error;
    checkpoints?.onReport(event);
  };
  const checkpointer =
    checkpoints === undefined || memory
      ? undefined
      : startCheckpointer(config.file, checkpoints.intervalMs, report, (error) => {
          // Without the thread, the writer checkpoints by itself again, and readiness no longer waits on it.
          writerConnection.sqlite.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
          checkpointFailure = undefined;
          checkpoints.onReport({ ok: false, error: `background checkpoints stopped: ${String(error)}` });
        });
  if (checkpointer !== undefined) writerConnection.sqlite.pragma('wal_autocheckpoint = 0');
  // Two statements: the pragma alone costs 2.9 µs, and 4.3 µs as a table-valued function beside total_changes().
  const committed = reader.sqlite.prepare('PRAGMA data_version').pluck() as SQLite.Statement<[], number>;
  const own = reader.sqlite.prepare('SELECT total_changes()').pluck() as SQLite.Statement<[], number>;
  const dataVersion = () => `${committed.get()!}:${own.get()!}`;
  const batcher = new WriteBatcher(writer, config.queryTimeoutMs);
  // 64 KB of new data: a write that fits in room the WAL already has would pass on a disk that takes no create.
  const probe = (trx: Kysely<Database>) =>
    sql`INSERT INTO service_probe (id, checked_at, padding) VALUES (1, ${Date.now()}, randomblob(65536))
        ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at, padding = excluded.padding`.execute(trx);
  return {
    kysely,
    dialect: 'sqlite',
    write: (work) => batcher.run(work),
    dataVersion,
    async ready(timeoutMs) {
      // After a failed write, only a write that commits shows that the disk takes writes again.
      if (checkpointFailure !== undefined) throw new Error(`WAL checkpoints fail: ${checkpointFailure}`);
      const check = batcher.failure === undefined ? sql`SELECT 1`.execute(kysely) : batcher.run(probe);
      await withTimeout(check, timeoutMs, 'SQLite');
    },
    async close() {
      await checkpointer?.stop();
      if (writer !== kysely) await writer.destroy();
      await kysely.destroy();
    },
  };
}
