/**
 * Live changes (docs/api.md): how soon a change reaches those waiting for it, and what many open streams cost the
 * service. On a database of its own, with the built service (`node dist/cli.js serve`, `npm run build` first) as
 * processes of their own on CPU 0 and this process on CPU 1:
 *
 * 1. one instance: `--n` times, a long poll (`GET /v3/changes?since=T&wait=30`) waits, and a rename (PATCH) of the
 *    waiting user's playlist is sent once the instance counts the poll among its waiting requests; the time from
 *    the rename's answer to the poll's answer. Then the same with one stream (`/v3/changes/stream?since=now`): from
 *    the rename's answer to the event's arrival.
 * 2. two instances on the one database (PostgreSQL: LISTEN/NOTIFY; SQLite: two processes on one file, which look at
 *    the file's commit counter every 250 ms): the waiter on B, the rename on A.
 * 3. `--streams` open streams (`--users` users, `--streams / --users` each, at most MIXTAPE_WAITS_PER_USER): another
 *    user's GET of a 10-song playlist at 50/s (neighbours.ts's `victimLoad`), the service's event-loop delay, CPU
 *    and memory (its `/metrics`), without streams (the baseline, in the same run), with them open and quiet, while
 *    `--rate` renames a second each wake the streams of one user (each stream must get its user's rename), in the
 *    `--duration` seconds after those, and on PostgreSQL after the connection that LISTENs is ended.
 *
 * `npm run bench:live -- --dialect sqlite|postgres [--n 200] [--streams 10000] [--users 1000] [--duration 20]
 * [--rate 50] [--pg-url URL] [--out DIR [--tag T]]`; with `--out`, every measured value goes to DIR/live-<dialect>.json
 * (live-<dialect>-T.json with `--tag`).
 * The connection caps (MIXTAPE_MAX_CONNECTIONS 4 096, MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS 256 by default) are set
 * above the number of streams for the run, since every stream comes from 127.0.0.1.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { newDatabase } from './hostile-search.js';
import { addUser, auth, idOf, percentile, post, victimLoad, type VictimLatency } from './neighbours.js';
import { Random } from './random.js';
import { ROOT, startService, type RunningService } from './service.js';
import { runStandalone } from './standalone.js';

type Dialect = 'sqlite' | 'postgres';

/** The long poll's `wait`, and how long this bench waits for its answer before counting it lost. */
const WAIT_SECONDS = 30;
const ANSWER_TIMEOUT_MS = (WAIT_SECONDS + 10) * 1000;
/**
 * How long a stream's event may take before it is counted lost: a stream reads again for about a minute after a
 * wake-up whose change the feed does not list yet (src/live/stream.ts).
 */
const EVENT_TIMEOUT_MS = 65_000;
/** How long a waiting request may take to be counted by the instance (`mixtape_waiting_requests`). */
const SUBSCRIBE_TIMEOUT_MS = 5_000;
/** Bounds of the set-up of phase 3. */
const OPEN_CONCURRENCY = 100;
const OPEN_BUDGET_MS = 300_000;
const STREAM_OPEN_TIMEOUT_MS = 60_000;
const SIGN_IN_CONCURRENCY = 4;
const SIGN_IN_BUDGET_MS = 600_000;
/** After the last rename of phase 3, how long the streams may take to get theirs. */
const BROADCAST_GRACE_MS = 15_000;
/** The service's default; streams per user above it displace the user's oldest. */
const WAITS_PER_USER = 10;
/** prom-client's event-loop monitor samples every 10 ms: that much of each figure is its resolution. */
const MONITOR_RESOLUTION_MS = 10;

const arg = (name: string): string | undefined => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const numberArg = (name: string, fallback: number): number => {
  const value = Number(arg(name) ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number above 0`);
  return value;
};

const round = (ms: number) => Math.round(ms * 100) / 100;

export interface Latencies {
  /** Deliveries measured (each one a change listed in the answer or event). */
  readonly n: number;
  /** Waits answered without the change, or never answered, within the bounds. */
  readonly lost: number;
  /** Answers that were not 200, and requests that failed. */
  readonly failures: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly min: number;
  /** Deliveries later than 1 s. */
  readonly over1s: number;
  /**
   * Waits answered, or events sent, with only an earlier version of the playlist (a change listed late), and long polls
   * answered before the rename with such a change.
   */
  readonly stale: number;
  /** Every delivery in ms, in the order measured. */
  readonly values: readonly number[];
  readonly notes: readonly string[];
}

function latencies(values: number[], lost: number, failures: number, notes: string[], stale = 0): Latencies {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: values.length,
    lost,
    failures,
    p50: round(percentile(sorted, 0.5)),
    p99: round(percentile(sorted, 0.99)),
    max: round(sorted.at(-1) ?? 0),
    min: round(sorted[0] ?? 0),
    over1s: values.filter((value) => value > 1000).length,
    stale,
    values: values.map(round),
    notes: notes.slice(0, 20),
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// HTTP, timed when the answer's last byte arrives

interface Answer {
  readonly status: number;
  readonly body: string;
  /** performance.now() when the answer had arrived in full. */
  readonly at: number;
}

function send(
  agent: http.Agent,
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
  timeoutMs = 30_000,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${base}${path}`,
      {
        method,
        agent,
        headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            at: performance.now(),
          });
        });
        response.on('error', reject);
      },
    );
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

function rename(agent: http.Agent, base: string, user: string, playlistId: number, name: string): Promise<Answer> {
  return send(
    agent,
    base,
    'PATCH',
    `/v3/playlist/${playlistId}`,
    { ...auth(user), 'content-type': 'application/merge-patch+json' },
    JSON.stringify({ name }),
  );
}

interface Page {
  readonly changes: readonly { readonly id: number; readonly version?: number }[];
  readonly next: string;
  readonly more: boolean;
}

/** Whether the page lists the playlist at `version` or later (any version of it, without one). */
const lists = (page: Page, playlistId: number, version = 0) =>
  page.changes.some((change) => change.id === playlistId && (change.version ?? 0) >= version);

/** The version a write answered (the playlist's `version`), or the one after `previous` when it says none. */
function versionOf(answer: Answer, previous: number): number {
  try {
    const version = (JSON.parse(answer.body) as { version?: unknown }).version;
    if (typeof version === 'number') return version;
  } catch {
    // Not JSON: counted on.
  }
  return previous + 1;
}

// ---------------------------------------------------------------------------------------------------------------------
// A stream of server-sent events, read as it arrives

interface StreamEvent {
  readonly name: string;
  readonly data: string;
  /** performance.now() when the event's last line had arrived. */
  readonly at: number;
}

class EventStream {
  status = 0;
  /** What a refused stream answered. */
  refusal = '';
  /** Resolves true at the first comment or event of a stream that opened, false otherwise. */
  readonly ready: Promise<boolean>;
  readonly events: StreamEvent[] = [];
  pings = 0;
  /** The service ended the stream, or the connection failed, before `close()`. */
  endedEarly = false;
  error: string | undefined;
  #read = 0;
  #buffer = '';
  #closed = false;
  #wanted: (() => void) | undefined;
  readonly #request: http.ClientRequest;

  constructor(base: string, path: string, headers: Record<string, string>, openTimeoutMs = STREAM_OPEN_TIMEOUT_MS) {
    let settle: (ok: boolean) => void = () => undefined;
    this.ready = new Promise((resolve) => {
      let done = false;
      settle = (ok) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(ok);
      };
    });
    const timer = setTimeout(() => {
      this.error ??= `not open within ${openTimeoutMs} ms`;
      settle(false);
      this.#request.destroy();
    }, openTimeoutMs);
    this.#request = http.request(`${base}${path}`, { agent: false, headers }, (response) => {
      this.status = response.statusCode ?? 0;
      response.setEncoding('utf8');
      if (this.status !== 200) {
        response.on('data', (chunk: string) => (this.refusal += chunk));
        response.on('end', () => {
          settle(false);
        });
        return;
      }
      response.on('data', (chunk: string) => {
        this.#buffer += chunk;
        let end: number;
        while ((end = this.#buffer.indexOf('\n\n')) >= 0) {
          const block = this.#buffer.slice(0, end);
          this.#buffer = this.#buffer.slice(end + 2);
          this.#take(block);
          settle(true);
        }
      });
      response.on('close', () => {
        if (!this.#closed) this.endedEarly = true;
        settle(false);
        this.#wanted?.();
      });
    });
    this.#request.on('error', (error) => {
      if (!this.#closed) {
        this.error ??= error.message;
        this.endedEarly = true;
      }
      settle(false);
      this.#wanted?.();
    });
    this.#request.end();
  }

  #take(block: string): void {
    const at = performance.now();
    let name = '';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        if (line.startsWith(': ping')) this.pings++;
      } else if (line.startsWith('event: ')) name = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (name === '') return;
    this.events.push({ name, data: data.join('\n'), at });
    this.#wanted?.();
  }

  /** The next event not yet taken, or undefined after `timeoutMs` or once the stream has ended. */
  async next(timeoutMs: number): Promise<StreamEvent | undefined> {
    const until = performance.now() + timeoutMs;
    while (this.#read >= this.events.length) {
      const left = until - performance.now();
      if (left <= 0 || this.endedEarly || this.#closed) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wanted = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wanted = undefined;
    }
    return this.events[this.#read++];
  }

  close(): void {
    this.#closed = true;
    this.#request.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The service's own figures

async function metrics(base: string): Promise<string> {
  const response = await fetch(`${base}/metrics`);
  return response.text();
}

function metric(text: string, name: string): number | undefined {
  const found = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
  return found === undefined ? undefined : Number(found);
}

async function waitingRequests(base: string): Promise<number> {
  return metric(await metrics(base), 'mixtape_waiting_requests') ?? -1;
}

/** Until the instance counts at least `count` waiting requests (true), or `timeoutMs` passes (false). */
async function untilWaiting(base: string, count: number, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    if ((await waitingRequests(base)) >= count) return true;
    await sleep(5);
  }
  return false;
}

export interface LoopDelay {
  /** Scrapes of `/metrics` in the window, one a second; each covers the time since the one before. */
  readonly samples: number;
  /** The mean of the scrapes' means, the largest of their p99s and of their maxima, less the monitor's 10 ms. */
  readonly mean: number;
  readonly p99: number;
  readonly max: number;
}

export interface Memory {
  readonly rssMb: number;
  readonly heapUsedMb: number;
  readonly waiting: number;
  readonly cpuSeconds: number;
}

async function memory(base: string): Promise<Memory> {
  const text = await metrics(base);
  const mb = (bytes: number | undefined) => Math.round(((bytes ?? 0) / 1024 / 1024) * 10) / 10;
  return {
    rssMb: mb(metric(text, 'process_resident_memory_bytes')),
    heapUsedMb: mb(metric(text, 'nodejs_heap_size_used_bytes')),
    waiting: metric(text, 'mixtape_waiting_requests') ?? -1,
    cpuSeconds: metric(text, 'process_cpu_seconds_total') ?? 0,
  };
}

/**
 * The service's event-loop delay as prom-client's default metrics give it (`nodejs_eventloop_lag_*_seconds`, the
 * histogram reset at each scrape): scraped every second until `stop()`.
 */
function sampleLoop(base: string) {
  const means: number[] = [];
  const p99s: number[] = [];
  const maxes: number[] = [];
  const state = { running: true };
  const ms = (seconds: number | undefined) => Math.max(0, (seconds ?? 0) * 1000 - MONITOR_RESOLUTION_MS);
  const loop = (async () => {
    await metrics(base).catch(() => ''); // resets the histogram: the window starts now
    while (state.running) {
      await sleep(1000);
      try {
        const text = await metrics(base);
        means.push(ms(metric(text, 'nodejs_eventloop_lag_mean_seconds')));
        p99s.push(ms(metric(text, 'nodejs_eventloop_lag_p99_seconds')));
        maxes.push(ms(metric(text, 'nodejs_eventloop_lag_max_seconds')));
      } catch {
        // A scrape that failed is no sample.
      }
    }
  })();
  return async (): Promise<LoopDelay> => {
    state.running = false;
    await loop;
    const mean = means.length === 0 ? 0 : means.reduce((a, b) => a + b, 0) / means.length;
    return {
      samples: means.length,
      mean: round(mean),
      p99: round(Math.max(0, ...p99s)),
      max: round(Math.max(0, ...maxes)),
    };
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Phases 1 and 2: one waiter, one writer

/** The state of the one playlist that phases 1 and 2 rename: its version, counted on by every rename. */
interface Renamed {
  readonly user: string;
  readonly playlistId: number;
  version: number;
}

/** Losses after which a case stops: each costs up to a wait's length. */
const MAX_LOST = 5;

/**
 * `n` long polls on `waiterBase`, each answered by a rename on `writerBase` sent once the waiter's instance counts it
 * as waiting, after a random pause of up to 250 ms (so that the renames fall anywhere in SQLite's 250 ms look). A poll
 * answered with only an earlier version is polled again (once): the delivery counts from the rename's answer to the
 * answer that lists it.
 */
async function pollDeliveries(
  writerBase: string,
  waiterBase: string,
  target: Renamed,
  n: number,
  random: Random,
  budgetMs: number,
): Promise<Latencies> {
  const { user, playlistId } = target;
  const waiterAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const writerAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const values: number[] = [];
  const notes: string[] = [];
  let lost = 0;
  let stale = 0;
  let failures = 0;
  const until = performance.now() + budgetMs;
  const poll = (token: string) =>
    send(
      waiterAgent,
      waiterBase,
      'GET',
      `/v3/changes?since=${encodeURIComponent(token)}&wait=${WAIT_SECONDS}`,
      auth(user),
      undefined,
      ANSWER_TIMEOUT_MS,
    ).catch((error: unknown) => error as Error);
  try {
    const first = await send(waiterAgent, waiterBase, 'GET', '/v3/changes?since=now', auth(user));
    if (first.status !== 200) throw new Error(`GET /v3/changes?since=now: ${first.status} ${first.body}`);
    let token = (JSON.parse(first.body) as Page).next;
    for (let i = 0, tries = 0; i < n && tries < 2 * n && lost < MAX_LOST && performance.now() < until; tries++) {
      let waiting = poll(token);
      const counted = untilWaiting(waiterBase, 1, SUBSCRIBE_TIMEOUT_MS).then((yes) =>
        yes ? 'waiting' : 'not counted',
      );
      const first = await Promise.race([waiting.then(() => 'answered' as const), counted]);
      if (first !== 'waiting') {
        // Answered before any rename: a change listed late (or the poll failed). Taken, and tried again.
        const answer = await waiting;
        if (answer instanceof Error || answer.status !== 200) {
          failures++;
          notes.push(`#${i}: poll before the rename: ${answer instanceof Error ? answer.message : answer.status}`);
          const again = await send(waiterAgent, waiterBase, 'GET', '/v3/changes?since=now', auth(user));
          token = (JSON.parse(again.body) as Page).next;
          continue;
        }
        const page = JSON.parse(answer.body) as Page;
        token = page.next;
        stale++;
        notes.push(`#${i}: answered before the rename with ${JSON.stringify(page.changes).slice(0, 160)}`);
        continue;
      }
      await sleep(random.int(250));
      const written = await rename(writerAgent, writerBase, user, playlistId, `live ${i}`);
      if (written.status !== 200) {
        failures++;
        notes.push(`#${i}: rename ${written.status} ${written.body.slice(0, 200)}`);
        await waiting;
        continue;
      }
      const version = (target.version = versionOf(written, target.version));
      i++;
      let delivered: number | undefined;
      for (let polls = 0; polls < 2 && delivered === undefined; polls++) {
        if (polls > 0) waiting = poll(token);
        const answer = await waiting;
        if (answer instanceof Error || answer.status !== 200) {
          failures++;
          notes.push(`#${i - 1}: poll ${answer instanceof Error ? answer.message : `${answer.status} ${answer.body}`}`);
          const again = await send(waiterAgent, waiterBase, 'GET', '/v3/changes?since=now', auth(user));
          token = (JSON.parse(again.body) as Page).next;
          break;
        }
        const page = JSON.parse(answer.body) as Page;
        token = page.next;
        const after = round(answer.at - written.at);
        if (lists(page, playlistId, version)) delivered = answer.at;
        else if (lists(page, playlistId)) {
          stale++;
          notes.push(`#${i - 1}: answered ${after} ms after the rename with an earlier version only`);
        } else notes.push(`#${i - 1}: answered ${after} ms after the rename without it`);
      }
      if (delivered === undefined) lost++;
      else values.push(delivered - written.at);
    }
  } finally {
    waiterAgent.destroy();
    writerAgent.destroy();
  }
  return latencies(values, lost, failures, notes, stale);
}

/** `n` renames on `writerBase` while one stream on `waiterBase` is open: from each rename's answer to its event. */
async function streamDeliveries(
  writerBase: string,
  waiterBase: string,
  target: Renamed,
  n: number,
  random: Random,
  budgetMs: number,
): Promise<Latencies> {
  const { user, playlistId } = target;
  const writerAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const values: number[] = [];
  const notes: string[] = [];
  let lost = 0;
  let stale = 0;
  let failures = 0;
  const until = performance.now() + budgetMs;
  const stream = new EventStream(waiterBase, '/v3/changes/stream?since=now', auth(user));
  try {
    if (!(await stream.ready)) throw new Error(`the stream did not open: ${stream.status} ${stream.refusal}`);
    for (let i = 0; i < n && lost < MAX_LOST && performance.now() < until; i++) {
      await sleep(random.int(250));
      // An event that came since the last rename's is a change listed late, or a repeat.
      for (let early = await stream.next(0); early !== undefined; early = await stream.next(0)) {
        stale++;
        notes.push(`#${i}: an event before the rename: ${early.data.slice(0, 160)}`);
      }
      const written = await rename(writerAgent, writerBase, user, playlistId, `stream ${i}`);
      if (written.status !== 200) {
        failures++;
        notes.push(`#${i}: rename ${written.status} ${written.body.slice(0, 200)}`);
        continue;
      }
      const version = (target.version = versionOf(written, target.version));
      const deadline = performance.now() + EVENT_TIMEOUT_MS;
      let delivered: number | undefined;
      while (delivered === undefined && performance.now() < deadline) {
        const event = await stream.next(deadline - performance.now());
        if (event === undefined) break;
        if (event.name === 'changes' && lists(JSON.parse(event.data) as Page, playlistId, version))
          delivered = event.at;
        else {
          stale++;
          notes.push(`#${i}: event ${event.name} without this version: ${event.data.slice(0, 160)}`);
        }
      }
      if (delivered === undefined) {
        lost++;
        notes.push(`#${i}: no event within ${EVENT_TIMEOUT_MS} ms${stream.endedEarly ? ' (the stream ended)' : ''}`);
        if (stream.endedEarly) break;
        continue;
      }
      values.push(delivered - written.at);
    }
  } finally {
    stream.close();
    writerAgent.destroy();
  }
  return latencies(values, lost, failures, notes, stale);
}

// ---------------------------------------------------------------------------------------------------------------------
// Phase 3: many streams

/** Runs `task(i)` for i < count, `concurrency` at a time, starting none after `deadline` (performance.now()). */
async function inPool(
  count: number,
  concurrency: number,
  deadline: number,
  task: (i: number) => Promise<void>,
): Promise<number> {
  let nextIndex = 0;
  let started = 0;
  const worker = async () => {
    while (nextIndex < count && performance.now() < deadline) {
      const i = nextIndex++;
      started++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return started;
}

/** Raises this process's soft limit of open files to `needed` (within the hard limit); answers the limit now. */
function raiseOpenFiles(needed: number): number {
  const read = () =>
    execFileSync('prlimit', ['--pid', String(process.pid), '--nofile', '--noheadings', '--output', 'SOFT,HARD'], {
      encoding: 'utf8',
    })
      .trim()
      .split(/\s+/)
      .map((value) => (value === 'unlimited' ? Infinity : Number(value)));
  const [soft = 0, hard = 0] = read();
  if (soft >= needed) return soft;
  const target = Math.min(needed, hard);
  execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${target}:${hard}`]);
  return read()[0] ?? soft;
}

export interface ManyStreams {
  readonly users: number;
  readonly streamsAsked: number;
  readonly streamsOpen: number;
  readonly openSeconds: number;
  /** Statuses and errors of the streams that did not open. */
  readonly refused: Readonly<Record<string, number>>;
  readonly refusals: readonly string[];
  readonly openFilesLimit: number;
  readonly phases: readonly {
    readonly description: string;
    readonly reader: VictimLatency;
    readonly loop: LoopDelay;
    readonly memory: Memory;
    /** The machine's load average over the last minute, at the phase's end. */
    readonly load: number;
    /** The service's CPU time in the phase (`process_cpu_seconds_total`), in % of one core. */
    readonly cpuPercent: number;
    /** The phase's span, in ms since the epoch, as the service's log times its lines. */
    readonly from: number;
    readonly to: number;
    /**
     * The reader's GETs as the service timed them (its request log's `ms`, from the request's arrival to its answer),
     * filled in from the log once the service has stopped.
     */
    inService?: { readonly n: number; readonly p50: number; readonly p99: number; readonly max: number };
  }[];
  /** The path the reader GETs. */
  readonly readerPath: string;
  /** Bytes of resident memory per open stream: (with streams − before) / streams. */
  readonly rssKbPerStream: number;
  readonly heapKbPerStream: number;
  /** Each stream's delivery of its user's rename, from the rename's answer. */
  readonly broadcast: Latencies & { readonly renames: number; readonly renameFailures: number };
  /** Streams that ended before the bench closed them, and pings seen. */
  readonly endedEarly: number;
  readonly pings: number;
  /** After the bench closed every stream: the instance's waiting requests (should be 0) and its memory. */
  readonly afterClose: Memory & { readonly secondsToZero: number | undefined };
}

const duration = (seconds: number) => `${seconds} s`;

async function manyStreams(
  dialect: Dialect,
  base: string,
  databaseUrl: string,
  streams: number,
  userCount: number,
  durationSeconds: number,
  rate: number,
  openFilesLimit: number,
): Promise<ManyStreams> {
  const perUser = Math.ceil(streams / userCount);
  if (perUser > WAITS_PER_USER) throw new Error(`${perUser} streams a user is above MIXTAPE_WAITS_PER_USER`);
  const digits = String(userCount).length;
  const names = Array.from({ length: userCount }, (_v, i) => `stream-${String(i).padStart(digits, '0')}`);

  // One user by the command line, the others with the same password's hash (bench/dataset.ts hashes once, too).
  addUser(databaseUrl, names[0]!);
  addUser(databaseUrl, 'reader');
  const db = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
  try {
    const template = await db.kysely
      .selectFrom('users')
      .select(['password_hash', 'created_at'])
      .where('name', '=', names[0]!)
      .executeTakeFirstOrThrow();
    for (let start = 1; start < names.length; start += 500) {
      const rows = names.slice(start, start + 500).map((name) => ({ name, ...template }));
      await db.kysely.insertInto('users').values(rows).execute();
    }
  } finally {
    await db.close();
  }

  // A playlist each, which also signs each user in once (the scrypt hash is then cached by the service).
  const playlists = new Map<string, number>();
  const signInErrors: string[] = [];
  await inPool(names.length, SIGN_IN_CONCURRENCY, performance.now() + SIGN_IN_BUDGET_MS, async (i) => {
    const name = names[i]!;
    for (let attempt = 0; attempt < 20; attempt++) {
      const response = await post(base, name, `mine ${name}`, [1, 2, 3]);
      if (response.status === 200) {
        playlists.set(name, await idOf(response));
        return;
      }
      const text = await response.text();
      if (response.status !== 503 && response.status !== 429) {
        signInErrors.push(`${name}: ${response.status} ${text.slice(0, 200)}`);
        return;
      }
      await sleep(250 * (attempt + 1));
    }
    signInErrors.push(`${name}: no playlist after 20 attempts`);
  });
  if (playlists.size < names.length)
    throw new Error(
      `only ${playlists.size} of ${names.length} users signed in: ${signInErrors.slice(0, 5).join('; ')}`,
    );
  const readerPlaylist = await idOf(await post(base, 'reader', 'ten', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
  const readerPaths = [`/v3/playlist/${readerPlaylist}`];

  const phases: ManyStreams['phases'][number][] = [];
  const measure = async (description: string, alongside?: () => Promise<void>) => {
    const before = await memory(base);
    const started = performance.now();
    const from = Date.now();
    const stop = sampleLoop(base);
    const [reader] = await Promise.all([
      victimLoad(base, readerPaths, durationSeconds, 'reader', 50),
      alongside?.() ?? Promise.resolve(),
    ]);
    const loop = await stop();
    const after = await memory(base);
    const cpuPercent = Math.round(((after.cpuSeconds - before.cpuSeconds) * 100_000) / (performance.now() - started));
    const load = round(loadavg()[0]!);
    const phase = { description, reader, loop, memory: after, load, cpuPercent, from, to: Date.now() };
    phases.push(phase);
    console.error(`  ${description}: ${JSON.stringify(phase)}`);
    return phase;
  };

  // The reader's route warmed up first (its first requests compile the route's code), not counted.
  await victimLoad(base, readerPaths, 3, 'reader', 50);
  const baseline = await measure('no streams open');

  // The streams, `perUser` for each user, the users' streams interleaved.
  const open: { stream: EventStream; user: string }[] = [];
  const refused: Record<string, number> = {};
  const refusals: string[] = [];
  const openStarted = performance.now();
  await inPool(streams, OPEN_CONCURRENCY, performance.now() + OPEN_BUDGET_MS, async (i) => {
    const user = names[i % names.length]!;
    const stream = new EventStream(base, '/v3/changes/stream?since=now', auth(user));
    if (await stream.ready) {
      open.push({ stream, user });
      return;
    }
    const key = stream.status === 0 ? (stream.error ?? 'error') : String(stream.status);
    refused[key] = (refused[key] ?? 0) + 1;
    if (refusals.length < 10) refusals.push(`${key} ${stream.refusal.slice(0, 200)}`);
    stream.close();
  });
  const openSeconds = round((performance.now() - openStarted) / 1000);
  console.error(`  ${open.length} streams open in ${openSeconds} s; refused ${JSON.stringify(refused)}`);
  await sleep(2000);

  const quiet = await measure(`${open.length} streams open, quiet`);

  // Each user's playlist renamed once, `rate` a second, by its user: each of its streams must get it.
  const renamed = new Map<string, { sent: number; answered: number | undefined }>();
  let renameFailures = 0;
  const renameNotes: string[] = [];
  const writerAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const broadcast = async () => {
    const started = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < names.length; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const user = names[i]!;
      const entry = { sent: performance.now(), answered: undefined as number | undefined };
      renamed.set(user, entry);
      pending.push(
        rename(writerAgent, base, user, playlists.get(user)!, `renamed ${user}`).then(
          (answer) => {
            if (answer.status === 200) entry.answered = answer.at;
            else {
              renameFailures++;
              if (renameNotes.length < 10) renameNotes.push(`${user}: ${answer.status} ${answer.body.slice(0, 200)}`);
            }
          },
          (error: unknown) => {
            renameFailures++;
            if (renameNotes.length < 10) renameNotes.push(`${user}: ${(error as Error).message}`);
          },
        ),
      );
    }
    await Promise.all(pending);
  };
  await measure(`${open.length} streams open, ${rate} renames/s each waking ${perUser} streams`, broadcast);
  writerAgent.destroy();

  // Every stream whose user's rename was answered should have its event by now, or within the grace.
  const found = new Map<EventStream, StreamEvent>();
  const delivered = (entry: { stream: EventStream; user: string }) => {
    let event = found.get(entry.stream);
    if (event !== undefined) return event;
    event = entry.stream.events.find(
      (candidate) =>
        candidate.name === 'changes' && lists(JSON.parse(candidate.data) as Page, playlists.get(entry.user)!, 2),
    );
    if (event !== undefined) found.set(entry.stream, event);
    return event;
  };
  const graceUntil = performance.now() + BROADCAST_GRACE_MS;
  while (performance.now() < graceUntil) {
    if (open.every((entry) => renamed.get(entry.user)?.answered === undefined || delivered(entry) !== undefined)) break;
    await sleep(100);
  }
  const values: number[] = [];
  const notes: string[] = [...renameNotes];
  let lost = 0;
  for (const entry of open) {
    const answeredAt = renamed.get(entry.user)?.answered;
    if (answeredAt === undefined) continue;
    const event = delivered(entry);
    if (event === undefined) {
      lost++;
      if (notes.length < 20)
        notes.push(
          `${entry.user}: no event for its rename (${entry.stream.events.length} events, ended early: ` +
            `${entry.stream.endedEarly}${entry.stream.error === undefined ? '' : `, ${entry.stream.error}`})`,
        );
    } else values.push(event.at - answeredAt);
  }
  const extraEvents = open.reduce(
    (sum, entry) => sum + entry.stream.events.filter((event) => event.name === 'changes').length,
    0,
  );
  if (extraEvents > values.length) notes.push(`${extraEvents - values.length} more 'changes' events than renames`);

  // What the renames leave behind, with no more writes.
  await measure(`${open.length} streams open, the ${duration(durationSeconds)} after the renames`);

  // PostgreSQL: the connection that LISTENs dropped (a restart, a failover, a proxy's idle timeout): it comes back.
  if (dialect === 'postgres') {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
         WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
      );
      for (const row of rows) await client.query('SELECT pg_terminate_backend($1)', [row.pid]);
      console.error(`  terminated ${rows.length} LISTEN connection(s)`);
    } finally {
      await client.end();
    }
    await measure(`${open.length} streams open, the ${duration(durationSeconds)} after the LISTEN connection dropped`);
  }

  const endedEarly = open.filter((entry) => entry.stream.endedEarly).length;
  const pings = open.reduce((sum, entry) => sum + entry.stream.pings, 0);
  for (const entry of open) entry.stream.close();

  // The instance should forget every stream once its connection closes.
  const closedAt = performance.now();
  let secondsToZero: number | undefined;
  while (performance.now() - closedAt < 30_000) {
    if ((await waitingRequests(base)) === 0) {
      secondsToZero = round((performance.now() - closedAt) / 1000);
      break;
    }
    await sleep(250);
  }
  const after = await memory(base);

  const perStream = (a: number, b: number) => (open.length === 0 ? 0 : round(((a - b) * 1024) / open.length));
  return {
    users: userCount,
    readerPath: readerPaths[0]!,
    streamsAsked: streams,
    streamsOpen: open.length,
    openSeconds,
    refused,
    refusals,
    openFilesLimit,
    phases,
    rssKbPerStream: perStream(quiet.memory.rssMb, baseline.memory.rssMb),
    heapKbPerStream: perStream(quiet.memory.heapUsedMb, baseline.memory.heapUsedMb),
    broadcast: {
      ...latencies(values, lost, 0, notes),
      renames: [...renamed.values()].filter((entry) => entry.answered !== undefined).length,
      renameFailures,
    },
    endedEarly,
    pings,
    afterClose: { ...after, secondsToZero },
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The run

export interface LiveResults {
  readonly dialect: Dialect;
  readonly startedAt: string;
  /** The checkout measured (`git rev-parse --short HEAD`) and its files under src/ changed from it. */
  readonly commit: string;
  readonly srcChanges: readonly string[];
  readonly cpus: number;
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
  readonly settings: Readonly<Record<string, string>>;
  readonly delivery: readonly {
    readonly description: string;
    readonly loadBefore: number;
    readonly latency: Latencies;
  }[];
  readonly many: ManyStreams;
  /** The services' log lines at warn and above, by message. */
  readonly serviceWarnings: Readonly<Record<string, number>>;
}

/** Fills in each phase's `inService`: the reader's GETs answered within it, as the service's request log timed them. */
function readerInService(file: string, many: ManyStreams): void {
  const lines: { time: number; ms: number }[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"msg":"request"') || !line.includes(`"url":"${many.readerPath}"`)) continue;
    const entry = JSON.parse(line) as { time: number; ms: number; method: string };
    if (entry.method === 'GET') lines.push(entry);
  }
  for (const phase of many.phases) {
    const times = lines
      .filter((line) => line.time >= phase.from && line.time <= phase.to)
      .map((line) => line.ms)
      .sort((a, b) => a - b);
    phase.inService = {
      n: times.length,
      p50: round(percentile(times, 0.5)),
      p99: round(percentile(times, 0.99)),
      max: round(times.at(-1) ?? 0),
    };
  }
}

/** The lines of the services' logs at warn (40) or above, counted by level and message. */
function warnings(files: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line) as { level?: number; msg?: string };
        if ((entry.level ?? 0) < 40) continue;
        const key = `${entry.level} ${entry.msg ?? ''}`;
        counts[key] = (counts[key] ?? 0) + 1;
      } catch {
        // Not a log entry.
      }
    }
  }
  return counts;
}

export async function measureLive(
  dialect: Dialect,
  pgUrl: string,
  durationSeconds: number,
  dataDir: string,
): Promise<LiveResults> {
  const n = numberArg('--n', 200);
  const streams = numberArg('--streams', 10_000);
  const users = numberArg('--users', 1000);
  const rate = numberArg('--rate', 50);
  const out = arg('--out');
  const random = new Random(20261129);
  const cpus = availableParallelism();
  const startedAt = new Date().toISOString();
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const commit = git('rev-parse', '--short', 'HEAD');
  const srcChanges = git('status', '--porcelain', '--', 'src').split('\n').filter(Boolean);
  const loadBefore = loadavg().map((value) => round(value));

  // Each stream is a socket here and one in the service, which inherits this process's limit.
  const openFilesLimit = raiseOpenFiles(streams + 2000);
  if (openFilesLimit < streams + 1000)
    console.error(`!!! open files are limited to ${openFilesLimit}: streams beyond it will fail`);
  const settings = {
    LOG_LEVEL: 'info',
    MIXTAPE_MAX_CONNECTIONS: String(streams + 1000),
    MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS: String(streams + 1000),
  };

  const database = await newDatabase(dialect, pgUrl, 'live');
  const services: RunningService[] = [];
  const logs: string[] = [];
  try {
    mkdirSync(dataDir, { recursive: true });
    const start = async (name: string) => {
      const logFile = join(dataDir, `service-live-${dialect}-${name}.log`);
      logs.push(logFile);
      const service = await startService({ databaseUrl: database.url, logFile, settings, profile: false, cpu: 0 });
      services.push(service);
      return service;
    };
    const a = await start('a');
    const b = await start('b');
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    addUser(database.url, 'owner');
    const target: Renamed = {
      user: 'owner',
      playlistId: await idOf(await post(a.url, 'owner', 'live', [1, 2, 3])),
      version: 1,
    };
    const budgetMs = 600_000;

    const delivery: LiveResults['delivery'][number][] = [];
    const run = async (description: string, measure: () => Promise<Latencies>) => {
      const load = round(loadavg()[0]!);
      const latency = await measure();
      delivery.push({ description, loadBefore: load, latency });
      const { values: _values, ...shown } = latency;
      console.error(`  ${description}: ${JSON.stringify(shown)}`);
    };
    await run('one instance, long poll', () => pollDeliveries(a.url, a.url, target, n, random, budgetMs));
    await run('one instance, stream', () => streamDeliveries(a.url, a.url, target, n, random, budgetMs));
    await run('two instances (write on A, wait on B), long poll', () =>
      pollDeliveries(a.url, b.url, target, n, random, budgetMs),
    );
    await run('two instances (write on A, wait on B), stream', () =>
      streamDeliveries(a.url, b.url, target, n, random, budgetMs),
    );
    await b.stop();
    services.splice(services.indexOf(b), 1);

    const many = await manyStreams(dialect, a.url, database.url, streams, users, durationSeconds, rate, openFilesLimit);
    for (const service of services.splice(0)) await service.stop();
    readerInService(logs[0]!, many);

    const results: LiveResults = {
      dialect,
      startedAt,
      commit,
      srcChanges,
      cpus,
      loadBefore,
      loadAfter: loadavg().map((value) => round(value)),
      settings,
      delivery,
      many,
      serviceWarnings: warnings(logs),
    };
    if (out !== undefined) {
      mkdirSync(out, { recursive: true });
      const tag = arg('--tag');
      const name = tag === undefined ? `live-${dialect}.json` : `live-${dialect}-${tag}.json`;
      writeFileSync(join(out, name), `${JSON.stringify(results, null, 1)}\n`);
    }
    return results;
  } finally {
    for (const service of services) await service.stop().catch(() => undefined);
    await database.drop();
  }
}

export function formatLive(results: LiveResults): string {
  const lines = [
    `Live changes (${results.dialect}) at ${results.commit} (${results.srcChanges.length} files under src/ changed), ` +
      `${results.cpus} CPUs, load ${results.loadBefore.join(' ')} before, ${results.loadAfter.join(' ')} after`,
    '',
    'From the rename\u2019s answer to the waiter\u2019s answer or event, ms:',
    '| case | n | p50 | p99 | max | min | over 1 s | lost | late or early | failed | load (1 min) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const { description, loadBefore, latency: l } of results.delivery)
    lines.push(
      `| ${description} | ${l.n} | ${l.p50} | ${l.p99} | ${l.max} | ${l.min} | ${l.over1s} | ${l.lost} | ${l.stale} | ${l.failures} | ${loadBefore} |`,
    );
  const m = results.many;
  const [base] = m.phases;
  const ratio = (value: number, of: number | undefined) =>
    of === undefined || of === 0 ? '' : (value / of).toFixed(1);
  lines.push(
    '',
    `${m.streamsOpen} of ${m.streamsAsked} streams open (${m.users} users), opened in ${m.openSeconds} s; ` +
      `refused ${JSON.stringify(m.refused)}; open files limit ${m.openFilesLimit}`,
    '| phase | reader GET p50 | p99 | max | p99 / none | failed | in the service: p50 | p99 | loop delay mean | loop p99 | loop max | service CPU % | RSS MB | heap MB | waiting | load (1 min) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const p of m.phases)
    lines.push(
      `| ${p.description} | ${p.reader.p50} | ${p.reader.p99} | ${p.reader.max} | ${ratio(p.reader.p99, base?.reader.p99)} | ` +
        `${p.reader.failures} | ${p.inService?.p50 ?? ''} | ${p.inService?.p99 ?? ''} | ${p.loop.mean} | ${p.loop.p99} | ${p.loop.max} | ${p.cpuPercent} | ${p.memory.rssMb} | ${p.memory.heapUsedMb} | ` +
        `${p.memory.waiting} | ${p.load} |`,
    );
  const b = m.broadcast;
  lines.push(
    '',
    `Per stream: ${m.rssKbPerStream} KB of RSS, ${m.heapKbPerStream} KB of heap.`,
    `Renames: ${b.renames} answered, ${b.renameFailures} failed; deliveries to streams: n ${b.n}, p50 ${b.p50}, ` +
      `p99 ${b.p99}, max ${b.max} ms, over 1 s ${b.over1s}, lost ${b.lost}.`,
    `Streams ended early: ${m.endedEarly}; pings seen: ${m.pings}.`,
    `After closing: waiting ${m.afterClose.waiting} (0 after ${m.afterClose.secondsToZero ?? 'never'} s), ` +
      `RSS ${m.afterClose.rssMb} MB, heap ${m.afterClose.heapUsedMb} MB.`,
    `Service log lines at warn and above: ${JSON.stringify(results.serviceWarnings)}`,
  );
  const notes = [
    ...results.delivery.flatMap((d) => d.latency.notes.map((note) => `${d.description}: ${note}`)),
    ...b.notes,
  ];
  if (notes.length > 0) lines.push('', 'Notes:', ...notes.map((note) => `- ${note}`));
  return lines.join('\n');
}

runStandalone('live.ts', measureLive, formatLive, 20);
