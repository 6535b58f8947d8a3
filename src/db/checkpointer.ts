import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What the checkpoint thread reports: only when its state changes, so that a failing disk logs once. */
export type CheckpointReport = { readonly ok: true } | { readonly ok: false; readonly error: string };

export interface Checkpointer {
  stop(): Promise<void>;
}

// A CommonJS script, so that it runs the same from the built files and from the TypeScript sources under test.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let failing = false;
const timer = setInterval(() => {
  try {
    checkpoint.get();
    if (failing) parentPort.postMessage({ ok: true });
    failing = false;
  } catch (error) {
    if (!failing) parentPort.postMessage({ ok: false, error: String(error) });
    failing = true;
  }
}, workerData.intervalMs);
parentPort.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Copies the WAL back into the database file on a thread and a connection of its own, every `intervalMs`, with a
 * PASSIVE checkpoint (it never waits for, nor blocks, readers and the writer). The service's connections then
 * never checkpoint by themselves: a checkpoint of thousands of pages, and its fsync, no longer runs inside the
 * request whose commit crossed the threshold. If the thread cannot run, `onFailure` is called so that the caller
 * can turn automatic checkpoints back on.
 */
export function startCheckpointer(
  file: string,
  intervalMs: number,
  onReport: (report: CheckpointReport) => void,
  onFailure: (error: unknown) => void,
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(SOURCE, { eval: true, workerData: { driver, file, intervalMs } });
  let stopping = false;
  let failed = false;
  const fail = (error: unknown) => {
    if (stopping || failed) return;
    failed = true;
    onFailure(error);
  };
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', (code) => {
      fail(new Error(`the checkpoint thread exited with code ${code}`));
      resolve();
    });
  });
  worker.on('message', onReport);
  worker.on('error', fail);
  // It must not keep the process alive by itself.
  worker.unref();
  return {
    async stop() {
      if (stopping) return;
      stopping = true;
      if (failed) return;
      // Waited for: the process must not end before the thread has closed its connection.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
