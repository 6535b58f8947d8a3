/**
 * How close Fastify comes to the ceiling before the service's own work: bench/floor-server.ts in each mode serving a
 * 10-song playlist's answer, three rounds, each keeping its best req/s and least CPU a request per level.
 *
 *   npm run bench:floor -- [seconds per level, default 5]
 */
import type { Answer } from './floor-server.js';
import { startBaseline } from './floor-server.js';
import { measure, type BenchRequest } from './load.js';
import { table } from './results.js';
import { SERVICE_CPU, pinBench, processCpuMs } from './service.js';

const seconds = Number(process.argv[2] ?? 5);
const LEVELS = [16, 64];
const SERVERS = [
  ['node:http (the ceiling)', 'http'],
  ['Fastify, the route alone', 'fastify'],
  ['Fastify and the request log', 'fastify-log'],
  ['Fastify, the log and the credential', 'fastify-log-auth'],
] as const;

const songs = Array.from({ length: 10 }, (_, i) => ({ id: 1000 + i, title: `Song number ${i}`, artist: 'Artist' }));
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
  body: Buffer.from(JSON.stringify({ id: 42, name: 'A playlist of ten songs', songs })),
};
const requests: BenchRequest[] = Array.from({ length: 300 }, (_, i) => ({
  method: 'GET',
  path: `/v3/playlist/${i + 1}`,
  headers: { authorization: `Basic ${Buffer.from(`user${i % 100}:bench-password`).toString('base64')}` },
}));

pinBench();
const best = SERVERS.map(() => LEVELS.map(() => 0));
const cpu = SERVERS.map(() => LEVELS.map(() => Infinity));
for (let round = 1; round <= 3; round++) {
  for (const [s, [label, mode]] of SERVERS.entries()) {
    const server = await startBaseline(SERVICE_CPU, mode);
    try {
      await server.answerWith(answer);
      await measure(server.url, requests, { connections: 16, durationSeconds: 2 });
      for (const [l, connections] of LEVELS.entries()) {
        const before = processCpuMs(server.pid);
        const m = await measure(server.url, requests, { connections, durationSeconds: seconds });
        if (m.non2xx + m.errors > 0) throw new Error(`${label}: ${m.non2xx} non-2xx answers, ${m.errors} errors`);
        cpu[s]![l] = Math.min(cpu[s]![l]!, ((processCpuMs(server.pid) - before) * 1000) / m.responses);
        best[s]![l] = Math.max(best[s]![l]!, m.rps);
        console.error(`round ${round}, ${label}, ${connections} connections: ${Math.round(m.rps)} req/s`);
      }
    } finally {
      await server.stop();
    }
  }
}
console.log(
  table(
    ['server', ...LEVELS.map((c) => `${c} connections (req/s, ratio, CPU µs a request)`)].join('|'),
    SERVERS.map(([label], s) => [
      label,
      ...best[s]!.map((rps, l) => `${Math.round(rps)}, ${(rps / best[0]![l]!).toFixed(2)}, ${cpu[s]![l]!.toFixed(0)}`),
    ]),
  ),
);
