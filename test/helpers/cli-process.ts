import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ExitInfo, LogLine } from './server-process.js';
import { serviceEnvironment } from './service-environment.js';

/** How a CLI command ended and what it wrote. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Runs `mixtape ARGS` as its own process on the database at `databaseUrl`, as an operator would next to running
 * instances, with `input` on a piped (not terminal) stdin. Killed after `timeoutMs`.
 */
export function runCli(
  databaseUrl: string,
  args: readonly string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      cwd: ROOT,
      env: serviceEnvironment(process.env, { DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }),
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A command that exits before it reads its input (a usage mistake) closes the pipe: that EPIPE is no failure of
    // the run, whose exit code and output tell what happened.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/** The service started as README says, through npm: `npm start` or `npx mixtape serve`. */
export interface StartedThroughNpm {
  /** The process a supervisor would signal: npm (npx is npm too). */
  readonly npm: ChildProcess;
  /** Settles when npm has exited (the service may outlive it); never rejects. */
  readonly npmExited: Promise<ExitInfo>;
  /** The service's own process, from its log. */
  readonly servicePid: number;
  /** The base address, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Settles when the output's pipes are closed: every process that holds them, the service too, has exited. */
  readonly outputClosed: Promise<void>;
  output(): string;
  logLines(): LogLine[];
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
}

const LISTENING = /^Server listening at (http:\/\/\S+)$/;

/**
 * Runs `command ARGS` (`npm` or `npx`) in the checkout with these settings (PORT=0 on 127.0.0.1, logging at info,
 * unless given), in its own process group, as a terminal or a supervisor starts it; resolves once the service is
 * ready. Throws, having killed what it started, when it is not ready within `readyTimeoutMs`.
 */
export async function startThroughNpm(
  command: 'npm' | 'npx',
  args: readonly string[],
  settings: Readonly<Record<string, string>>,
  readyTimeoutMs = 90_000,
): Promise<StartedThroughNpm> {
  const npm = spawn(command, args, {
    cwd: ROOT,
    env: serviceEnvironment(process.env, {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      npm_config_update_notifier: 'false',
      ...settings,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let all = '';
  const lines: LogLine[] = [];
  const listeners = new Set<(line: LogLine) => void>();
  npm.stdout.setEncoding('utf8').on('data', (chunk: string) => (all += chunk));
  npm.stderr.setEncoding('utf8').on('data', (chunk: string) => (all += chunk));
  createInterface({ input: npm.stdout }).on('line', (text) => {
    let line: LogLine;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object') return;
      line = parsed as LogLine;
    } catch {
      return; // npm's own lines
    }
    lines.push(line);
    for (const listener of listeners) listener(line);
  });
  const npmExited = new Promise<ExitInfo>((resolve) => {
    npm.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
    npm.once('error', () => {
      resolve({ code: null, signal: null });
    });
  });
  const outputClosed = new Promise<void>((resolve) => {
    npm.once('close', () => {
      resolve();
    });
    npm.once('error', () => {
      resolve();
    });
  });
  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs: number) =>
    new Promise<LogLine>((resolve, reject) => {
      const found = lines.find(predicate);
      if (found !== undefined) {
        resolve(found);
        return;
      }
      const listener = (line: LogLine) => {
        if (!predicate(line)) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(line);
      };
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`expected log line not seen within ${timeoutMs} ms. Output:\n${all}`));
      }, timeoutMs);
      listeners.add(listener);
    });
  try {
    const listening = await waitForLog((line) => LISTENING.test(String(line.msg)), readyTimeoutMs);
    await waitForLog((line) => line.msg === 'mixtape is ready', readyTimeoutMs);
    return {
      npm,
      npmExited,
      servicePid: Number(listening.pid),
      url: LISTENING.exec(String(listening.msg))?.[1] ?? '',
      outputClosed,
      output: () => all,
      logLines: () => [...lines],
      waitForLog,
    };
  } catch (error) {
    killGroup(npm, 'SIGKILL');
    throw error;
  }
}

/** Sends the signal to every process of the group `child` leads (it was started `detached`), if any is left. */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // Nothing is left of the group.
  }
}

/**
 * Whether the process runs: it exists and has not exited. A process whose parent exited before it is reaped by
 * init, which may leave it a zombie for a while; that one has exited.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return !existsSync('/proc/self/stat');
  }
}
