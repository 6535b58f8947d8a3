import SQLite from 'better-sqlite3';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteDialect,
  type LogEvent,
} from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compiledOnce, compiledRows } from './compiled.js';
import type { Database } from './schema.js';

/** Queries compiled once: on an in-memory SQLite database, and compiled for PostgreSQL without one. */
let sqlite: SQLite.Database;
let db: Kysely<Database>;
let ran: string[];

const log = (event: LogEvent) => {
  if (event.level === 'query') ran.push(event.query.sql);
};

beforeEach(() => {
  ran = [];
  sqlite = new SQLite(':memory:');
  sqlite.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, password_hash TEXT NOT NULL,
    playlist_count INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, library_version INTEGER NOT NULL DEFAULT 0)`);
  db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log });
});
afterEach(async () => {
  await db.destroy();
});

describe('compiledOnce', () => {
  it('builds a query once and runs it with the values of each call, constants kept', async () => {
    let builds = 0;
    const insert = compiledOnce('insert-user', (p: { name: string; at: number }) => (q) => {
      builds++;
      return q
        .insertInto('users')
        .values({ name: p.name, password_hash: 'x', created_at: p.at })
        .returning(['id', 'name', 'password_hash', 'created_at']);
    });
    const first = await insert(db, { name: "o'brien", at: 1 });
    const second = await insert(db, { name: 'ann', at: 2 });
    expect(first.rows).toEqual([{ id: 1, name: "o'brien", password_hash: 'x', created_at: 1 }]);
    expect(second.rows).toEqual([{ id: 2, name: 'ann', password_hash: 'x', created_at: 2 }]);
    expect(builds).toBe(1);
    expect(new Set(ran).size).toBe(1);

    const byName = compiledOnce(
      'user-by-name',
      (p: { name: string }) => (q) => q.selectFrom('users').select('id').where('name', '=', p.name),
    );
    expect((await byName(db, { name: 'ann' })).rows).toEqual([{ id: 2 }]);
    expect((await byName(db, { name: "o'brien" })).rows).toEqual([{ id: 1 }]);
    expect((await byName(db, { name: 'nobody' })).rows).toEqual([]);
  });

  it('compiles for each dialect it runs on', async () => {
    const postgres = new Kysely<Database>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => new DummyDriver(),
        createIntrospector: (kysely) => new PostgresIntrospector(kysely),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
      log,
    });
    const byName = compiledOnce(
      'user-by-name',
      (p: { name: string }) => (q) => q.selectFrom('users').select('id').where('name', '=', p.name),
    );
    await byName(db, { name: 'a' });
    await byName(postgres, { name: 'a' });
    await byName(db, { name: 'b' });
    expect(ran).toEqual([
      '/* prepared: user-by-name */ select "id" from "users" where "name" = ?',
      '/* prepared: user-by-name */ select "id" from "users" where "name" = $1',
      '/* prepared: user-by-name */ select "id" from "users" where "name" = ?',
    ]);
    await postgres.destroy();
  });
});

describe('compiledRows', () => {
  it('compiles once for each number of rows, each row its own values', async () => {
    const counts: number[] = [];
    const insert = compiledRows('insert-users', (p: { at: number }, rows: readonly { name: string }[]) => (q) => {
      counts.push(rows.length);
      return q
        .insertInto('users')
        .values(rows.map((row) => ({ name: row.name, password_hash: 'x', created_at: p.at })));
    });
    await insert(db, { at: 5 }, [{ name: 'a' }, { name: 'b' }]);
    await insert(db, { at: 6 }, [{ name: 'c' }]);
    await insert(db, { at: 7 }, [{ name: 'd' }, { name: 'e' }]);
    expect(counts).toEqual([2, 1]);
    const rows = await db.selectFrom('users').select(['name', 'created_at']).orderBy('id').execute();
    expect(rows).toEqual([
      { name: 'a', created_at: 5 },
      { name: 'b', created_at: 5 },
      { name: 'c', created_at: 6 },
      { name: 'd', created_at: 7 },
      { name: 'e', created_at: 7 },
    ]);

    const named = compiledRows(
      'users-named',
      (_p: object, rows: readonly { name: string }[]) => (q) =>
        q
          .selectFrom('users')
          .select('name')
          .where(
            'name',
            'in',
            rows.map((row) => row.name),
          )
          .orderBy('name'),
    );
    expect((await named(db, {}, [{ name: 'e' }, { name: 'a' }, { name: 'z' }])).rows).toEqual([
      { name: 'a' },
      { name: 'e' },
    ]);
  });
});
