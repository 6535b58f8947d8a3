/**
 * Unasked shares: mallory shares 300 playlists of 1 000 songs each with alice, who never asked
 * (`PUT /v3/playlist/{id}/members/alice`, viewer), and alice reads her shared list (`scope=shared`, the default page
 * of 20, and `limit=100`) and searches it (`scope=shared&search=`, a word all 300 names have), 50 requests each, one
 * at a time after 5 unmeasured, without and with `Accept-Encoding: gzip`. The baselines in the same run: bob, with
 * nothing shared with him, asks the same; mallory lists her own 300 (the same playlists, as their owner). Each row
 * gives the time to the answer's last byte (p50, and p99, which of 50 is the slowest), the answer's size, the longest
 * the service's event loop was held while the row ran (`nodejs_eventloop_lag_max_seconds`, reset at each scrape of
 * /metrics; its resolution is 10 ms) and the service's CPU time a request (every thread, from /proc). On a service and
 * database of its own (SQLite, or a new PostgreSQL database); the service runs on CPU 0, this process on CPU 1. Build
 * first (`npm run build`), then `npx tsx bench/unasked-shares.ts [--dialect sqlite|postgres] [--pg-url URL]
 * [--profile] [--only alice,bob,mallory] [--root DIR]`: `--profile` writes the service's CPU profile to
 * bench/profiles/ (each row's start is printed on stderr in the profile's clock); `--only` measures these users' rows;
 * `--root` serves another checkout's build (`DIR/dist`), to compare two commits on one machine.
 */
import { request, Agent } from 'node:http';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { processCpuSplitMs } from './cpu.js';
import { newDatabase } from './hostile-search.js';
import { addUser, auth, idOf, percentile, post } from './neighbours.js';
import { ROOT, startService } from './service.js';

const PLAYLISTS = 300;
const SONGS = 1000;
/** The demo catalog's songs (ids 1 to 240), repeated. */
const CATALOG = 240;
const REQUESTS = 50;
const WARM_UP = 5;
const WORD = 'unasked';

interface Row {
  readonly who: string;
  readonly path: string;
  readonly coding: 'identity' | 'gzip';
  readonly p50: number;
  readonly p99: number;
  readonly bytes: number;
  readonly count: string | undefined;
  /** The longest the service's event loop was held while the row ran, ms. */
  readonly loopMaxMs: number;
  /** The service's CPU time (every thread, in 10 ms ticks) over the row, per request. */
  readonly cpuMs: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One GET, timed to the last byte of the answer as sent (compressed or not; nothing is decompressed). */
function get(url: string, user: string, path: string, coding: string) {
  type Answer = { status: number; bytes: number; ms: number; count: string | undefined };
  return new Promise<Answer>((resolve, reject) => {
    const started = performance.now();
    const sent = request(`${url}${path}`, { agent, headers: { 'accept-encoding': coding, ...auth(user) } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('error', reject);
      res.on('end', () => {
        const count = res.headers['x-total-count'] as string | undefined;
        resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started, count });
      });
    });
    sent.on('error', reject);
    sent.end();
  });
}

/** The longest delay of the service's event loop since the last scrape (which resets it), in ms. */
const loopMax = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1] ?? NaN) * 1000;
};

const cpuOf = (pid: number) => {
  const { user, system } = processCpuSplitMs(pid);
  return user + system;
};

async function measure(url: string, pid: number, who: string, path: string, coding: 'identity' | 'gzip'): Promise<Row> {
  // The first read of a page builds what memory keeps; the set-up's garbage is collected meanwhile.
  for (let i = 0; i < WARM_UP; i++) await get(url, who, path, coding);
  await loopMax(url); // resets the event loop's histogram
  const cpu = cpuOf(pid);
  const times: number[] = [];
  let last = { bytes: 0, count: undefined as string | undefined };
  for (let i = 0; i < REQUESTS; i++) {
    const answer = await get(url, who, path, coding);
    if (answer.status !== 200) throw new Error(`${who} ${path}: ${answer.status}`);
    times.push(answer.ms);
    last = answer;
  }
  const cpuMs = (cpuOf(pid) - cpu) / REQUESTS;
  const loopMaxMs = await loopMax(url);
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    who,
    path,
    coding,
    p50: round(percentile(times, 0.5)),
    p99: round(percentile(times, 0.99)),
    bytes: last.bytes,
    count: last.count,
    loopMaxMs: round(loopMaxMs),
    cpuMs: round(cpuMs),
  };
}

/** `count` calls of `work(i)`, `connections` at a time. */
async function inTurn(count: number, connections: number, work: (i: number) => Promise<void>) {
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < count; i = next++) await work(i);
  };
  await Promise.all(Array.from({ length: connections }, loop));
}

interface Options {
  readonly profile: boolean;
  readonly only?: readonly string[] | undefined;
  readonly root?: string | undefined;
}

export async function measureUnaskedShares(dialect: 'sqlite' | 'postgres', pgUrl: string, options: Options) {
  const load = { start: readFileSync('/proc/loadavg', 'utf8').trim(), end: '' };
  const database = await newDatabase(dialect, pgUrl, 'unasked-shares');
  try {
    for (const name of ['mallory', 'alice', 'bob']) addUser(database.url, name);
    const logDir = join(ROOT, 'bench', 'data');
    mkdirSync(logDir, { recursive: true });
    const service = await startService({
      databaseUrl: database.url,
      logFile: join(logDir, `service-unasked-shares-${dialect}.log`),
      settings: { LOG_LEVEL: 'info' },
      profile: options.profile,
      cpu: 0,
      ...(options.root === undefined ? {} : { root: options.root }),
    });
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    try {
      const { url } = service;
      const started = performance.now();
      const ids: number[] = [];
      await inTurn(PLAYLISTS, 2, async (i) => {
        const songs = Array.from({ length: SONGS }, (_v, k) => 1 + ((i + k) % CATALOG));
        ids[i] = await idOf(await post(url, 'mallory', `mix ${i} ${WORD}`, songs));
      });
      await inTurn(PLAYLISTS, 4, async (i) => {
        const response = await fetch(`${url}/v3/playlist/${ids[i]}/members/alice`, {
          method: 'PUT',
          headers: { ...auth('mallory'), 'content-type': 'application/json' },
          body: JSON.stringify({ role: 'viewer' }),
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`share ${ids[i]}: ${response.status}`);
      });
      console.error(`set-up: ${PLAYLISTS} playlists made and shared in ${Math.round(performance.now() - started)} ms`);
      const reads: [string, string][] = [
        ['alice', '/v3/playlist?scope=shared'],
        ['alice', '/v3/playlist?scope=shared&limit=100'],
        ['alice', `/v3/playlist?scope=shared&search=${WORD}`],
        ['alice', `/v3/playlist?scope=all&search=${WORD}`],
        ['bob', '/v3/playlist?scope=shared'],
        ['bob', '/v3/playlist?scope=shared&limit=100'],
        ['bob', `/v3/playlist?scope=shared&search=${WORD}`],
        ['mallory', '/v3/playlist'],
        ['mallory', '/v3/playlist?limit=100'],
        ['mallory', `/v3/playlist?search=${WORD}`],
      ];
      const rows: Row[] = [];
      for (const [who, path] of reads.filter(([who]) => options.only?.includes(who) ?? true)) {
        for (const coding of ['identity', 'gzip'] as const) {
          // CLOCK_MONOTONIC in µs, as the CPU profile's sample times: where each row starts in it.
          console.error(`${who} ${path} ${coding} from ${process.hrtime.bigint() / 1000n} µs`);
          const row = await measure(url, service.pid!, who, path, coding);
          console.error(JSON.stringify(row));
          rows.push(row);
        }
      }
      load.end = readFileSync('/proc/loadavg', 'utf8').trim();
      return { dialect, rows, load };
    } finally {
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

export function formatUnaskedShares(r: Awaited<ReturnType<typeof measureUnaskedShares>>): string {
  return [
    `Unasked shares (${r.dialect}): ${PLAYLISTS} playlists of ${SONGS} songs shared with alice; ${REQUESTS} requests ` +
      `a row, one at a time, ms to the last byte; load average at the start: ${r.load.start}; at the end: ${r.load.end}`,
    '| user | GET | Accept-Encoding | p50 | p99 | bytes | X-Total-Count | event loop max ms | CPU ms/request |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.rows.map(
      (row) =>
        `| ${row.who} | ${row.path} | ${row.coding} | ${row.p50} | ${row.p99} | ${row.bytes} | ${row.count ?? ''} | ${row.loopMaxMs} | ${row.cpuMs} |`,
    ),
  ].join('\n');
}

if (process.argv[1]?.endsWith('unasked-shares.ts') === true) {
  const arg = (name: string) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  measureUnaskedShares(
    arg('--dialect') === 'postgres' ? 'postgres' : 'sqlite',
    arg('--pg-url') ?? 'postgres://root@127.0.0.1:5432/postgres',
    { profile: process.argv.includes('--profile'), only: arg('--only')?.split(','), root: arg('--root') },
  )
    .then((results) => {
      console.error(`reads end at ${process.hrtime.bigint() / 1000n} µs`);
      console.log(formatUnaskedShares(results));
      agent.destroy();
    })
    .catch((error: unknown) => {
      console.error('bench:', error);
      process.exitCode = 1;
      agent.destroy();
    });
}
