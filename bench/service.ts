import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { serviceEnvironment } from '../test/helpers/service-environment.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const PROFILE_DIR = 'bench/profiles';
const SERVICE_TITLE = 'mixtape-bench-service';

const READY_TIMEOUT_MS = 120_000;
const RSS_INTERVAL_MS = 200;
const STOP_TIMEOUT_MS = 30_000;

/** Moves a running process, every thread of it, to one CPU (Linux `taskset`). */
export function pinToCpu(pid: number, cpu: number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
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

/** The resident set size of a process in bytes, from /proc (Linux), or undefined once it has exited. */
function residentBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}

export interface RunningService {
  readonly url: string;
  /** The service's process id (undefined if it could not be spawned). */
  readonly pid: number | undefined;
  /** From spawn to the first 200 from /readyz. */
  readonly startMs: number;
  readonly rssAtReadyBytes: number;
  /** The highest resident set size seen so far (sampled every 200 ms from the spawn on). */
  maxRssBytes(): number;
  /** SIGTERM, then waits for the exit (the CPU profile, with --profile, is written then). */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  readonly databaseUrl: string;
  /** Where the service's request log goes (overwritten). */
  readonly logFile: string;
  readonly settings: Readonly<Record<string, string>>;
  readonly profile: boolean;
  /** Pin the service to this CPU (Linux `taskset`) once it is ready, away from the load generator. */
  readonly cpu?: number;
  /** The checkout to serve (default: this one): another commit's worktree, to measure it in the same run. */
  readonly root?: string;
  /**
   * Run `node --import tsx src/cli.ts serve` instead of the built `dist/cli.js`: a checkout measured beside this one
   * then needs no build of its own, and neither goes stale.
   */
  readonly fromSource?: boolean;
}

/**
 * Starts the built service (`node dist/cli.js serve`, or its source with `fromSource`) as a client would meet it, and
 * waits until it is ready.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const profiling = options.profile ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  // A name of its own in ps and top, so that it is told apart from other instances of the service on the machine,
  // and is not stopped along with them by a `pkill -f 'cli.js serve'`.
  const title = `--title=${SERVICE_TITLE}`;
  // The request log (one JSON line per request) goes to a file, as in production: a pipe to this process could
  // fill up while the load generator is busy, and stall the service.
  const log = openSync(options.logFile, 'w');
  const started = performance.now();
  const entry = options.fromSource === true ? ['--import', 'tsx', 'src/cli.ts'] : ['dist/cli.js'];
  const child: ChildProcess = spawn(process.execPath, [title, ...profiling, ...entry, 'serve'], {
    cwd: options.root ?? ROOT,
    env: serviceEnvironment(process.env, {
      DATABASE_URL: options.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ...options.settings,
    }),
    stdio: ['ignore', log, 'pipe'],
  });
  closeSync(log);
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-10_000);
  });
  let stopping = false;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      const how = `exit code ${code ?? 'none'}, signal ${signal ?? 'none'}`;
      if (!stopping)
        console.error(`\n!!! The service exited during the run (${how}); see ${options.logFile}\n${stderr}`);
      resolve(how);
    });
  });
  let maxRss = 0;
  const sampleRss = () => {
    if (child.pid !== undefined) maxRss = Math.max(maxRss, residentBytes(child.pid) ?? 0);
  };
  const sampler = setInterval(sampleRss, RSS_INTERVAL_MS);

  let exitedEarly: string | undefined;
  void exited.then((how) => (exitedEarly = how));
  while (!(await isReady(url))) {
    if (exitedEarly !== undefined) {
      clearInterval(sampler);
      throw new Error(`The service exited before it was ready (${exitedEarly}):\n${stderr}`);
    }
    if (performance.now() - started > READY_TIMEOUT_MS) {
      clearInterval(sampler);
      child.kill('SIGKILL');
      throw new Error(`The service was not ready within ${READY_TIMEOUT_MS} ms:\n${stderr}`);
    }
    await sleep(5);
  }
  const startMs = performance.now() - started;
  // Pinned once ready: the start is measured as an operator's machine would run it, the load on one core.
  if (options.cpu !== undefined && child.pid !== undefined) pinToCpu(child.pid, options.cpu);
  sampleRss();
  const rssAtReadyBytes = child.pid === undefined ? 0 : (residentBytes(child.pid) ?? 0);

  return {
    url,
    pid: child.pid,
    startMs,
    rssAtReadyBytes,
    maxRssBytes: () => maxRss,
    async stop() {
      stopping = true;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      const how = await exited;
      clearTimeout(timer);
      clearInterval(sampler);
      if (!how.startsWith('exit code 0')) console.warn(`The service stopped badly (${how}):\n${stderr}`);
    },
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
