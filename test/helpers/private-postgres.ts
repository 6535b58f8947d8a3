import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bench/service.js';

/**
 * A PostgreSQL cluster of the test's own, in a temporary folder on a free port, for faults that must never touch the
 * shared server: pausing every process of it (SIGSTOP), stopping it, starting it again. Needs root (the cluster runs
 * as the `postgres` user) and the server binaries of the installed PostgreSQL.
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

function binDir(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort();
  const latest = versions.at(-1);
  if (latest === undefined) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  return join('/usr/lib/postgresql', latest, 'bin');
}

const asPostgres = (command: string, args: string[]) =>
  execFileSync('runuser', ['-u', 'postgres', '--', join(binDir(), command), ...args], {
    stdio: 'pipe',
    timeout: 60_000,
  });

/** initdb in a new temporary folder; the cluster is not started. */
export async function createPrivatePostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(join(tmpdir(), 'mixtape-pg-'));
  chmodSync(root, 0o755);
  const { uid, gid } = postgresUser();
  chownSync(root, uid, gid);
  const data = join(root, 'data');
  const port = await freePort();
  try {
    asPostgres('initdb', ['-D', data, '-U', 'root', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`initdb failed (the fault tests need root and PostgreSQL's server binaries): ${String(error)}`);
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
      asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', join(root, 'log'), '-w', '-t', '30', 'start']);
      running = true;
    },
    stop() {
      if (!running) return;
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
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

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error('no postgres user on this machine');
  return { uid: Number(uid), gid: Number(gid) };
}
