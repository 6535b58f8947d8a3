import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { Bounded } from '../concurrency/bounded.js';
import type { WorkerSettings } from '../config.js';
import { ApiError } from '../http/errors.js';
import type { TASKS, TaskName } from './tasks.js';

type Input<N extends TaskName> = Parameters<(typeof TASKS)[N]>[0];
type Output<N extends TaskName> = ReturnType<(typeof TASKS)[N]>;

/** How long a task may wait for a free thread before it answers 503. */
const WAIT_MS = 10_000;
const NICE_INCREMENT = 19;

/**
 * The module a thread loads: `compiled`, a .js file of the built service, or, when the service runs from its
 * TypeScript sources (tests, `npm run dev`), the .ts file beside it through tsx, as the rest of the code runs then.
 */
export function threadModule(compiled: URL): { filename: string; execArgv: string[] } {
  if (existsSync(fileURLToPath(compiled))) return { filename: compiled.href, execArgv: [] };
  const source = new URL(compiled.href.replace(/\.js$/, '.ts'));
  return { filename: source.href, execArgv: ['--import', import.meta.resolve('tsx')] };
}

/**
 * A small pool of worker threads for the work whose cost grows with what a caller sends (reading a playlist file,
 * a diff of two long versions), so that it never holds the event loop every other request needs. At most `threads`
 * tasks run at once and `queue` more wait, each at most 10 s; past that a task is refused with 503. The callers hold
 * each user's share of the work that leads to a task (its reads included), so that one user's flood waits apart and
 * is refused with 429 before it costs anything. The threads start with the first task and stop when the service
 * closes.
 */
export class WorkerPool {
  readonly #settings: WorkerSettings;
  readonly #slots: Bounded;
  #pool: Piscina | undefined;

  constructor(settings: WorkerSettings) {
    this.#settings = settings;
    this.#slots = new Bounded({
      limit: settings.threads,
      queue: settings.queue,
      waitMs: WAIT_MS,
      refuse: () => ApiError.unavailable('The service is busy with other large requests; try again shortly.', 1),
    });
  }

  /** Runs a task of tasks.ts on a thread and resolves with what it returns. */
  run<N extends TaskName>(name: N, input: Input<N>): Promise<Output<N>> {
    return this.#slots.run(() => this.#threads().run(input, { name }) as Promise<Output<N>>);
  }

  /** Stops the threads (after the tasks running now). */
  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.close();
  }

  #threads(): Piscina {
    this.#pool ??= new Piscina({
      ...threadModule(new URL('./tasks.js', import.meta.url)),
      minThreads: this.#settings.threads,
      maxThreads: this.#settings.threads,
      // The Bounded in front holds the queue: the pool only ever has as many tasks as threads.
      maxQueue: this.#settings.threads,
      concurrentTasksPerWorker: 1,
      // Below the event loop's priority (nice 19, Linux and macOS): where the threads share a core with it, they
      // take what it leaves rather than half of it (bench/hostile.ts, `hostile-files`; docs/benchmarks.md).
      niceIncrement: NICE_INCREMENT,
    });
    return this.#pool;
  }
}
