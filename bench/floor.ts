/**
 * How close a Fastify server can come to the ceiling on this machine, before any of the service's own work: the
 * bare `node:http` baseline, then bench/floor-server.ts in each of its modes (Fastify alone, with the request log,
 * with the credential's lookup), every one on CPU 0 with the load on CPU 1, serving the same answer (a 10-song
 * playlist's JSON and the headers a `get` carries) to `GET /v3/playlist/{id}` with a Basic credential, in one run.
 * The four are measured in turn three times over and each keeps its best req/s per level (the ceiling itself moves
 * by half between two measurements on this machine), and the server's CPU time per request (user and system, from
 * /proc), which moves far less.
 *
 *   npm run bench:floor -- [seconds per level, default 5]
 */
import { cpus } from 'node:os';
import { startBaseline, type Answer } from './baseline.js';
import { measure, type BenchRequest } from './load.js';
import { processCpuMs } from './cpu.js';
import { pinToCpu } from './service.js';

const seconds = Number(process.argv[2] ?? 5);
const LEVELS = [16, 64];
const SERVERS: readonly { readonly label: string; readonly args: readonly string[]; readonly script?: string }[] = [
  { label: 'node:http (the ceiling)', args: [] },
  { label: 'Fastify, the route alone', args: ['fastify'], script: 'bench/floor-server.ts' },
  { label: 'Fastify and the request log', args: ['fastify-log'], script: 'bench/floor-server.ts' },
  { label: 'Fastify, the log and the credential', args: ['fastify-log-auth'], script: 'bench/floor-server.ts' },
];

const songs = Array.from({ length: 10 }, (_, i) => ({ id: 1000 + i, title: `Song number ${i}`, artist: 'Artist' }));
const body = Buffer.from(JSON.stringify({ id: 42, name: 'A playlist of ten songs', songs }));
const answer: Answer = {
  status: 200,
  headers: {
    'content-type': 'application/json; charset=utf-8',
    etag: '"v1-0123456789abcdef"',
    'cache-control': 'private, no-cache',
    vary: 'security, Authorization, Accept-Encoding',
    'x-request-id': '0123456789abcdef01234567',
    'x-content-type-options': 'nosniff',
  },
  body,
};
const requests: BenchRequest[] = Array.from({ length: 300 }, (_, i) => ({
  method: 'GET',
  path: `/v3/playlist/${i + 1}`,
  headers: { authorization: `Basic ${Buffer.from(`user${i % 100}:bench-password`).toString('base64')}` },
}));

const serverCpu = cpus().length >= 2 ? 0 : undefined;
if (serverCpu !== undefined) pinToCpu(process.pid, 1);

const ROUNDS = 3;
const best = SERVERS.map(() => LEVELS.map(() => 0));
const cpuPerRequest = SERVERS.map(() => LEVELS.map(() => Infinity));
for (let round = 0; round < ROUNDS; round++) {
  for (const [s, server] of SERVERS.entries()) {
    const running = await startBaseline(serverCpu, server.script, server.args);
    try {
      await running.answerWith(answer);
      await measure(running.url, requests, { connections: 16, durationSeconds: 2 });
      for (const [l, connections] of LEVELS.entries()) {
        const cpuBefore = processCpuMs(running.pid) * 1000;
        const { rps, non2xx, errors, responses } = await measure(running.url, requests, {
          connections,
          durationSeconds: seconds,
        });
        cpuPerRequest[s]![l] = Math.min(
          cpuPerRequest[s]![l]!,
          (processCpuMs(running.pid) * 1000 - cpuBefore) / responses,
        );
        if (non2xx + errors > 0) throw new Error(`${server.label}: ${non2xx} non-2xx answers, ${errors} errors`);
        best[s]![l] = Math.max(best[s]![l]!, rps);
        console.error(`round ${round + 1}, ${server.label}, ${connections} connections: ${Math.round(rps)} req/s`);
      }
    } finally {
      await running.stop();
    }
  }
}
console.log(`| server | ${LEVELS.map((c) => `${c} connections (req/s, ratio, CPU µs a request)`).join(' | ')} |`);
console.log(`| --- | ${LEVELS.map(() => '---:').join(' | ')} |`);
for (const [s, server] of SERVERS.entries()) {
  const cells = best[s]!.map(
    (rps, l) => `${Math.round(rps)}, ${(rps / best[0]![l]!).toFixed(2)}, ${cpuPerRequest[s]![l]!.toFixed(0)}`,
  );
  console.log(`| ${server.label} | ${cells.join(' | ')} |`);
}
