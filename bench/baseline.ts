import { fork } from 'node:child_process';
import { once } from 'node:events';
import type { BaselineMessage, CannedAnswer } from './baseline-server.js';
import { ROOT, pinToCpu } from './service.js';

/** A captured answer of the service. */
export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

// The server sets these itself for every answer; copying them would send them twice.
const PER_CONNECTION_HEADERS = new Set(['connection', 'content-length', 'date', 'keep-alive', 'transfer-encoding']);

export interface Baseline {
  readonly url: string;
  /** The server's process id. */
  readonly pid: number;
  /** From now on, every request gets this answer. */
  answerWith(answer: Answer): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the baseline server, on `cpu` if given (the same core as the service, so that both get one core). Another
 * server that answers the same IPC messages may be given as `script` with its `args` (bench/floor.ts does).
 */
export async function startBaseline(
  cpu?: number,
  script = 'bench/baseline-server.ts',
  args: readonly string[] = [],
): Promise<Baseline> {
  const child = fork(script, args, {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (cpu !== undefined && child.pid !== undefined) pinToCpu(child.pid, cpu);
  const next = async <T extends BaselineMessage['type']>(type: T) => {
    for (;;) {
      const [message] = (await once(child, 'message')) as [BaselineMessage];
      if (message.type === type) return message as Extract<BaselineMessage, { type: T }>;
    }
  };
  const { port } = await next('listening');
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async answerWith(answer) {
      const headers = Object.fromEntries(
        Object.entries(answer.headers).filter(([name]) => !PER_CONNECTION_HEADERS.has(name)),
      );
      const message: CannedAnswer = { status: answer.status, headers, bodyBase64: answer.body.toString('base64') };
      const answering = next('answering');
      child.send(message);
      await answering;
    },
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
