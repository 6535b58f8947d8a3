import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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
    child.stdin.end(options.input ?? '');
  });
}
