import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  SqliteDialect,
  SqliteDriver,
  sql,
  type DatabaseConnection,
  type Driver,
  type Kysely,
  type SqliteDatabase,
  type SqliteDialectConfig,
} from 'kysely';
import { LRUCache } from 'lru-cache';
import { isSqliteBusy } from './faults.js';
import type { Database } from './schema.js';

/**
 * Transactions here only ever write, so they take the write lock when they begin (`BEGIN IMMEDIATE`). A deferred
 * `BEGIN` takes it at the first write instead, and if another process committed in between, SQLite fails the
 * transaction at once rather than waiting for the lock.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

export class ImmediateSqliteDialect extends SqliteDialect {
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
export function withStatementCache(sqlite: SQLite.Database, size = 1000): SqliteDatabase {
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

/** Pages of WAL after which a commit checkpoints, when no background checkpointer runs. */
export const AUTO_CHECKPOINT_PAGES = 10_000;

/**
 * Opens a connection. better-sqlite3 runs on the event loop, so `busyTimeoutMs` is how long a statement may block
 * the whole process while another connection holds the lock: the service's writer sets it to 0 and waits for the
 * lock with `beginImmediate` instead.
 */
export function openSqlite(file: string, busyTimeoutMs: number): SQLite.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL with synchronous=FULL: a commit is on disk before the client hears about it.
  enableWal(sqlite);
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma(`busy_timeout = ${busyTimeoutMs}`);
  // Checkpoint every 10 000 pages (40 MB of WAL) rather than 1 000: a page written by many commits is copied back
  // once, which lets concurrent creates run about a quarter faster (bench/results/HISTORY.md).
  sqlite.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
  return sqlite;
}

/** How long opening waits for another process that is creating the file or switching it to WAL at that moment. */
const OPEN_WAIT_MS = 5000;

/**
 * `journal_mode = WAL`, retried while another connection holds the lock it needs: switching a new file to WAL takes
 * an exclusive lock and answers SQLITE_BUSY without waiting, which two processes starting together on a new file
 * (two instances, or the CLI beside the service) would otherwise hit. Blocks, as opening does; at most 5 s.
 */
function enableWal(sqlite: SQLite.Database): void {
  const deadline = Date.now() + OPEN_WAIT_MS;
  const pauseOn = new Int32Array(new SharedArrayBuffer(4));
  for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
    try {
      sqlite.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() + pause > deadline) throw error;
      Atomics.wait(pauseOn, 0, 0, pause);
    }
  }
}

/**
 * The longest pause between two tries of `BEGIN IMMEDIATE`. Another process that writes often with short gaps (the
 * CLI's refresh of smart playlists after a catalog import) leaves the lock free a few milliseconds at a time, which
 * tries 50 ms apart found only after a second now and then; 10 ms apart they find it within tens of milliseconds,
 * and a try costs microseconds.
 */
const LONGEST_PAUSE_MS = 10;

/**
 * `BEGIN IMMEDIATE` on a connection with no busy timeout, retried with a growing pause while another connection
 * holds the write lock: the event loop stays free while a write waits. After `waitMs` the last SQLITE_BUSY is
 * thrown (a 503 for the client).
 */
export async function beginImmediate(connection: Kysely<Database>, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (let pause = 1; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    try {
      await sql`BEGIN IMMEDIATE`.execute(connection);
      return;
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() + pause > deadline) throw error;
    }
    await sleep(pause);
  }
}
