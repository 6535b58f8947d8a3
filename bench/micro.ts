/** What the in-process benches share: timing loops, and the whole app on a database of its own without sockets. */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { prepareDatabase } from '../src/startup.js';
import { userService } from '../src/users/user.service.js';
import { percentile } from './load.js';
import { DEFAULT_PG_URL, PASSWORD, newDatabase, type Dialect } from './service.js';

/** `task` on `concurrency` loops for `seconds`, each call with a new number and timed. */
export async function timed(seconds: number, concurrency: number, task: (n: number) => Promise<unknown>) {
  const times: number[] = [];
  let n = 0;
  const started = performance.now();
  const loop = async () => {
    while (performance.now() < started + seconds * 1000) {
      const t0 = performance.now();
      await task(n++);
      times.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  times.sort((a, b) => a - b);
  return {
    perSecond: times.length / ((performance.now() - started) / 1000),
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    p50Ms: percentile(times, 0.5),
    p99Ms: percentile(times, 0.99),
  };
}

/**
 * `task` `runs` times after `warmup` uncounted runs (so that the figures are of compiled code), `before` each outside
 * the time: the median, p90 and largest ms, the mean CPU ms (the process's, collector included), its last answer.
 */
export function repeat<T>(runs: number, warmup: number, task: () => T, before = () => undefined as unknown) {
  const times: number[] = [];
  let answer!: T;
  let cpu = 0;
  for (let run = -warmup; run < runs; run += 1) {
    before();
    const used = process.cpuUsage();
    const start = performance.now();
    answer = task();
    if (run < 0) continue;
    times.push(performance.now() - start);
    const { user, system } = process.cpuUsage(used);
    cpu += (user + system) / 1000;
  }
  times.sort((a, b) => a - b);
  return { median: percentile(times, 0.5), p90: percentile(times, 0.9), max: times.at(-1)!, cpu: cpu / runs, answer };
}

/** The service's app on a new database with the user `bench`, answering through `inject`; `close()` drops it. */
export async function inProcessApp(
  dialect: Dialect,
  settings: Readonly<Record<string, string>>,
  pgUrl = DEFAULT_PG_URL,
) {
  const database = await newDatabase(dialect, pgUrl, 'in-process');
  const config = loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent', ...settings });
  const db = openDatabase(config.database);
  await prepareDatabase(db, config, { info: () => undefined, warn: () => undefined });
  const app = await buildApp({ config, db });
  await app.ready();
  const users = userService(db);
  return {
    db,
    app,
    /** Adds a user; its credential, as the `security` header takes it. */
    async user(name: string) {
      await users.add(name, PASSWORD);
      return `Basic ${Buffer.from(`${name}:${PASSWORD}`).toString('base64')}`;
    },
    async close() {
      await app.close();
      await db.close();
      await database.drop();
    },
  };
}

/** A copy of a SQLite file (a bench data set), dropped by `done()`. */
export function sqliteCopy(source: string) {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-copy-'));
  const file = join(dir, 'copy.db');
  copyFileSync(source, file);
  const done = () => {
    rmSync(dir, { recursive: true, force: true });
  };
  return { file, done };
}
