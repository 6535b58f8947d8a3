import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../../bench/service.js';

/** A `redis-server` of the test's own, on a free loopback port, keeping nothing on disk. */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Starts it (again, on the same port) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and waits for the exit; nothing when it is not running. */
  stop(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open and nothing is answered; `resume` (SIGCONT) thaws it. */
  freeze(): void;
  resume(): void;
}

const START_TIMEOUT_MS = 10_000;

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    if (child !== undefined) throw new Error('the private redis-server is already running');
    const server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = server;
    exited = new Promise((resolve) => {
      server.once('close', () => {
        resolve();
      });
      server.once('error', () => {
        resolve();
      });
    });
    let output = '';
    server.stdout.setEncoding('utf8');
    server.stderr.setEncoding('utf8');
    server.stderr.on('data', (chunk: string) => (output += chunk));
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`redis-server on port ${port} was not ready within ${START_TIMEOUT_MS} ms:\n${output}`));
      }, START_TIMEOUT_MS);
      server.stdout.on('data', (chunk: string) => {
        output += chunk;
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`redis-server on port ${port} exited at start:\n${output}`));
      });
    });
    try {
      await ready;
    } catch (error) {
      await stop();
      throw error;
    }
  };

  const stop = async () => {
    const running = child;
    if (running === undefined) return;
    if (running.exitCode === null && running.signalCode === null) {
      running.kill('SIGCONT');
      running.kill('SIGTERM');
    }
    const force = setTimeout(() => running.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(force);
    child = undefined;
  };

  const signal = (name: NodeJS.Signals) => {
    if (child === undefined) throw new Error('the private redis-server is not running');
    child.kill(name);
  };

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    freeze: () => {
      signal('SIGSTOP');
    },
    resume: () => {
      signal('SIGCONT');
    },
  };
}
