/**
 * Noisy neighbours: how fast one user's small requests stay while other users send the heaviest requests the API
 * allows. A user reads a playlist of ten songs at a steady pace (open loop) while, in turn, nobody else works
 * (the baseline, measured in the same run), 8 connections list pages of 100 playlists of 1000 songs (about 7 MB
 * each), and 64 connections create playlists of 1000 songs. Run it with `npm run bench -- --only neighbours`, or
 * alone with `npx tsx bench/neighbours.ts [--duration S]`. The service runs on CPU 0 and the clients on CPU 1.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { serviceEnvironment } from '../test/helpers/service-environment.js';
import { ROOT, startService } from './service.js';

const PASSWORD = 'noisy-neighbours';
const HEAVY_PLAYLISTS = 100;
const HEAVY_SONGS = 1000;
/** The steady pace of the small requests, per second. */
const PACE = 50;

export interface VictimLatency {
  readonly requests: number;
  readonly failures: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface NeighbourPhase {
  readonly name: string;
  readonly description: string;
  readonly victim: VictimLatency;
  /** Heavy answers per second and their statuses, for the phases that have heavy work. */
  readonly heavyRps: number;
  readonly heavyStatuses: Readonly<Record<string, number>>;
}

export interface NeighbourResults {
  readonly durationSeconds: number;
  readonly pacePerSecond: number;
  readonly phases: readonly NeighbourPhase[];
}

export const auth = (name: string) => ({
  authorization: `Basic ${Buffer.from(`${name}:${PASSWORD}`).toString('base64')}`,
});

export async function post(url: string, user: string, name: string, songIds: number[]): Promise<Response> {
  return fetch(`${url}/v3/playlist`, {
    method: 'POST',
    headers: { ...auth(user), 'content-type': 'application/json' },
    body: JSON.stringify({ name, songIds }),
  });
}

const manySongs = (offset: number) => Array.from({ length: HEAVY_SONGS }, (_v, i) => 1 + ((i + offset) % 240));

export function percentile(sorted: readonly number[], share: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

/**
 * Small reads at a steady pace for `seconds`, each timed from when it was due (so queueing counts), of the paths in
 * turn. They run on a thread of their own, so that the heavy clients' work on this process's event loop does not
 * count as the service's delay.
 */
const VICTIM = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, paths, seconds, pace, authorization, body, contentType, fresh } = workerData;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A request on a connection of its own, as a load balancer's health check opens one.
const onFreshConnection = (target) =>
  new Promise((resolve, reject) => {
    const request = http.request(target, { agent: false, headers: { authorization } }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode }));
    });
    request.on('error', reject);
    request.end();
  });
(async () => {
  const times = [];
  let failures = 0;
  const pending = [];
  const start = performance.now();
  for (let i = 0; i < seconds * pace; i++) {
    const due = start + (i * 1000) / pace;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const target = url + paths[i % paths.length];
    const sent = fresh
      ? onFreshConnection(target)
      : fetch(target, body === undefined
          ? { headers: { authorization } }
          : { method: 'POST', headers: { authorization, 'content-type': contentType }, body })
          .then(async (response) => { await response.arrayBuffer(); return response; });
    pending.push(
      sent
        .then((response) => {
          if (response.status !== 200) failures++;
          times.push(performance.now() - due);
        })
        .catch(() => { failures++; }),
    );
  }
  await Promise.all(pending);
  parentPort.postMessage({ times, failures });
})();
`;

export interface VictimOptions {
  /** The body's media type when a body is sent; JSON by default. */
  readonly contentType?: string;
  /** Each request on a new connection (GETs only). */
  readonly fresh?: boolean;
}

/**
 * Small GETs of these paths at `pace` a second for `seconds`, as `user` (the paths need no credential otherwise);
 * POSTs of `body` (JSON unless `options` names another type) instead when one is given.
 */
export async function victimLoad(
  url: string,
  paths: readonly string[],
  seconds: number,
  user = 'victim',
  pace = PACE,
  body?: string,
  options: VictimOptions = {},
): Promise<VictimLatency> {
  const worker = new Worker(VICTIM, {
    eval: true,
    workerData: {
      url,
      paths,
      seconds,
      pace,
      authorization: auth(user).authorization,
      body,
      contentType: options.contentType ?? 'application/json',
      fresh: options.fresh === true,
    },
  });
  const { times, failures } = await new Promise<{ times: number[]; failures: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    requests: times.length,
    failures,
    p50: round(percentile(times, 0.5)),
    p99: round(percentile(times, 0.99)),
    max: round(times.at(-1) ?? 0),
  };
}

/**
 * The service's event-loop delay as its load shedding sees it: every 500 ms, the mean delay since the last look
 * (prom-client's `nodejs_eventloop_lag_mean_seconds`, reset at each scrape), less the monitor's 10 ms resolution.
 * `stop()` ends the sampling and gives the samples' median and largest, in milliseconds.
 */
export function sampleLoopDelay(url: string, intervalMs = 500) {
  const samples: number[] = [];
  const state = { running: true };
  const loop = (async () => {
    while (state.running) {
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
      try {
        const text = await (await fetch(`${url}/metrics`)).text();
        const mean = /^nodejs_eventloop_lag_mean_seconds (\S+)$/m.exec(text)?.[1];
        if (mean !== undefined) samples.push(Math.max(0, Number(mean) * 1000 - 10));
      } catch {
        // A scrape that failed is no sample.
      }
    }
  })();
  return async () => {
    state.running = false;
    await loop;
    samples.sort((a, b) => a - b);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return { p50: round(percentile(samples, 0.5)), max: round(samples.at(-1) ?? 0), samples: samples.length };
  };
}

/** `connections` loops sending `request` until `stop()`; answers per second and statuses. */
export async function heavyLoad(connections: number, seconds: number, request: (n: number) => Promise<Response>) {
  const statuses: Record<string, number> = {};
  let answers = 0;
  const until = performance.now() + seconds * 1000;
  const loop = async (c: number) => {
    for (let n = 0; performance.now() < until; n++) {
      try {
        const response = await request(c * 1_000_000 + n);
        await response.arrayBuffer();
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        answers++;
      } catch (error) {
        const code = (error as { cause?: { code?: string } }).cause?.code ?? 'error';
        statuses[code] = (statuses[code] ?? 0) + 1;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, (_v, c) => loop(c)));
  return { heavyRps: Math.round(answers / ((performance.now() - started) / 1000)), heavyStatuses: statuses };
}

/** The id of a playlist a create answered; throws on any other answer. */
export async function idOf(response: Response): Promise<number> {
  if (response.status !== 200) throw new Error(`create: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: number }).id;
}

/**
 * A hostile scenario's set-up: a database of its own (`newDatabase`), these users, the built service on CPU 0 with
 * its log in `logDir`, this process on CPU 1; `work` gets the service's URL. Everything is stopped and dropped after.
 */
export async function withHostileService<T>(
  scenario: string,
  dialect: 'sqlite' | 'postgres',
  pgUrl: string,
  logDir: string,
  users: readonly string[],
  work: (url: string) => Promise<T>,
): Promise<T> {
  const { newDatabase } = await import('./hostile-search.js');
  const database = await newDatabase(dialect, pgUrl, scenario);
  try {
    for (const name of users) addUser(database.url, name);
    mkdirSync(logDir, { recursive: true });
    const service = await startService({
      databaseUrl: database.url,
      logFile: join(logDir, `service-${scenario}-${dialect}.log`),
      settings: { LOG_LEVEL: 'info', MIXTAPE_PLAYLISTS_PER_USER: '1000000' },
      profile: false,
      cpu: 0,
    });
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    try {
      return await work(service.url);
    } finally {
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

export function addUser(databaseUrl: string, name: string): void {
  const result = spawnSync(process.execPath, ['dist/cli.js', 'user', 'add', name, '--password-stdin'], {
    cwd: ROOT,
    input: `${PASSWORD}\n`,
    env: serviceEnvironment(process.env, { DATABASE_URL: databaseUrl }),
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`mixtape user add ${name} failed: ${result.stderr}`);
}

/** Runs the three phases on a service of its own, on a new SQLite database; the service must be built (dist/). */
export async function measureNeighbours(durationSeconds: number, logDir: string): Promise<NeighbourResults> {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-neighbours-'));
  const databaseUrl = `sqlite:${join(dir, 'mixtape.db')}`;
  try {
    for (const name of ['victim', 'lister', 'creator']) addUser(databaseUrl, name);
    mkdirSync(logDir, { recursive: true });
    const service = await startService({
      databaseUrl,
      logFile: join(logDir, 'service-neighbours.log'),
      settings: { LOG_LEVEL: 'info', MIXTAPE_PLAYLISTS_PER_USER: '1000000' },
      profile: false,
      // The service on one core, every client on the other: the clients' own work must not count as its delay.
      cpu: 0,
    });
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    try {
      const { url } = service;
      for (let i = 0; i < HEAVY_PLAYLISTS; i++) {
        const response = await post(url, 'lister', `long ${i}`, manySongs(i));
        if (response.status !== 200) throw new Error(`creating a long playlist: ${response.status}`);
        await response.arrayBuffer();
      }
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const response = await post(url, 'victim', `short ${i}`, manySongs(i).slice(0, 10));
        ids.push(`/v3/playlist/${((await response.json()) as { id: number }).id}`);
      }

      const phases: NeighbourPhase[] = [];
      const quiet = await victimLoad(url, ids, durationSeconds);
      phases.push({ name: 'quiet', description: 'nobody else', victim: quiet, heavyRps: 0, heavyStatuses: {} });

      const [listing, lists] = await Promise.all([
        victimLoad(url, ids, durationSeconds),
        heavyLoad(8, durationSeconds, () => fetch(`${url}/v3/playlist?limit=100`, { headers: auth('lister') })),
      ]);
      phases.push({
        name: 'heavy-lists',
        description: '8 connections listing 100 playlists of 1000 songs',
        victim: listing,
        ...lists,
      });

      const [creating, creates] = await Promise.all([
        victimLoad(url, ids, durationSeconds),
        heavyLoad(64, durationSeconds, (n) => post(url, 'creator', `bulk ${n}`, manySongs(n))),
      ]);
      phases.push({
        name: 'heavy-creates',
        description: '64 connections creating playlists of 1000 songs',
        victim: creating,
        ...creates,
      });
      return { durationSeconds, pacePerSecond: PACE, phases };
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function formatNeighbours(results: NeighbourResults): string {
  const [quiet] = results.phases;
  const lines = [
    `Noisy neighbours: another user's GET of a 10-song playlist at ${results.pacePerSecond}/s (ms from when it was due)`,
    '| phase | victim p50 | victim p99 | victim max | p99 / quiet p99 | heavy answers/s | heavy statuses |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const phase of results.phases) {
    const ratio = quiet === undefined || quiet.victim.p99 === 0 ? '' : (phase.victim.p99 / quiet.victim.p99).toFixed(1);
    lines.push(
      `| ${phase.description} | ${phase.victim.p50} | ${phase.victim.p99} | ${phase.victim.max} | ${ratio} | ${phase.heavyRps} | ${JSON.stringify(phase.heavyStatuses)} |`,
    );
  }
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('neighbours.ts') === true) {
  const at = process.argv.indexOf('--duration');
  const duration = at > 0 ? Number(process.argv[at + 1]) : 10;
  measureNeighbours(duration, join(ROOT, 'bench', 'data'))
    .then((results) => {
      console.log(formatNeighbours(results));
    })
    .catch((error: unknown) => {
      console.error('bench:', error);
      process.exitCode = 1;
    });
}
