import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { CompiledQuery } from 'kysely';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { loggerOptions } from '../../src/logger.js';
import { prepareDatabase } from '../../src/startup.js';
import { userService } from '../../src/users/user.service.js';
import { createTestDatabase, type TestDialect } from './databases.js';

export interface TestApp {
  readonly app: FastifyInstance;
  readonly db: Db;
  readonly config: Config;
  /** Every SQL statement run so far, oldest first. */
  readonly queries: CompiledQuery[];
  /** Creates a user and returns the value of a `security` header that signs in as them. */
  addUser(name?: string, password?: string): Promise<string>;
  close(): Promise<void>;
}

let users = 0;

export const basic = (name: string, password: string): string =>
  `Basic ${Buffer.from(`${name}:${password}`, 'utf8').toString('base64')}`;

/** The whole app on a database of its own, migrated and seeded with the demo catalog, not listening. */
export async function createTestApp(dialect: TestDialect, env: Record<string, string> = {}): Promise<TestApp> {
  const database = await createTestDatabase(dialect);
  return openTestApp(database.url, env, () => database.drop());
}

/** Another instance of the app on an existing database (migrations and seeding are no-ops the second time). */
export async function openTestApp(
  url: string,
  env: Record<string, string> = {},
  drop: () => Promise<void> = () => Promise.resolve(),
): Promise<TestApp> {
  // A test's own work runs on the app's event loop (app.inject), so shedding by the loop's delay would refuse requests
  // for the test's delays: it is off unless a test switches it on (test/http/load-shedding.test.ts).
  const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0', ...env });
  const queries: CompiledQuery[] = [];
  const db = openDatabase(config.database, { onQuery: (statement) => queries.push(statement) });
  await prepareDatabase(db, config, { info: () => {}, warn: () => {} });
  const app = await buildApp({ config, db });
  await app.ready();
  return {
    app,
    db,
    config,
    queries,
    async addUser(name = `user${++users}_${process.pid}`, password = 'correct horse') {
      await userService(db).add(name, password);
      return basic(name, password);
    },
    async close() {
      await app.close();
      await db.close();
      await drop();
    },
  };
}

/**
 * A second app on the test app's database that logs at `info` as the service does, its lines (JSON text) kept in
 * `lines` as they are written. Close it before `t`.
 */
export async function appWithLogLines(t: TestApp): Promise<{ app: FastifyInstance; lines: string[] }> {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  const config = { ...t.config, logLevel: 'info' as const };
  const app = await buildApp({ config, db: t.db, logger: { ...(loggerOptions(config, false) as object), stream } });
  await app.ready();
  return { app, lines };
}
