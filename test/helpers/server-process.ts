import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { serviceEnvironment } from './service-environment.js';

/** How a child process ended. */
export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One JSON log line of the service (pino). */
export interface LogLine {
  readonly level?: number;
  readonly msg?: string;
  readonly [key: string]: unknown;
}

/** `mixtape serve` running as a child process. */
export interface ServerProcess {
  /** The base address, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  readonly process: ChildProcess;
  /** Settles when the process has exited and its output is complete; never rejects. */
  readonly exited: Promise<ExitInfo>;
  /** Sends the signal (SIGTERM by default) unless the process has already exited, and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<ExitInfo>;
  /** Everything written to stdout and stderr so far, in arrival order. */
  output(): string;
  stdout(): string;
  stderr(): string;
  /** The JSON lines of stdout so far. */
  logLines(): LogLine[];
  /** The first log line (already written or still to come) that satisfies the predicate. */
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

export interface ServeOptions {
  /** `sqlite:/path/to/file.db` or `postgres://…`. */
  readonly databaseUrl: string;
  /** `name:password`, created at start when missing. */
  readonly bootstrapUser?: string;
  /** Further settings; they win over the defaults above. */
  readonly env?: Readonly<Record<string, string>>;
  /** How long to wait for the service to be ready before giving up (default 30 s). */
  readonly readyTimeoutMs?: number;
  /** Called with every log line as it arrives, from the start on (before the service is ready). */
  readonly onLog?: (line: LogLine) => void;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every child started here, so that `killAllServers` can clean up whatever a failed test left behind. */
const children = new Set<ChildProcess>();

interface Spawned {
  readonly child: ChildProcess;
  readonly exited: Promise<ExitInfo>;
  readonly output: () => string;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly lines: LogLine[];
  readonly onLine: Set<(line: LogLine) => void>;
}

/** `node --import tsx src/cli.ts serve` with exactly these settings. */
function spawnServe(settings: Readonly<Record<string, string>>): Spawned {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    cwd: ROOT,
    env: serviceEnvironment(process.env, settings),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let all = '';
  let out = '';
  let err = '';
  const lines: LogLine[] = [];
  const onLine = new Set<(line: LogLine) => void>();
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    all += chunk;
    out += chunk;
  });
  child.stderr.on('data', (chunk: string) => {
    all += chunk;
    err += chunk;
  });
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: LogLine;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object') return;
      line = parsed as LogLine;
    } catch {
      return;
    }
    lines.push(line);
    for (const listener of onLine) listener(line);
  });
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
    child.once('error', () => {
      children.delete(child);
      resolve({ code: null, signal: null });
    });
  });
  return { child, exited, output: () => all, stdout: () => out, stderr: () => err, lines, onLine };
}

function waitForLine(
  spawned: Spawned,
  predicate: (line: LogLine) => boolean,
  timeoutMs: number,
  what: string,
): Promise<LogLine> {
  const found = spawned.lines.find(predicate);
  if (found !== undefined) return Promise.resolve(found);
  return new Promise<LogLine>((resolve, reject) => {
    const finish = (error: Error | undefined, line?: LogLine) => {
      clearTimeout(timer);
      spawned.onLine.delete(listener);
      if (error === undefined && line !== undefined) resolve(line);
      else reject(error ?? new Error(what));
    };
    const listener = (line: LogLine) => {
      if (predicate(line)) finish(undefined, line);
    };
    const timer = setTimeout(() => {
      finish(new Error(`${what}: not seen within ${timeoutMs} ms. Output:\n${spawned.output()}`));
    }, timeoutMs);
    spawned.onLine.add(listener);
    void spawned.exited.then((exit) => {
      finish(new Error(`${what}: the process exited first (${JSON.stringify(exit)}). Output:\n${spawned.output()}`));
    });
  });
}

const LISTENING = /^Server listening at (http:\/\/\S+)$/;

/**
 * Starts the real service and waits until it is ready: it listens (the URL comes from the
 * `Server listening at …` line) and has logged `mixtape is ready`, after which its signal handlers are in place.
 */
export async function startServer(options: ServeOptions): Promise<ServerProcess> {
  const timeoutMs = options.readyTimeoutMs ?? 30_000;
  const spawned = spawnServe({
    DATABASE_URL: options.databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    // Load shedding judges the machine: on a busy test machine it refuses writes that the test is about. It has a
    // test of its own, and a test of the service's defences turns it back on.
    MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0',
    ...(options.bootstrapUser === undefined ? {} : { MIXTAPE_BOOTSTRAP_USER: options.bootstrapUser }),
    ...options.env,
  });
  if (options.onLog !== undefined) spawned.onLine.add(options.onLog);
  let url: string;
  try {
    const listening = await waitForLine(
      spawned,
      (line) => typeof line.msg === 'string' && LISTENING.test(line.msg),
      timeoutMs,
      'mixtape serve did not start listening',
    );
    url = LISTENING.exec(listening.msg ?? '')?.[1] ?? '';
    await waitForLine(spawned, (line) => line.msg === 'mixtape is ready', timeoutMs, 'mixtape serve was not ready');
  } catch (error) {
    spawned.child.kill('SIGKILL');
    await spawned.exited;
    throw error;
  }
  const { child, exited } = spawned;
  return {
    url,
    process: child,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    output: spawned.output,
    stdout: spawned.stdout,
    stderr: spawned.stderr,
    logLines: () => [...spawned.lines],
    waitForLog: (predicate, waitMs = 30_000) => waitForLine(spawned, predicate, waitMs, 'expected log line'),
  };
}

export interface FinishedServe extends ExitInfo {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `mixtape serve` with exactly these settings (PORT=0 and HOST=127.0.0.1 unless given) and waits for it to
 * exit, for settings that must stop the start. Kills it and throws if it is still running after `timeoutMs`.
 */
export async function runServeExpectingExit(
  settings: Readonly<Record<string, string>>,
  timeoutMs = 30_000,
): Promise<FinishedServe> {
  const spawned = spawnServe({ PORT: '0', HOST: '127.0.0.1', ...settings });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      resolve('timeout');
    }, timeoutMs);
  });
  const result = await Promise.race([spawned.exited, timedOut]);
  clearTimeout(timer);
  if (result === 'timeout') {
    spawned.child.kill('SIGKILL');
    await spawned.exited;
    throw new Error(`mixtape serve was still running after ${timeoutMs} ms. Output:\n${spawned.output()}`);
  }
  return { ...result, stdout: spawned.stdout(), stderr: spawned.stderr() };
}

/** Kills (SIGKILL) every child started here that is still running, and waits for them; for `afterAll`. */
export async function killAllServers(): Promise<void> {
  const running = [...children];
  await Promise.all(
    running.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) {
            children.delete(child);
            resolve();
            return;
          }
          child.once('close', () => {
            resolve();
          });
          child.kill('SIGKILL');
        }),
    ),
  );
}
