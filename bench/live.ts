/**
 * Live changes (docs/api.md): how soon a rename reaches a long poll or a stream waiting for it, on one instance and
 * across two on one database, and what `--streams` open streams cost the service (another user's GET, the event loop,
 * CPU, memory) quiet, under `--rate` renames a second, after them, and on PostgreSQL after its LISTEN connection ends.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import * as load from './load.js';
import { Random } from './random.js';
import { logSummary, requestLines } from './results.js';
import { admin, addUser, openSql, withService, type OwnScenario, type RunContext } from './service.js';

const WAIT_SECONDS = 30;
/** A stream reads again for about a minute after a wake-up whose change is not listed yet. */
const EVENT_TIMEOUT_MS = 65_000;
const round = (ms: number) => Math.round(ms * 100) / 100;

/** Counts and notes of a case as it runs. */
const tally = () => ({ values: [] as number[], lost: 0, failures: 0, stale: 0, notes: [] as string[] });

/**
 * Deliveries in ms, from the rename's answer to the waiter's answer or event; `stale`: answers or events with only
 * an earlier version (a change listed late), and polls answered before the rename.
 */
function deliveries({ values, lost, failures, stale, notes }: ReturnType<typeof tally>) {
  const sorted = [...values].sort((a, b) => a - b);
  const [p50, p99] = [round(load.percentile(sorted, 0.5)), round(load.percentile(sorted, 0.99))];
  const [max, min, over1s] = [round(sorted.at(-1) ?? 0), round(sorted[0] ?? 0), values.filter((v) => v > 1000).length];
  return { n: values.length, lost, failures, p50, p99, max, min, over1s, stale, values: values.map(round), notes };
}

/** A request timed to the last byte of its answer (`at`), its body as text. */
const request = async (agent: http.Agent, base: string, method: string, path: string, user: string, body?: string) => {
  const headers: Record<string, string> = load.auth(user);
  if (body !== undefined) headers['content-type'] = 'application/merge-patch+json';
  const answer = await load.send(base, { method, path, agent, headers, body });
  return { ...answer, body: answer.body.toString('utf8') };
};

const rename = (agent: http.Agent, base: string, user: string, id: number, name: string) =>
  request(agent, base, 'PATCH', `/v3/playlist/${id}`, user, JSON.stringify({ name }));

interface Page {
  readonly changes: readonly { readonly id: number; readonly version?: number }[];
  readonly next: string;
}

/** Whether a page (or an event's data) lists the playlist at `version` or later. */
const lists = (page: string, id: number, version = 0) =>
  (JSON.parse(page) as Page).changes.some((c) => c.id === id && (c.version ?? 0) >= version);

/** A stream of server-sent events, each kept with the time it arrived. */
function openStream(base: string, user: string) {
  const stream = {
    status: 0,
    refusal: '',
    events: [] as { name: string; data: string; at: number }[],
    pings: 0,
    /** Ended by the service, or failed, before `close()`. */
    endedEarly: false,
    closed: false,
    error: undefined as string | undefined,
    /** True at the first comment or event of a stream that opened, false otherwise. */
    ready: undefined as unknown as Promise<boolean>,
    close: () => {
      stream.closed = true;
      request.destroy();
    },
  };
  let settle: (ok: boolean) => void = () => undefined;
  stream.ready = new Promise((resolve) => (settle = resolve));
  const timer = setTimeout(() => {
    stream.error ??= 'not open within 60 s';
    settle(false);
    request.destroy();
  }, 60_000);
  const ended = () => {
    stream.endedEarly ||= !stream.closed;
    clearTimeout(timer);
    settle(false);
  };
  const request = http.get(`${base}/v3/changes/stream?since=now`, { agent: false, headers: load.auth(user) }, (res) => {
    stream.status = res.statusCode ?? 0;
    res.setEncoding('utf8');
    let buffer = '';
    res.on('data', (chunk: string) => {
      if (stream.status !== 200) return (stream.refusal += chunk);
      buffer += chunk;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const lines = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        stream.pings += lines.filter((line) => line.startsWith(': ping')).length;
        const name = lines.find((line) => line.startsWith('event: '))?.slice(7);
        const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
        if (name !== undefined) stream.events.push({ name, data: data.join('\n'), at: performance.now() });
        clearTimeout(timer);
        settle(true);
      }
    });
    res.on('close', ended);
  });
  request.on('error', (error) => {
    if (!stream.closed) stream.error ??= error.message;
    ended();
  });
  return stream;
}

/** Until `ready()` holds (true), or `ms` pass (false); the times measured are taken where things arrive. */
async function until(ready: () => boolean | Promise<boolean>, ms: number, every = 2): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end;) {
    if (await ready()) return true;
    await sleep(every);
  }
  return ready();
}

const waiting = async (base: string) => load.metric(await load.scrape(base), 'mixtape_waiting_requests') ?? -1;

/** The playlist phases 1 and 2 rename: its version, counted on by every rename. */
interface Target {
  readonly id: number;
  version: number;
}

/**
 * A way to wait for the renames: `arm` before each (false: what came before it was counted, and the case goes on
 * to the next try), `delivered` after it: when the waiter had the change at `version`, or undefined.
 */
interface Waiter {
  arm(i: number): Promise<boolean>;
  delivered(i: number, version: number, writtenAt: number): Promise<number | undefined>;
  /** After a rename that failed: the wait armed for it is over. */
  settle(): Promise<unknown>;
  close(): void;
  readonly opened?: Promise<boolean>;
}

/** Long polls; one answered with only an earlier version is polled again, once. */
function polls(base: string, target: Target, t: ReturnType<typeof tally>): Waiter {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const now = async () =>
    (JSON.parse((await request(agent, base, 'GET', '/v3/changes?since=now', 'owner')).body) as Page).next;
  let token: string | undefined;
  let answered: Promise<Awaited<ReturnType<typeof request>> | Error> = Promise.resolve(new Error('no poll'));
  const poll = (from: string) => {
    const path = `/v3/changes?since=${encodeURIComponent(from)}&wait=${WAIT_SECONDS}`;
    answered = request(agent, base, 'GET', path, 'owner').catch((error: unknown) => error as Error);
  };
  /** The answer of the poll (its token taken), or undefined for a failure, noted. */
  const page = async (what: string) => {
    const answer = await answered;
    if (!(answer instanceof Error) && answer.status === 200) {
      token = (JSON.parse(answer.body) as Page).next;
      return answer;
    }
    t.failures++;
    t.notes.push(
      `${what}: ${answer instanceof Error ? answer.message : `${answer.status} ${answer.body.slice(0, 200)}`}`,
    );
    token = await now();
  };
  return {
    async arm(i) {
      poll((token ??= await now()));
      const counted = until(async () => (await waiting(base)) >= 1, 5000, 5).then(() => false);
      if (!(await Promise.race([answered.then(() => true), counted]))) return true;
      // Answered before any rename: a change listed late, or the poll failed. Taken, and tried again.
      const answer = await page(`#${i}: poll before the rename`);
      if (answer !== undefined) t.stale++;
      if (answer !== undefined) t.notes.push(`#${i}: answered before the rename with ${answer.body.slice(0, 160)}`);
      return false;
    },
    async delivered(i, version, writtenAt) {
      for (let tries = 0; tries < 2; tries++) {
        if (tries > 0) poll(token!);
        const answer = await page(`#${i}: poll`);
        if (answer === undefined) return undefined;
        if (lists(answer.body, target.id, version)) return answer.at;
        if (lists(answer.body, target.id)) t.stale++;
        t.notes.push(`#${i}: answered ${round(answer.at - writtenAt)} ms after the rename without this version`);
      }
      return undefined;
    },
    settle: () => page('a poll after a failed rename'),
    close: () => {
      agent.destroy();
    },
  };
}

/** One stream; an event before the rename, or without its version, is a change listed late or a repeat. */
function stream(base: string, target: Target, t: ReturnType<typeof tally>): Waiter {
  const s = openStream(base, 'owner');
  let read = 0;
  const late = (i: number, what: string) => {
    t.stale++;
    t.notes.push(`#${i}: ${what}: ${s.events[read++]!.data.slice(0, 160)}`);
  };
  return {
    opened: s.ready,
    arm(i) {
      while (read < s.events.length) late(i, 'an event before the rename');
      return Promise.resolve(!s.endedEarly);
    },
    async delivered(i, version) {
      const end = performance.now() + EVENT_TIMEOUT_MS;
      while (
        (await until(() => read < s.events.length || s.endedEarly, end - performance.now())) &&
        read < s.events.length
      ) {
        const event = s.events[read]!;
        if (event.name === 'changes' && lists(event.data, target.id, version)) return s.events[read++]!.at;
        late(i, `event ${event.name} without this version`);
      }
      t.notes.push(`#${i}: no event within ${EVENT_TIMEOUT_MS} ms${s.endedEarly ? ' (the stream ended)' : ''}`);
      return undefined;
    },
    settle: () => Promise.resolve(),
    close: () => {
      s.close();
    },
  };
}

/** `n` renames on `writer`, each after a random pause of up to 250 ms (anywhere in SQLite's look), for `waiter`. */
async function deliver(
  writer: string,
  target: Target,
  n: number,
  random: Random,
  waiter: Waiter,
  t: ReturnType<typeof tally>,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const end = performance.now() + 600_000;
  try {
    // Losses stop a case: each costs up to a wait's length.
    for (let i = 0, tries = 0; i < n && tries < 2 * n && t.lost < 5 && performance.now() < end; tries++) {
      if (!(await waiter.arm(i))) continue;
      await sleep(random.int(250));
      const written = await rename(agent, writer, 'owner', target.id, `live ${tries}`);
      if (written.status !== 200) {
        t.failures++;
        t.notes.push(`#${i}: rename ${written.status} ${written.body.slice(0, 200)}`);
        await waiter.settle();
        continue;
      }
      target.version = (JSON.parse(written.body) as { version?: number }).version ?? target.version + 1;
      const at = await waiter.delivered(i++, target.version, written.at);
      if (at === undefined) t.lost++;
      else t.values.push(at - written.at);
    }
  } finally {
    agent.destroy();
    waiter.close();
  }
  return deliveries({ ...t, notes: t.notes.slice(0, 20) });
}

/** Raises this process's soft limit of open files (the service inherits it) towards `needed`; the limit now. */
function raiseOpenFiles(needed: number): number {
  const prlimit = (...args: string[]) =>
    execFileSync('prlimit', ['--pid', String(process.pid), ...args], { encoding: 'utf8' });
  const read = () =>
    prlimit('--nofile', '--noheadings', '--output', 'SOFT,HARD')
      .trim()
      .split(/\s+/)
      .map((value) => (value === 'unlimited' ? Infinity : Number(value)));
  const [soft = 0, hard = 0] = read();
  if (soft < needed) prlimit(`--nofile=${Math.min(needed, hard)}:${hard}`);
  return read()[0] ?? soft;
}

async function memory(base: string) {
  const text = await load.scrape(base);
  const mb = (name: string) => Math.round((load.metric(text, name) ?? 0) / 104_857.6) / 10;
  return {
    ...{ rssMb: mb('process_resident_memory_bytes'), heapUsedMb: mb('nodejs_heap_size_used_bytes') },
    waiting: load.metric(text, 'mixtape_waiting_requests') ?? -1,
    cpuSeconds: load.metric(text, 'process_cpu_seconds_total') ?? 0,
  };
}

/** Phase 3, on one instance. */
async function manyStreams(context: RunContext, base: string, databaseUrl: string, streams: number, users: number) {
  const perUser = Math.ceil(streams / users);
  if (perUser > 10) throw new Error(`${perUser} streams a user is above MIXTAPE_WAITS_PER_USER, 10`);
  const names = Array.from({ length: users }, (_v, i) => `stream-${String(i).padStart(String(users).length, '0')}`);
  // One user by the command line, the others with the same password's hash.
  addUser(databaseUrl, names[0]!);
  const sql = await openSql(databaseUrl);
  const copy = `INSERT INTO users (name, password_hash, created_at) SELECT ?, password_hash, created_at FROM users`;
  for (const name of names.slice(1)) await sql.run(`${copy} WHERE name = ?`, [name, names[0]]);
  await sql.close();
  // A playlist each, which also signs each user in once (the service then keeps the scrypt hash's answer).
  const playlists = new Map<string, number>();
  await load.inTurn(users, 4, async (i) => {
    playlists.set(names[i]!, (await load.create(base, names[i]!, { name: `mine ${i}`, songIds: [1, 2, 3] })).id);
  });
  const readerPath = `/v3/playlist/${(await load.create(base, 'reader', { name: 'ten', songIds: load.TEN_SONGS })).id}`;
  const reader = (seconds: number) =>
    load.paced(base, { label: '', paths: [readerPath], pace: 50, user: 'reader' }, seconds);
  /** The reader's GETs at 50/s, the event loop's delay, the service's CPU and memory, and the machine's load. */
  const measure = async (description: string, alongside?: () => Promise<void>) => {
    const [before, started, from] = [await memory(base), performance.now(), Date.now()];
    const stop = load.sampleLoop(base, 1000);
    const [latency] = await Promise.all([reader(context.seconds).done, alongside?.()]);
    // Less the monitor's resolution (10 ms) in each figure.
    const samples = (await stop()).map((s) => ({ mean: s.mean - 10, p99: s.p99 - 10, max: s.max - 10 }));
    const after = await memory(base);
    const mean = round(Math.max(0, samples.reduce((sum, s) => sum + s.mean, 0) / Math.max(1, samples.length)));
    const most = (key: 'p99' | 'max') => round(Math.max(0, ...samples.map((s) => s[key])));
    const [p99, max] = [most('p99'), most('max')];
    const phase = {
      ...{ description, reader: latency, memory: after, load: round(loadavg()[0]!), from, to: Date.now() },
      cpuPercent: Math.round(((after.cpuSeconds - before.cpuSeconds) * 100_000) / (performance.now() - started)),
      loop: { samples: samples.length, mean, p99, max },
    };
    phases.push(phase);
    console.error(`  ${description}: ${JSON.stringify(phase)}`);
    return phase;
  };
  /** The phases, each with the reader's GETs as the service timed them (its request log's `ms`) filled in at the end. */
  const phases: { from: number; to: number; inService?: load.Latency }[] = [];
  // The reader's route warmed up first (its first requests compile the route's code), not counted.
  await reader(3).done;
  const none = await measure('no streams open');
  const open: { stream: ReturnType<typeof openStream>; user: string }[] = [];
  const refused: Record<string, number> = {};
  const refusals: string[] = [];
  const openStarted = performance.now();
  await load.inTurn(streams, 100, async (i) => {
    if (performance.now() - openStarted > 300_000) return;
    const user = names[i % names.length]!;
    const s = openStream(base, user);
    if (await s.ready) return open.push({ stream: s, user });
    const key = s.status === 0 ? (s.error ?? 'error') : String(s.status);
    refused[key] = (refused[key] ?? 0) + 1;
    if (refusals.length < 10) refusals.push(`${key} ${s.refusal.slice(0, 200)}`);
    s.close();
  });
  const openSeconds = round((performance.now() - openStarted) / 1000);
  console.error(`  ${open.length} streams open in ${openSeconds} s; refused ${JSON.stringify(refused)}`);
  await sleep(2000);
  const quiet = await measure(`${open.length} streams open, quiet`);
  // Each user's playlist renamed once, `--rate` a second: each of its streams must get it.
  const rate = context.int('rate', 50);
  const answered = new Map<string, number>();
  const t = tally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  await measure(`${open.length} streams open, ${rate} renames/s each waking ${perUser} streams`, async () => {
    const pending: Promise<void>[] = [];
    const started = performance.now();
    for (const [i, user] of names.entries()) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      const renamed = rename(agent, base, user, playlists.get(user)!, `renamed ${user}`);
      const failed = (why: string) => t.notes.push(`${user}: ${why.slice(0, 200)}`);
      const done = (a: Awaited<typeof renamed>) =>
        a.status === 200 ? answered.set(user, a.at) : failed(`${a.status} ${a.body}`);
      pending.push(renamed.then(done, (error: unknown) => failed((error as Error).message)).then(() => undefined));
    }
    await Promise.all(pending);
  });
  agent.destroy();
  const renameFailures = t.notes.length;
  // Every stream whose user's rename was answered should have its event by now, or within 15 s.
  const eventOf = ({ stream: s, user }: (typeof open)[number]) =>
    s.events.find((e) => e.name === 'changes' && lists(e.data, playlists.get(user)!, 2));
  await until(() => open.every((entry) => !answered.has(entry.user) || eventOf(entry) !== undefined), 15_000, 100);
  for (const entry of open.filter((e) => answered.has(e.user))) {
    const event = eventOf(entry);
    if (event !== undefined) t.values.push(event.at - answered.get(entry.user)!);
    else t.lost++;
    if (event === undefined) t.notes.push(`${entry.user}: no event (ended early: ${entry.stream.endedEarly})`);
  }
  await measure(`${open.length} streams open, the ${context.seconds} s after the renames`);
  // PostgreSQL: the connection that LISTENs dropped (a restart, a failover, a proxy's idle timeout): it comes back.
  if (context.dialect === 'postgres') {
    const others = `datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`;
    await admin(databaseUrl, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${others}`);
    await measure(`${open.length} streams open, the ${context.seconds} s after the LISTEN connection dropped`);
  }
  const endedEarly = open.filter((entry) => entry.stream.endedEarly).length;
  const pings = open.reduce((sum, entry) => sum + entry.stream.pings, 0);
  for (const entry of open) entry.stream.close();
  // The instance should forget every stream once its connection closes.
  const closed = performance.now();
  const zero = await until(async () => (await waiting(base)) === 0, 30_000, 250);
  const secondsToZero = zero ? round((performance.now() - closed) / 1000) : undefined;
  const perStream = (a: number, b: number) => (open.length === 0 ? 0 : round(((a - b) * 1024) / open.length));
  return {
    ...{ users, readerPath, streamsAsked: streams, streamsOpen: open.length, openSeconds, refused, refusals, phases },
    rssKbPerStream: perStream(quiet.memory.rssMb, none.memory.rssMb),
    heapKbPerStream: perStream(quiet.memory.heapUsedMb, none.memory.heapUsedMb),
    broadcast: { ...deliveries({ ...t, notes: t.notes.slice(0, 20) }), renames: answered.size, renameFailures },
    ...{ endedEarly, pings, afterClose: { ...(await memory(base)), secondsToZero } },
  };
}

async function live(context: RunContext) {
  const [n, streams, users] = [context.int('n', 200), context.int('streams', 10_000), context.int('users', 1000)];
  const random = new Random(20261129);
  // Each stream is a socket here and one in the service, which inherits this process's limit.
  const openFilesLimit = raiseOpenFiles(streams + 2000);
  if (openFilesLimit < streams + 1000) console.error(`!!! open files are limited to ${openFilesLimit}`);
  const cap = String(streams + 1000);
  const settings = { MIXTAPE_MAX_CONNECTIONS: cap, MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS: cap };
  const spec = { name: 'live', users: ['owner', 'reader'], settings };
  return withService(context, spec, async ({ url, service, databaseUrl, logFile, another }) => {
    const b = await another('b');
    const target = { id: (await load.create(url, 'owner', { name: 'live', songIds: [1, 2, 3] })).id, version: 1 };
    const delivery = [];
    const cases = [
      ['one instance, long poll', url, polls],
      ['one instance, stream', url, stream],
      ['two instances (write on A, wait on B), long poll', b.url, polls],
      ['two instances (write on A, wait on B), stream', b.url, stream],
    ] as const;
    for (const [description, waiterUrl, kind] of cases) {
      const [t, loadBefore] = [tally(), round(loadavg()[0]!)];
      const waiter = kind(waiterUrl, target, t);
      if ((await waiter.opened) === false) throw new Error('the stream did not open');
      delivery.push({ description, loadBefore, latency: await deliver(url, target, n, random, waiter, t) });
      console.error(`  ${description}: ${JSON.stringify({ ...delivery.at(-1)!.latency, values: undefined })}`);
    }
    await b.stop();
    const many = await manyStreams(context, url, databaseUrl, streams, users);
    await service.stop();
    // The reader's GETs as the service timed them, phase by phase, from its request log.
    const reads = requestLines(logFile).filter((l) => l.url === many.readerPath && l.method === 'GET');
    for (const phase of many.phases) {
      phase.inService = load.summarize(
        reads.filter((l) => l.time >= phase.from && l.time <= phase.to).map((l) => l.ms),
      );
    }
    const serviceLog = logSummary([logFile, logFile.replace(/\.log$/, '-b.log')]);
    const loadAfter = loadavg().map(round);
    return { dialect: context.dialect, openFilesLimit, loadAfter, settings, delivery, many, serviceLog };
  });
}

const description = 'how soon a change reaches its waiters, on one instance and two, and what many open streams cost';
export const LIVE: OwnScenario = { name: 'live', description, seconds: 20, run: live };
