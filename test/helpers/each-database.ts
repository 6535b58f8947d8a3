import { afterAll, beforeAll, describe } from 'vitest';
import { createTestApp, openTestApp, type TestApp } from './app.js';
import { createTestDatabase, DIALECTS, type TestDatabase, type TestDialect } from './databases.js';

type Env = Record<string, string>;
type Block = (t: TestApp, dialect: TestDialect) => void;

/**
 * `describe(name)` once per database, `%s` in the name standing for the dialect, each with the whole app on a new
 * database of its own (migrated and seeded, `env` added to its settings): made before the block's first test, closed
 * and dropped after its last. The block's own `beforeAll` hooks run after the app is made, its `afterAll` hooks
 * before it is closed.
 */
export function describeEachDatabase(name: string, body: Block): void;
export function describeEachDatabase(name: string, env: Env, body: Block): void;
export function describeEachDatabase(name: string, envOrBody: Env | Block, body?: Block): void {
  const [env, declare] = typeof envOrBody === 'function' ? [{}, envOrBody] : [envOrBody, body!];
  describe.each(DIALECTS)(name, (dialect) => {
    declare(useTestApp(dialect, env), dialect);
  });
}

/**
 * `describe(name)` once per database, `%s` in the name standing for the dialect, each with a new, empty database of
 * its own for the block's tests to start their instances on, dropped after the block's own `afterAll` hooks.
 */
export function describeEachEmptyDatabase(
  name: string,
  body: (database: TestDatabase, dialect: TestDialect) => void,
): void {
  describe.each(DIALECTS)(name, (dialect) => {
    body(useTestDatabase(dialect), dialect);
  });
}

/** Two instances of the whole app on one database. */
export interface TwoInstances {
  readonly one: TestApp;
  readonly two: TestApp;
}

/**
 * `describe(name)` once per database, `%s` in the name standing for the dialect, each with two instances of the
 * whole app on one new database of their own, made before the block's first test and closed after its last. Two
 * PostgreSQL instances start at the same moment (migrations and seeding must not collide); two SQLite instances in
 * one process would block each other's thread on the file lock, so they start one by one (separate processes wait
 * for each other instead: see the crash test).
 */
export function describeTwoInstances(name: string, body: (apps: TwoInstances, dialect: TestDialect) => void): void {
  describeEachEmptyDatabase(name, (database, dialect) => {
    let current: TwoInstances | undefined;
    beforeAll(async () => {
      if (dialect === 'postgres') {
        const [one, two] = await Promise.all([openTestApp(database.url), openTestApp(database.url)]);
        current = { one, two };
      } else {
        const one = await openTestApp(database.url);
        current = { one, two: await openTestApp(database.url) };
      }
    });
    afterAll(async () => {
      await current?.one.close();
      await current?.two.close();
      current = undefined;
    });
    const made = (): TwoInstances => {
      if (current === undefined) throw new Error(`The ${dialect} instances exist only in the tests of their block`);
      return current;
    };
    body(
      {
        get one() {
          return made().one;
        },
        get two() {
          return made().two;
        },
      },
      dialect,
    );
  });
}

/**
 * The whole app on a new database for the tests of the enclosing `describe`, made in its `beforeAll` and closed in its
 * `afterAll`. What is returned stands for that app: it may be used inside the block's tests and hooks only.
 */
export function useTestApp(dialect: TestDialect, env: Env = {}): TestApp {
  let current: TestApp | undefined;
  beforeAll(async () => {
    current = await createTestApp(dialect, env);
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
  const made = (): TestApp => {
    if (current === undefined) throw new Error(`The ${dialect} app exists only in the tests and hooks of its block`);
    return current;
  };
  return {
    get app() {
      return made().app;
    },
    get db() {
      return made().db;
    },
    get config() {
      return made().config;
    },
    get queries() {
      return made().queries;
    },
    addUser: (name, password) => made().addUser(name, password),
    close: async () => {
      const closing = made();
      current = undefined;
      await closing.close();
    },
  };
}

/**
 * A new, empty database for the tests of the enclosing `describe`, made in its `beforeAll` and dropped in its
 * `afterAll`. What is returned stands for that database inside the block's tests and hooks.
 */
function useTestDatabase(dialect: TestDialect): TestDatabase {
  let current: TestDatabase | undefined;
  beforeAll(async () => {
    current = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await current?.drop();
    current = undefined;
  });
  const made = (): TestDatabase => {
    if (current === undefined)
      throw new Error(`The ${dialect} database exists only in the tests and hooks of its block`);
    return current;
  };
  return {
    get url() {
      return made().url;
    },
    drop: async () => {
      const dropping = made();
      current = undefined;
      await dropping.drop();
    },
  };
}
