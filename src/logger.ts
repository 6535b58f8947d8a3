import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from './config.js';

/** Log bytes gathered before a write to stdout, and the longest a line waits for one. */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 100;

/** What pino writes to and `LineBatch` hands its batches to (pino's `destination`, sonic-boom). */
interface Destination {
  write(text: string): boolean;
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/** Every batch that may hold lines, written out when the process exits; one exit hook for all of them. */
const batches = new Set<WeakRef<LineBatch>>();
let exitHooked = false;
const flushAtExit = () => {
  for (const batch of batches) {
    try {
      batch.deref()?.flushSync();
    } catch {
      // A destination that cannot be written now (not open yet, or gone): nothing more can be done at exit.
    }
  }
};

/**
 * The lines written during one turn of the event loop, handed to the destination as one string at the end of the
 * turn. The destination measures its whole buffer on every write, a cost that grows with each line it holds (about
 * a microsecond a line at 4 KB): a busy server answers several requests a turn, and now pays that once a turn.
 * Nothing is kept past the turn; what exits the process within it is written by the exit hook, whichever of it and
 * the destination's own runs first.
 */
export class LineBatch {
  readonly #destination: Destination;
  #lines: string[] = [];
  #scheduled = false;

  constructor(destination: Destination) {
    this.#destination = destination;
    batches.add(new WeakRef(this));
    if (!exitHooked) {
      exitHooked = true;
      process.on('exit', flushAtExit);
    }
  }

  write(line: string): boolean {
    this.#lines.push(line);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#handOver);
    }
    return true;
  }

  /** pino's `logger.flush`: what this turn gathered, then the destination's buffer. */
  flush(callback?: (error?: Error) => void): void {
    this.#handOver();
    this.#destination.flush(callback);
  }

  flushSync(): void {
    this.#handOver();
    this.#destination.flushSync();
  }

  readonly #handOver = (): void => {
    this.#scheduled = false;
    if (this.#lines.length === 0) return;
    const text = this.#lines.length === 1 ? this.#lines[0]! : this.#lines.join('');
    this.#lines = [];
    this.#destination.write(text);
  };
}

/**
 * Pino options: one JSON line per request, credentials never logged. Lines go to stdout in writes of about 4 KB,
 * and at least every 100 ms: a write per line cost a system call per request. Lines reach the buffer of those writes
 * once a turn of the event loop (`LineBatch`). What is buffered is written when the process exits, and lost only if
 * it is killed (`kill -9`), at most 100 ms of lines.
 */
export function loggerOptions(config: Config, pretty: boolean): FastifyServerOptions['logger'] {
  const base = {
    level: config.logLevel,
    redact: {
      paths: ['req.headers.security', 'req.headers.authorization', 'headers.security', 'headers.authorization'],
      censor: '[redacted]',
    },
  };
  if (pretty) return { ...base, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } };
  return { ...base, stream: logStream(1) };
}

/** Where the log lines go: stdout (1), or a file (bench/floor-server.ts), as `loggerOptions` describes. */
export function logStream(dest: number | string): LineBatch {
  return new LineBatch(
    pino.destination({ dest, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS }),
  );
}
