/** The service under test, on a database of its own, on CPU 0 with the bench on CPU 1; its processes' CPU time. */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { serviceEnvironment } from '../test/helpers/service-environment.js';

export type Dialect = 'sqlite' | 'postgres';
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DATA_DIR = join(ROOT, 'bench/data');
export const PROFILE_DIR = 'bench/profiles';
export const DEFAULT_PG_URL = 'postgres://root@127.0.0.1:5432/postgres';
/** Every user the benches make signs in with this password. */
export const PASSWORD = 'bench-password';
/** With two cores or more, the service (and the baseline) runs on CPU 0, the bench and its load on CPU 1. */
export const SERVICE_CPU = os.cpus().length >= 2 ? 0 : undefined;

/** Moves a running process, every thread of it, to one CPU (Linux `taskset`). */
export function pinToCpu(pid: number, cpu: number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** Moves this process to CPU 1, away from the service. */
export function pinBench(): void {
  if (SERVICE_CPU !== undefined) pinToCpu(process.pid, 1);
}

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/** `/proc/<pid>/status`'s resident set size in bytes, 0 once the process is gone. */
function residentBytes(pid: number | undefined): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** utime and stime of a process in ms (clock ticks of 10 ms); 0 once it is gone. */
export function processCpuSplitMs(pid: number): { readonly user: number; readonly system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
  } catch {
    return { user: 0, system: 0 };
  }
}

export const processCpuMs = (pid: number) => processCpuSplitMs(pid).user + processCpuSplitMs(pid).system;

/**
 * CPU ms so far of the service (every thread) and, given a database, of the PostgreSQL server processes serving it,
 * found by their title (`postgres: [cluster: ]user database host(port) state`); the server's own processes (WAL
 * writer, checkpointer) work for every database and are left out.
 */
export function readCpu(servicePid: number | undefined, database: string | undefined) {
  let databaseMs = 0;
  for (const pid of database === undefined ? [] : readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (/^postgres: (?:\S+: )?\S+ (\S+) \S+\(\d+\)/.exec(title)?.[1] === database) databaseMs += processCpuMs(+pid);
    } catch {
      // gone meanwhile
    }
  }
  return { serviceMs: servicePid === undefined ? 0 : processCpuMs(servicePid), databaseMs };
}

export type CpuReading = ReturnType<typeof readCpu>;

/** CPU ms a response over a level: (after − before) ÷ responses. */
export function perRequest(before: CpuReading, after: CpuReading, responses: number): CpuReading | undefined {
  if (responses === 0) return undefined;
  const databaseMs = Math.max(0, after.databaseMs - before.databaseMs) / responses;
  return { serviceMs: (after.serviceMs - before.serviceMs) / responses, databaseMs };
}

/**
 * The request log goes to a file, as in production, never to a pipe that could stall the service; it is pinned to
 * `cpu` once ready, so that the start is measured as an operator's machine runs it. `root`: another checkout to serve,
 * `fromSource`: from its `src/cli.ts` through tsx, rather than `dist/`.
 */
export interface ServiceOptions {
  readonly databaseUrl: string;
  readonly logFile: string;
  readonly settings: Readonly<Record<string, string>>;
  readonly profile?: boolean;
  readonly cpu?: number | undefined;
  readonly root?: string | undefined;
  readonly fromSource?: boolean | undefined;
}

export type RunningService = Awaited<ReturnType<typeof startService>>;

/** Starts the service as a client meets it and waits until /readyz answers 200 (`startMs` from the spawn). */
export async function startService(options: ServiceOptions) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const profiling = options.profile === true ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  const entry = options.fromSource === true ? ['--import', 'tsx', 'src/cli.ts'] : ['dist/cli.js'];
  const env = { DATABASE_URL: options.databaseUrl, PORT: String(port), HOST: '127.0.0.1', ...options.settings };
  const log = openSync(options.logFile, 'w');
  const started = performance.now();
  // A title of its own, so that a `pkill -f 'cli.js serve'` meant for other instances leaves it alone.
  const child = spawn(process.execPath, ['--title=mixtape-bench-service', ...profiling, ...entry, 'serve'], {
    ...{ cwd: options.root ?? ROOT, env: serviceEnvironment(process.env, env), stdio: ['ignore', log, 'pipe'] },
  });
  closeSync(log);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-10_000)));
  let [stopping, exitedEarly] = [undefined as Promise<void> | undefined, undefined as string | undefined];
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedEarly = `exit code ${code ?? 'none'}, signal ${signal ?? 'none'}`;
      if (stopping === undefined)
        console.error(`\n!!! The service exited (${exitedEarly}); see ${options.logFile}\n${stderr}`);
      resolve(exitedEarly);
    });
  });
  let maxRss = 0;
  const sampler = setInterval(() => (maxRss = Math.max(maxRss, residentBytes(child.pid))), 200);
  while (!(await isReady(url))) {
    if (exitedEarly !== undefined || performance.now() - started > 120_000) {
      clearInterval(sampler);
      child.kill('SIGKILL');
      throw new Error(
        `The service ${exitedEarly === undefined ? 'was not ready in 120 s' : `exited (${exitedEarly})`}:\n${stderr}`,
      );
    }
    await sleep(5);
  }
  const startMs = performance.now() - started;
  if (options.cpu !== undefined && child.pid !== undefined) pinToCpu(child.pid, options.cpu);
  const rssAtReadyBytes = residentBytes(child.pid);
  maxRss = Math.max(maxRss, rssAtReadyBytes);
  return {
    ...{ url, pid: child.pid, startMs, rssAtReadyBytes, maxRssBytes: () => maxRss },
    /** SIGTERM, then the exit (the CPU profile is written then); once, however often called. */
    stop: () =>
      (stopping ??= (async () => {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        const how = await exited;
        clearTimeout(timer);
        clearInterval(sampler);
        if (!how.startsWith('exit code 0')) console.warn(`The service stopped badly (${how}):\n${stderr}`);
      })()),
  };
}

async function isReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`);
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** `mixtape user add NAME` on the database, as an operator runs it. */
export function addUser(databaseUrl: string, name: string): void {
  const result = spawnSync(process.execPath, ['dist/cli.js', 'user', 'add', name, '--password-stdin'], {
    ...{ cwd: ROOT, input: `${PASSWORD}\n`, encoding: 'utf8' },
    env: serviceEnvironment(process.env, { DATABASE_URL: databaseUrl }),
  });
  if (result.status !== 0) throw new Error(`mixtape user add ${name} failed: ${result.stderr}`);
}

/** Plain SQL beside the service, `?` placeholders on both databases; without parameters, SQLite runs every statement. */
export interface Sql {
  all<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  run(text: string, params?: readonly unknown[]): Promise<void>;
  close(): Promise<void>;
  /** The SQLite connection itself, for bulk writes. */
  readonly sqlite?: SQLite.Database;
}

export async function openSql(url: string): Promise<Sql> {
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    return {
      sqlite: db,
      all: <T>(text: string, params: readonly unknown[] = []) =>
        Promise.resolve(db.prepare(text).all(...params) as T[]),
      run: (text, params = []) => {
        if (params.length === 0) db.exec(text);
        else db.prepare(text).run(...params);
        return Promise.resolve();
      },
      close: () => {
        db.close();
        return Promise.resolve();
      },
    };
  }
  const client = new pg.Client({ connectionString: url });
  // A server that ends the connection (a database dropped with FORCE) is no crash of the bench.
  client.on('error', () => undefined);
  await client.connect();
  const query = (text: string, params: readonly unknown[]) => {
    let n = 0;
    return client.query(
      text.replace(/\?/g, () => `$${++n}`),
      [...params],
    );
  };
  return {
    all: async <T>(text: string, params: readonly unknown[] = []) => (await query(text, params)).rows as T[],
    run: async (text, params = []) => {
      await query(text, params);
    },
    close: () => client.end(),
  };
}

/** The URL of database `name` on the server of `adminUrl`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Statements on a PostgreSQL server, one after the other. */
export async function admin(url: string, ...statements: string[]): Promise<void> {
  const sql = await openSql(url);
  try {
    for (const statement of statements) await sql.run(statement);
  } finally {
    await sql.close();
  }
}

/** A new, empty database for one run: a SQLite file in a temporary folder, or a PostgreSQL database. */
export async function newDatabase(dialect: Dialect, pgUrl: string, name: string) {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(os.tmpdir(), `mixtape-${name}-`));
    const drop = async () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    };
    return { url: `sqlite:${join(dir, 'mixtape.db')}`, drop };
  }
  const database = `mixtape_bench_${name.replace(/\W/g, '_')}_${process.pid}`;
  const drop = `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`;
  await admin(pgUrl, drop, `CREATE DATABASE ${database}`);
  return { url: databaseUrl(pgUrl, database), drop: () => admin(pgUrl, drop) };
}

/** What a scenario with a service of its own is run with (bench/run.ts): `--phases` (all when undefined), `--root`. */
export interface RunContext {
  readonly dialect: Dialect;
  readonly pgUrl: string;
  readonly seconds: number;
  readonly phases: ReadonlySet<string> | undefined;
  readonly profile: boolean;
  readonly root: string | undefined;
  /** A scenario's own option, as given on the command line. */
  option(name: string): string | undefined;
  int(name: string, fallback: number): number;
}

/** A scenario on a database and service of its own: `seconds` a phase unless `--duration`; a table of its own. */
export interface OwnScenario<R = unknown> {
  readonly name: string;
  readonly description: string;
  readonly seconds: number;
  run(context: RunContext): Promise<R>;
  format?(results: R): string;
}

/** The service, its database and log, and another instance of the service on the same database. */
export type Served = { url: string; service: RunningService; databaseUrl: string; logFile: string } & {
  another: (suffix: string) => Promise<RunningService>;
};

/** `work` on a new database (`prepare` writes into it first), with these users and the service on it; then drops it. */
export async function withService<T>(
  context: RunContext,
  spec: { name: string; users?: readonly string[]; settings?: Record<string, string>; root?: string } & {
    prepare?: (databaseUrl: string) => Promise<void>;
    fromSource?: boolean;
  },
  work: (served: Served) => Promise<T>,
): Promise<T> {
  const database = await newDatabase(context.dialect, context.pgUrl, spec.name);
  const services: RunningService[] = [];
  const start = async (suffix: string) => {
    const logFile = join(DATA_DIR, `service-${spec.name}-${context.dialect}${suffix}.log`);
    const settings = { LOG_LEVEL: 'info', MIXTAPE_PLAYLISTS_PER_USER: '1000000', ...spec.settings };
    const options = { profile: context.profile, root: spec.root ?? context.root, fromSource: spec.fromSource };
    const service = await startService({ databaseUrl: database.url, logFile, settings, ...options, cpu: SERVICE_CPU });
    services.push(service);
    return { service, logFile };
  };
  try {
    for (const user of spec.users ?? []) addUser(database.url, user);
    await spec.prepare?.(database.url);
    mkdirSync(DATA_DIR, { recursive: true });
    const { service, logFile } = await start('');
    pinBench();
    const another = async (suffix: string) => (await start(`-${suffix}`)).service;
    return await work({ url: service.url, service, databaseUrl: database.url, logFile, another });
  } finally {
    for (const service of services) await service.stop();
    await database.drop();
  }
}

/** A service for requests one at a time on playlists of up to `sizes` songs: long ones allowed, nothing shed. */
export const longPlaylistSettings = (sizes: readonly number[]) => ({
  LOG_LEVEL: 'warn',
  MIXTAPE_BOOTSTRAP_USER: `bench:${PASSWORD}`,
  MIXTAPE_SONGS_MAX: String(Math.max(1000, 2 * Math.max(...sizes))),
  MIXTAPE_BODY_LIMIT: String(1024 * 1024),
  MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0',
});
