import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import type { Database } from './schema.js';

export type Dialect = DatabaseConfig['dialect'];

/** An open database: the query layer and which dialect is behind it. */
export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: Dialect;
  close(): Promise<void>;
}

// int8 (counts, bigint ids) as numbers: every id the service hands out stays below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10));

export function openDatabase(config: DatabaseConfig): Db {
  const kysely =
    config.dialect === 'sqlite'
      ? new Kysely<Database>({ dialect: new SqliteDialect({ database: openSqlite(config.file) }) })
      : new Kysely<Database>({
          dialect: new PostgresDialect({
            pool: new pg.Pool({
              connectionString: config.url,
              max: config.poolSize,
              connectionTimeoutMillis: 5000,
            }),
          }),
        });
  return { kysely, dialect: config.dialect, close: () => kysely.destroy() };
}

function openSqlite(file: string): SQLite.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL with synchronous=FULL: a commit is on disk before the client hears about it.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  return sqlite;
}
