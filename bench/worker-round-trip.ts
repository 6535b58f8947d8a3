/**
 * A `postMessage` to a worker thread and back, a statement's text going and a row coming: wall and CPU µs each.
 *
 *   taskset -c 0 npx tsx bench/worker-round-trip.ts
 */
import { Worker } from 'node:worker_threads';

const ROUND_TRIPS = 20_000;
const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   parentPort.on('message', (m) => parentPort.postMessage({ id: m.id, rows: [{ id: 1 }], changes: 1 }));`,
  { eval: true },
);
let answered: (() => void) | undefined;
worker.on('message', () => answered?.());
const roundTrip = (id: number) =>
  new Promise<void>((resolve) => {
    answered = resolve;
    worker.postMessage({ id, sql: 'INSERT INTO playlist_songs VALUES (?, ?, ?)', params: [1, 2, 3] });
  });

for (let i = 0; i < 2000; i++) await roundTrip(i);
const cpuBefore = process.cpuUsage();
const started = process.hrtime.bigint();
for (let i = 0; i < ROUND_TRIPS; i++) await roundTrip(i);
const wallMicros = Number(process.hrtime.bigint() - started) / 1000 / ROUND_TRIPS;
const cpu = process.cpuUsage(cpuBefore);
console.log(
  `${ROUND_TRIPS} round trips: ${wallMicros.toFixed(1)} µs each, ` +
    `${((cpu.user + cpu.system) / ROUND_TRIPS).toFixed(1)} µs of CPU (both threads)`,
);
await worker.terminate();
