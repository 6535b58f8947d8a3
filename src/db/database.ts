import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type LogEvent,
  type SqliteDatabase,
  type SqliteDialectConfig,
} from 'kysely';
import { LRUCache } from 'lru-cache';
import { createRequire } from 'node:module';
import type PgModule from 'pg';
import type { DatabaseConfig } from '../config.js';
import type { Database } from './schema.js';
import { WriteBatcher, type WriteWork } from './write-batch.js';

export type Dialect = DatabaseConfig['dialect'];

/** An open database: the query layer and which dialect is behind it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: Dialect;
  /**
   * Runs a unit of writes in a transaction and settles once it is committed. On SQLite, units that arrive
   * together share one transaction and one commit (see WriteBatcher); PostgreSQL gives each its own.
   */
  write<T>(work: WriteWork<T>): Promise<T>;
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** The PostgreSQL driver, loaded only when PostgreSQL is used, so that a SQLite service starts sooner. */
function loadPg(): typeof PgModule {
  const pg = require('pg') as typeof PgModule;
  // int8 (counts, bigint ids) as numbers: every id the service hands out stays below 2^53.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10));
  return pg;
}

export interface DatabaseOptions {
  /** Called with every statement the service runs (tests count them). */
  readonly onQuery?: (query: CompiledQuery) => void;
  /** Called when an idle PostgreSQL connection fails (server restart, network): the pool replaces it. */
  readonly onIdleError?: (error: Error) => void;
}

export function openDatabase(config: DatabaseConfig, options: DatabaseOptions = {}): Db {
  const { onQuery, onIdleError = () => {} } = options;
  const log =
    onQuery === undefined
      ? undefined
      : (event: LogEvent) => {
          if (event.level === 'query') onQuery(event.query);
        };
  if (config.dialect === 'sqlite') {
    const kysely = new Kysely<Database>({
      dialect: new ImmediateSqliteDialect({ database: withStatementCache(openSqlite(config.file)) }),
      log,
    });
    const batcher = new WriteBatcher(kysely);
    return { kysely, dialect: 'sqlite', write: (work) => batcher.run(work), close: () => kysely.destroy() };
  }
  const kysely = new Kysely<Database>({ log, dialect: new PostgresDialect({ pool: openPool(config, onIdleError) }) });
  return {
    kysely,
    dialect: 'postgres',
    write: (work) => kysely.transaction().execute(work),
    close: () => kysely.destroy(),
  };
}

function openPool(config: Extract<DatabaseConfig, { dialect: 'postgres' }>, onIdleError: (error: Error) => void) {
  const pool = new (loadPg().Pool)({
    connectionString: config.url,
    max: config.poolSize,
    connectionTimeoutMillis: 5000,
  });
  // Without a listener, an idle connection's error would end the process.
  pool.on('error', onIdleError);
  return pool;
}

/**
 * Transactions here only ever write, so they take the write lock when they begin (`BEGIN IMMEDIATE`). A deferred
 * `BEGIN` takes it at the first write instead, and if another process committed in between, SQLite fails the
 * transaction at once rather than waiting its `busy_timeout`.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * The connection as Kysely sees it, with each statement compiled once: better-sqlite3 statements can be run again
 * and again, and preparing one anew for every query costs more than most queries here take to run.
 */
function withStatementCache(sqlite: SQLite.Database, size = 1000): SqliteDatabase {
  const statements = new LRUCache<string, SQLite.Statement>({ max: size });
  return {
    prepare(source) {
      let statement = statements.get(source);
      if (statement === undefined) {
        statement = sqlite.prepare(source);
        statements.set(source, statement);
      }
      return statement;
    },
    close() {
      statements.clear();
      sqlite.close();
    },
  };
}

function openSqlite(file: string): SQLite.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL with synchronous=FULL: a commit is on disk before the client hears about it.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Checkpoint every 10 000 pages (40 MB of WAL) rather than 1 000: a page written by many commits is copied back
  // once, which lets concurrent creates run about a quarter faster (docs/benchmarks.md).
  sqlite.pragma('wal_autocheckpoint = 10000');
  return sqlite;
}
