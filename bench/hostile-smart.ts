/**
 * Hostile smart playlists: what smart playlists that follow a playlist, and one user's costly rules or merges, cost the
 * writer and everyone else. On a service and database of its own (SQLite, or a new PostgreSQL database with the
 * default pool of 10), with a catalog of 200 000 songs written into the database before the service starts (the rows
 * an import would write, its search columns from the service's own `songSearchColumns`). Every measure has its quiet
 * baseline in the same run:
 *
 * 1. followers: bob, a viewer of alice's playlist P, owns 300 smart playlists
 *    `{"match": "all", "conditions": [{"field": "playlist", "op": "in", "value": P}]}`. alice appends one song to P
 *    (`POST /v3/playlist/P/songs`) 30 times, 200 ms apart, beside the same 30 appends to a playlist nobody follows;
 *    then how long, from the last append's answer, until every follower holds every song appended; then 3 appends on
 *    their own, each followed by the time until every follower holds it. Whether a follower holds a song is read from
 *    the database every 50 ms, never through the service (a read of a smart playlist refreshes it first);
 * 2. layers: carol, a viewer of alice's P2, owns 8 smart playlists that follow P2, 8 that follow any of those 8, and 8
 *    that follow any of those. alice appends 8 songs to P2, 3 times, each once the last layer caught up: the append's
 *    time (beside 8 songs appended to a playlist nobody follows), the time until each layer holds them, the refreshes
 *    (`mixtape_smart_refreshes_total` in `/metrics`, where the service has it) and the `refresh` revisions written;
 * 3. costly rules: mallory creates smart playlists on 4 connections, as fast as answers come: 50 `contains` conditions
 *    on title, artist and album under `"match": "any"`, each a text a few songs have (some hundreds of songs in all,
 *    so the query reads every song), sorted by 3 keys, limit 1 000;
 * 4. old-base merges: eve sends merged edits (`POST …/edits`, each with a new key) to a playlist of hers of about 200
 *    songs, their base 240 versions behind the newest version an answer showed, on 4 connections: two inserts (one
 *    anchored on an entry removed since the base) and two removes. 1 000 such edits on the current version first.
 *    Each of these edits changes the list in places far apart, so the history keeps a whole copy of the list at each
 *    version (about 200 changes each): 240 back is about 48 000 changes to replay, the most a merge is allowed
 *    (50 000; further back it is refused with 409, which costs next to nothing and so measures nothing).
 *
 * `/healthz` is called at 20/s during every measure; during 3, 4 and the quiet phases before and after them, vic reads
 * a 10-song playlist at 50/s and creates a one-song playlist at 10/s. Each is timed from when it was due, its status
 * counted (a 503 is a request shed). The service runs on CPU 0, this process on CPU 1; `/proc/loadavg` is read at the
 * start and the end.
 *
 * `npm run bench -- --only hostile-smart [--dialect postgres] [--duration 20]`, or alone with
 * `npx tsx bench/hostile-smart.ts [--dialect sqlite|postgres] [--duration S] [--pg-url URL] [--json FILE]
 * [--phases followers,layers,rules,merges]` (the quiet phases always run; `--phases` picks which measures run, all by
 * default).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { songSearchColumns } from '../src/catalog/catalog.service.js';
import { newDatabase } from './hostile-search.js';
import { addUser, auth, percentile } from './neighbours.js';
import { ROOT, startService } from './service.js';

type Dialect = 'sqlite' | 'postgres';

const CATALOG = 200_000;
const FOLLOWERS = 300;
const APPENDS = 30;
const APPEND_PAUSE_MS = 200;
/** The followers' appends stop after this long, however many were sent (a slow service would take minutes). */
const APPENDS_BOUND_MS = 45_000;
const ALONE_APPENDS = 3;
const LAYER = 8;
const LAYER_APPENDS = 3;
/** How long a follower may take to catch up before it is reported as not caught up. */
const CATCH_UP_BOUND_MS = 60_000;
const POLL_MS = 50;
const FLOOD_CONNECTIONS = 4;
const MERGE_BACK = 240;
const MERGE_SETUP_EDITS = 1000;
const MERGE_SETUP_BOUND_MS = 180_000;
const HEALTH_PACE = 20;
const READ_PACE = 50;
const WRITE_PACE = 10;

const PHASES = ['followers', 'layers', 'rules', 'merges'] as const;
/** The measures `--phases a,b` names, or all of them (the quiet phases of 3 and 4 always run). */
function chosenPhases(argv: readonly string[]): ReadonlySet<string> {
  const at = argv.indexOf('--phases');
  const named = at > 0 ? (argv[at + 1] ?? '').split(',') : [...PHASES];
  const unknown = named.filter((name) => !(PHASES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`--phases: unknown ${unknown.join(', ')}; one of ${PHASES.join(', ')}`);
  return new Set(named);
}

const round = (ms: number) => Math.round(ms * 10) / 10;
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

// ---------------------------------------------------------------------------------------------------------------
// Timing

export interface Latency {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Answers by status, and requests that got none by error code. */
  readonly statuses: Readonly<Record<string, number>>;
}

function summary(times: number[], statuses: Record<string, number>): Latency {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 0.5)),
    p99: round(percentile(sorted, 0.99)),
    max: round(sorted.at(-1) ?? 0),
    statuses,
  };
}

/**
 * Requests at a steady pace on a thread of its own (so that this process's own work does not count as the
 * service's), each timed from when it was due, until `stop()` or `seconds`; a body makes them POSTs.
 */
const PACED = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, paths, seconds, pace, authorization, body } = workerData;
let stopped = false;
parentPort.on('message', () => { stopped = true; });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
(async () => {
  const times = [];
  const statuses = {};
  const pending = [];
  const count = (key) => { statuses[key] = (statuses[key] ?? 0) + 1; };
  const headers = authorization === undefined ? {} : { authorization };
  const init = body === undefined
    ? { headers }
    : { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body };
  const start = performance.now();
  for (let i = 0; i < seconds * pace; i++) {
    const due = start + (i * 1000) / pace;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    if (stopped) break;
    pending.push(
      fetch(url + paths[i % paths.length], init)
        .then(async (response) => {
          await response.arrayBuffer();
          count(String(response.status));
          times.push(performance.now() - due);
        })
        .catch((error) => count((error && error.cause && error.cause.code) || 'error')),
    );
  }
  await Promise.all(pending);
  parentPort.postMessage({ times, statuses });
})();
`;

interface Paced {
  readonly path: string | readonly string[];
  readonly pace: number;
  readonly user?: string;
  readonly body?: string;
}

/** Starts a paced load; `stop()` ends it (at most `seconds` after its start in any case) and gives its figures. */
function paced(url: string, load: Paced, seconds: number): () => Promise<Latency> {
  const worker = new Worker(PACED, {
    eval: true,
    workerData: {
      url,
      paths: typeof load.path === 'string' ? [load.path] : load.path,
      seconds,
      pace: load.pace,
      authorization: load.user === undefined ? undefined : auth(load.user).authorization,
      body: load.body,
    },
  });
  const done = new Promise<{ times: number[]; statuses: Record<string, number> }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return async () => {
    worker.postMessage('stop');
    const { times, statuses } = await done;
    await worker.terminate();
    return summary(times, statuses);
  };
}

const health = (url: string, seconds: number) => paced(url, { path: '/healthz', pace: HEALTH_PACE }, seconds);

// ---------------------------------------------------------------------------------------------------------------
// Requests

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly ms: number;
}

async function call(url: string, user: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...auth(user), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, ms: performance.now() - started };
}

function ok(answer: Answer, what: string): Answer {
  if (answer.status !== 200) throw new Error(`${what}: status ${answer.status}: ${answer.text.slice(0, 300)}`);
  return answer;
}

/** A create of the set-up; sent again after a pause when the service sheds it (503) or holds it back (429). */
async function create(url: string, user: string, body: unknown): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const answer = await call(url, user, 'POST', '/v3/playlist', body);
    if (answer.status === 200) return (JSON.parse(answer.text) as { id: number }).id;
    if ((answer.status !== 503 && answer.status !== 429) || attempt === 20) ok(answer, `${user}'s create`);
    await sleep(200);
  }
}

const share = async (url: string, owner: string, id: number, user: string) =>
  ok(await call(url, owner, 'PUT', `/v3/playlist/${id}/members/${user}`, { role: 'viewer' }), 'share');

const append = (url: string, user: string, id: number, songIds: number[]) =>
  call(url, user, 'POST', `/v3/playlist/${id}/songs`, { songIds });

const followRules = (ids: readonly number[]) => ({
  match: ids.length === 1 ? 'all' : 'any',
  conditions: ids.map((value) => ({ field: 'playlist', op: 'in', value })),
});

/** `count` creates, `connections` at a time; their ids in the order of `body(i)`. */
async function createMany(
  url: string,
  user: string,
  count: number,
  body: (i: number) => unknown,
  connections = 4,
): Promise<number[]> {
  const ids: number[] = new Array<number>(count);
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < count; i = next++) ids[i] = await create(url, user, body(i));
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return ids;
}

interface RefreshCount {
  readonly total: number;
  readonly outcomes: Readonly<Record<string, number>>;
  readonly waiting: number;
}

/** `mixtape_smart_refreshes_total` by outcome and summed, and what waits; undefined where it is not counted. */
async function refreshMetrics(url: string): Promise<RefreshCount | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  if (!text.includes('mixtape_smart_refreshes_total')) return undefined;
  const outcomes: Record<string, number> = {};
  for (const m of text.matchAll(/^mixtape_smart_refreshes_total\{outcome="([^"]*)"\} (\S+)$/gm)) {
    outcomes[m[1]!] = Number(m[2]);
  }
  const waiting = Number(/^mixtape_smart_refreshes_waiting (\S+)$/m.exec(text)?.[1] ?? 0);
  return { total: Object.values(outcomes).reduce((sum, n) => sum + n, 0), outcomes, waiting };
}

/** The refreshes between two counts, by outcome (undefined where they are not counted). */
function refreshesBetween(before: RefreshCount | undefined, after: RefreshCount | undefined) {
  if (before === undefined || after === undefined) return undefined;
  const outcomes: Record<string, number> = {};
  for (const [outcome, n] of Object.entries(after.outcomes)) {
    const made = n - (before.outcomes[outcome] ?? 0);
    if (made > 0) outcomes[outcome] = made;
  }
  return { total: after.total - before.total, outcomes };
}

/** Waits (at most 10 s) until nothing waits for a refresh and the count has not moved for 300 ms. */
async function refreshesSettled(url: string): Promise<void> {
  const until = performance.now() + 10_000;
  let last = await refreshMetrics(url);
  if (last === undefined) return;
  while (performance.now() < until) {
    await sleep(300);
    const now = await refreshMetrics(url);
    if (now === undefined || (now.waiting === 0 && now.total === last.total)) return;
    last = now;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The database, read beside the service

interface Sql {
  rows(text: string): Promise<Record<string, unknown>[]>;
  run(text: string, parameters?: unknown[]): Promise<void>;
  close(): Promise<void>;
  readonly sqlite?: SQLite.Database;
}

async function openSql(dialect: Dialect, url: string): Promise<Sql> {
  if (dialect === 'sqlite') {
    const db = new SQLite(url.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    return {
      sqlite: db,
      rows: (text) => Promise.resolve(db.prepare(text).all() as Record<string, unknown>[]),
      run: (text, parameters = []) => {
        db.prepare(text).run(...parameters);
        return Promise.resolve();
      },
      close: () => {
        db.close();
        return Promise.resolve();
      },
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    rows: async (text) => (await client.query(text)).rows as Record<string, unknown>[],
    run: async (text, parameters = []) => {
      await client.query(text, parameters);
    },
    close: () => client.end(),
  };
}

const GENRES = ['Jazz', 'Rock', 'Pop', 'Blues', 'Folk', 'Soul', 'Funk', 'Reggae', 'Metal', 'Punk'];
const DAY_MS = 86_400_000;

/** The catalog, as rows an import would write (dated 30 days back), in batches; the ids of its first and last song. */
async function writeCatalog(dialect: Dialect, sql: Sql, count: number): Promise<{ first: number; last: number }> {
  const added = Date.now() - 30 * DAY_MS;
  const song = (i: number) => {
    const fields = {
      title: `Catalog song ${i}`,
      artist: `Artist ${i % 5000}`,
      album: `Album ${i % 20000}`,
      genre: GENRES[i % GENRES.length]!,
    };
    const c = songSearchColumns(fields);
    return [
      fields.title,
      fields.artist,
      fields.album,
      fields.genre,
      120 + (i % 300),
      c.search_doc,
      added,
      c.norm_title,
      c.norm_artist,
      c.norm_album,
      c.norm_genre,
    ] as const;
  };
  const columns =
    'title, artist, album, genre, duration, search_doc, added, norm_title, norm_artist, norm_album, norm_genre';
  if (sql.sqlite !== undefined) {
    const insert = sql.sqlite.prepare(`INSERT INTO songs (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    sql.sqlite.transaction(() => {
      for (let i = 0; i < count; i++) insert.run(...song(i));
    })();
  } else {
    const batch = 10_000;
    const types = ['text', 'text', 'text', 'text', 'int', 'text', 'bigint', 'text', 'text', 'text', 'text'];
    const unnest = types.map((type, k) => `$${k + 1}::${type}[]`).join(', ');
    for (let start = 0; start < count; start += batch) {
      const arrays: unknown[][] = types.map(() => []);
      for (let i = start; i < Math.min(count, start + batch); i++) song(i).forEach((v, k) => arrays[k]!.push(v));
      await sql.run(`INSERT INTO songs (${columns}) SELECT * FROM unnest(${unnest})`, arrays);
    }
    await sql.run('ANALYZE songs');
  }
  const [row] = await sql.rows('SELECT min(id) AS first, max(id) AS last, count(*) AS n FROM songs');
  if (Number(row!.n) !== count) throw new Error(`the catalog has ${String(row!.n)} songs, not ${count}`);
  return { first: Number(row!.first), last: Number(row!.last) };
}

/** For each playlist, how many of these songs it holds. */
async function held(sql: Sql, playlists: readonly number[], songs: readonly number[]): Promise<Map<number, number>> {
  const rows = await sql.rows(
    `SELECT playlist_id, count(DISTINCT song_id) AS n FROM playlist_songs WHERE playlist_id IN (${playlists.join(',')}) ` +
      `AND song_id IN (${songs.join(',')}) GROUP BY playlist_id`,
  );
  return new Map(rows.map((row) => [Number(row.playlist_id), Number(row.n)]));
}

/**
 * From now, the ms until every playlist of each group holds every one of `songs` (null: not within the bound), read
 * every POLL_MS.
 */
async function caughtUp(
  sql: Sql,
  groups: readonly (readonly number[])[],
  songs: readonly number[],
): Promise<(number | null)[]> {
  const started = performance.now();
  const times: (number | null)[] = groups.map(() => null);
  const all = groups.flat();
  for (;;) {
    const counts = await held(sql, all, songs);
    const elapsed = performance.now() - started;
    groups.forEach((group, g) => {
      if (times[g] === null && group.every((id) => counts.get(id) === songs.length)) times[g] = round(elapsed);
    });
    if (times.every((t) => t !== null) || elapsed > CATCH_UP_BOUND_MS) return times;
    await sleep(POLL_MS);
  }
}

const refreshRevisions = async (sql: Sql) =>
  Number((await sql.rows(`SELECT count(*) AS n FROM playlist_revisions WHERE change = 'refresh'`))[0]!.n);

// ---------------------------------------------------------------------------------------------------------------
// The measures

export interface FollowersResult {
  readonly followers: number;
  readonly createSeconds: number;
  /** One-song appends to a playlist nobody follows, and /healthz meanwhile. */
  readonly quiet: { readonly appends: Latency; readonly health: Latency };
  /** The same appends to P, which the followers follow; /healthz from the first append until they caught up. */
  readonly followed: { readonly appends: Latency; readonly health: Latency };
  /** From the last append's answer until every follower held every song appended (null: not within the bound). */
  readonly burstCatchUpMs: number | null;
  /** Appends on their own: each one's time and the time until every follower held it. */
  readonly alone: readonly { readonly appendMs: number; readonly catchUpMs: number | null }[];
  /** Followers that did not hold every song appended once the bound passed. */
  readonly behind: number;
  readonly refreshRevisions: number;
  readonly refreshes: Refreshes | undefined;
}

/** Refreshes counted by the service, and by outcome (changed, unchanged, gone, failed). */
export interface Refreshes {
  readonly total: number;
  readonly outcomes: Readonly<Record<string, number>>;
}

export interface LayersResult {
  readonly quiet: Latency;
  readonly runs: readonly {
    readonly appendMs: number;
    readonly status: number;
    /** From the answer until each layer held the 8 songs. */
    readonly layerMs: readonly (number | null)[];
    readonly refreshes: Refreshes | undefined;
    readonly refreshRevisions: number;
  }[];
  readonly health: Latency;
}

export interface FloodPhase {
  readonly name: string;
  readonly description: string;
  readonly health: Latency;
  readonly reads: Latency;
  readonly writes: Latency;
  /** The flooding user's requests: answers a second and their time (undefined in the quiet phases). */
  readonly hostile?: { readonly perSecond: number; readonly latency: Latency; readonly note?: string };
}

/** What the service's log holds besides answers below 500: its warnings and errors, and its 5xx answers. */
export interface ServiceLog {
  readonly warnings: number;
  readonly errors: number;
  /** The first few distinct messages of level warn and above. */
  readonly messages: readonly string[];
  /** 5xx answers by method, path (ids as N) and status. */
  readonly serverErrors: Readonly<Record<string, number>>;
}

function readServiceLog(path: string): ServiceLog {
  let warnings = 0;
  let errors = 0;
  const messages = new Set<string>();
  const serverErrors: Record<string, number> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    let entry: { level?: number; msg?: string; method?: string; url?: string; status?: number; err?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    const level = entry.level ?? 30;
    if (level >= 50) errors++;
    else if (level >= 40) warnings++;
    if (level >= 40 && messages.size < 8) messages.add(`${level}: ${entry.msg ?? ''}`.slice(0, 300));
    if (entry.msg === 'request' && (entry.status ?? 0) >= 500) {
      const key = `${entry.method} ${(entry.url ?? '').replace(/\?.*$/, '').replace(/\/\d+/g, '/N')} ${entry.status}`;
      serverErrors[key] = (serverErrors[key] ?? 0) + 1;
    }
  }
  return { warnings, errors, messages: [...messages], serverErrors };
}

export interface HostileSmartResults {
  readonly dialect: Dialect;
  readonly songs: number;
  readonly durationSeconds: number;
  readonly loadAverage: { readonly start: string; readonly end: string };
  readonly setupSeconds: { readonly catalog: number; readonly merges: number };
  readonly followers?: FollowersResult;
  readonly layers?: LayersResult;
  readonly floods: readonly FloodPhase[];
  readonly serviceLog: ServiceLog;
}

async function measureFollowers(
  url: string,
  sql: Sql,
  fresh: () => number,
  songs: (n: number) => number[],
): Promise<FollowersResult> {
  const quietList = await create(url, 'alice', { name: 'nobody follows', songIds: songs(10) });
  const followed = await create(url, 'alice', { name: 'followed', songIds: songs(10) });
  await share(url, 'alice', followed, 'bob');
  const created = performance.now();
  const followers = await createMany(url, 'bob', FOLLOWERS, (i) => ({
    name: `follows ${i}`,
    rules: followRules([followed]),
  }));
  const createSeconds = round((performance.now() - created) / 1000);
  await refreshesSettled(url);

  const appendsTo = async (id: number) => {
    const times: number[] = [];
    const statuses: Record<string, number> = {};
    const added: number[] = [];
    const until = performance.now() + APPENDS_BOUND_MS;
    for (let i = 0; i < APPENDS && performance.now() < until; i++) {
      const song = fresh();
      const answer = await append(url, 'alice', id, [song]);
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      times.push(answer.ms);
      if (answer.status === 200) added.push(song);
      await sleep(APPEND_PAUSE_MS);
    }
    return { latency: summary(times, statuses), added };
  };

  let stopHealth = health(url, 600);
  const quiet = (await appendsTo(quietList)).latency;
  const quietHealth = await stopHealth();

  const revisionsBefore = await refreshRevisions(sql);
  const metricsBefore = await refreshMetrics(url);
  stopHealth = health(url, 600);
  const burst = await appendsTo(followed);
  const [burstCatchUpMs] = await caughtUp(sql, [followers], burst.added);
  const followedHealth = await stopHealth();
  const alone: { appendMs: number; catchUpMs: number | null }[] = [];
  const all = [...burst.added];
  for (let i = 0; i < ALONE_APPENDS; i++) {
    await refreshesSettled(url);
    const song = fresh();
    const answer = ok(await append(url, 'alice', followed, [song]), 'append');
    all.push(song);
    const [catchUpMs] = await caughtUp(sql, [followers], [song]);
    alone.push({ appendMs: round(answer.ms), catchUpMs: catchUpMs ?? null });
  }
  await refreshesSettled(url);
  const counts = await held(sql, followers, all);
  const behind = followers.filter((id) => counts.get(id) !== all.length).length;
  const metricsAfter = await refreshMetrics(url);
  return {
    followers: FOLLOWERS,
    createSeconds,
    quiet: { appends: quiet, health: quietHealth },
    followed: { appends: burst.latency, health: followedHealth },
    burstCatchUpMs: burstCatchUpMs ?? null,
    alone,
    behind,
    refreshRevisions: (await refreshRevisions(sql)) - revisionsBefore,
    refreshes: refreshesBetween(metricsBefore, metricsAfter),
  };
}

async function measureLayers(
  url: string,
  sql: Sql,
  fresh: () => number,
  songs: (n: number) => number[],
): Promise<LayersResult> {
  const quietList = await create(url, 'alice', { name: 'nobody follows 8', songIds: songs(10) });
  const source = await create(url, 'alice', { name: 'layered', songIds: songs(10) });
  await share(url, 'alice', source, 'carol');
  const layers: number[][] = [];
  let below = [source];
  for (let layer = 1; layer <= 3; layer++) {
    const named = below;
    below = await createMany(url, 'carol', LAYER, (i) => ({ name: `layer ${layer} ${i}`, rules: followRules(named) }));
    layers.push(below);
  }
  await refreshesSettled(url);
  const eight = () => Array.from({ length: LAYER }, fresh);

  const times: number[] = [];
  const statuses: Record<string, number> = {};
  const stopHealth = health(url, 600);
  for (let i = 0; i < LAYER_APPENDS; i++) {
    const answer = await append(url, 'alice', quietList, eight());
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    times.push(answer.ms);
    await sleep(APPEND_PAUSE_MS);
  }
  const quiet = summary(times, statuses);

  const runs: LayersResult['runs'][number][] = [];
  for (let i = 0; i < LAYER_APPENDS; i++) {
    await refreshesSettled(url);
    const metricsBefore = await refreshMetrics(url);
    const revisionsBefore = await refreshRevisions(sql);
    const added = eight();
    const answer = await append(url, 'alice', source, added);
    const layerMs = answer.status === 200 ? await caughtUp(sql, layers, added) : [null, null, null];
    await refreshesSettled(url);
    const metricsAfter = await refreshMetrics(url);
    runs.push({
      appendMs: round(answer.ms),
      status: answer.status,
      layerMs,
      refreshes: refreshesBetween(metricsBefore, metricsAfter),
      refreshRevisions: (await refreshRevisions(sql)) - revisionsBefore,
    });
  }
  return { quiet, runs, health: await stopHealth() };
}

/**
 * The 50 conditions of a costly create, each a text a few songs have (a song's number: about 11 songs; an artist: 40;
 * an album: 10), some hundreds of songs in all, fewer than the limit: no order of the songs lets the query stop early,
 * so it reads every song and tries every condition on each that matches none.
 */
function costlyRules(n: number) {
  const conditions = Array.from({ length: 50 }, (_v, k) => {
    const x = ((n * 50 + k) * 7919) % 100_000;
    switch (k % 3) {
      case 0:
        return { field: 'title', op: 'contains', value: `song ${10_000 + (x % 90_000)}` };
      case 1:
        return { field: 'artist', op: 'contains', value: `artist ${1000 + (x % 4000)}` };
      default:
        return { field: 'album', op: 'contains', value: `album ${10_000 + (x % 10_000)}` };
    }
  });
  return {
    match: 'any',
    conditions,
    sort: [
      { field: 'artist', order: 'asc' },
      { field: 'album', order: 'desc' },
      { field: 'title', order: 'asc' },
    ],
    limit: 1000,
  };
}

interface EditsAnswer {
  readonly playlist: { readonly version: number; readonly entries: readonly { readonly entry: string }[] };
  readonly results: readonly ({ readonly applied: true; readonly entries?: readonly string[] } | { applied: false })[];
}

/** A playlist of eve's with a history to merge over, and the merged edits sent to it. */
async function mergeTarget(url: string, songs: (n: number) => number[]) {
  const id = await create(url, 'eve', { name: 'merged', songIds: songs(200) });
  const entries = JSON.parse(ok(await call(url, 'eve', 'GET', `/v3/playlist/${id}/entries`), 'entries').text) as {
    version: number;
    entries: { entry: string }[];
  };
  const names = entries.entries.map((e) => e.entry);
  const state = {
    version: entries.version,
    /** Entries nobody removes: anchors of the first insert. */
    anchors: names.slice(0, 100),
    /** Entries to remove, oldest first. */
    removable: names.slice(100),
    /** Entries removed lately: anchors of the second insert. */
    removed: [] as string[],
    /** Versions between the base and the version answered, each merge. */
    distance: [] as number[],
  };
  const pool = songs(1000);
  const edit = async (n: number, back: number): Promise<Answer> => {
    const base = Math.max(1, state.version - back);
    const take = state.removable.splice(0, 2);
    const anchor = state.removed.at(-1 - (n % Math.max(1, Math.min(50, state.removed.length))));
    const ops = [
      { op: 'insert', songIds: [pool[n % pool.length]!], after: state.anchors[n % state.anchors.length]! },
      ...(anchor === undefined ? [] : [{ op: 'insert', songIds: [pool[(n + 7) % pool.length]!], after: anchor }]),
      ...take.map((entry) => ({ op: 'remove', entry })),
    ];
    const answer = await call(url, 'eve', 'POST', `/v3/playlist/${id}/edits`, { base, key: `k${n}`, ops });
    if (answer.status !== 200) {
      state.removable.unshift(...take);
      return answer;
    }
    const body = JSON.parse(answer.text) as EditsAnswer;
    state.version = Math.max(state.version, body.playlist.version);
    state.distance.push(body.playlist.version - base);
    body.results.forEach((result, k) => {
      const op = ops[k]!;
      if (!result.applied) return;
      if (op.op === 'insert') state.removable.push(...(result.entries ?? []));
      else state.removed.push((op as { entry: string }).entry);
    });
    if (state.removed.length > 200) state.removed.splice(0, state.removed.length - 200);
    return answer;
  };
  return { id, state, edit };
}

/** `connections` loops sending `request(n)` for `seconds`; answers a second, their time and statuses. */
async function flood(connections: number, seconds: number, request: (n: number) => Promise<Answer>) {
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  let n = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  const loop = async () => {
    while (performance.now() < until) {
      try {
        const answer = await request(n++);
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        times.push(answer.ms);
      } catch (error) {
        const code = (error as { cause?: { code?: string } }).cause?.code ?? 'error';
        statuses[code] = (statuses[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  const latency = summary(times, statuses);
  return { perSecond: round(latency.count / ((performance.now() - started) / 1000)), latency };
}

export async function measureHostileSmart(
  dialect: Dialect,
  pgUrl: string,
  durationSeconds: number,
  logDir: string,
): Promise<HostileSmartResults> {
  const start = loadavg();
  const chosen = chosenPhases(process.argv);
  const database = await newDatabase(dialect, pgUrl, 'hostile-smart');
  try {
    for (const name of ['alice', 'bob', 'carol', 'mallory', 'eve', 'vic']) addUser(database.url, name);
    const sql = await openSql(dialect, database.url);
    try {
      const catalogStarted = performance.now();
      const catalog = await writeCatalog(dialect, sql, CATALOG);
      const catalogSeconds = round((performance.now() - catalogStarted) / 1000);
      console.error(`catalog of ${CATALOG} songs written in ${catalogSeconds} s`);
      // Songs in turn for the playlists made, and songs no playlist holds yet for the appends.
      const songs = (n: number) => Array.from({ length: n }, (_v, i) => catalog.first + i);
      let unused = catalog.first + 10_000;
      const fresh = () => unused++;

      mkdirSync(logDir, { recursive: true });
      const logFile = join(logDir, `service-hostile-smart-${dialect}.log`);
      const service = await startService({
        databaseUrl: database.url,
        logFile,
        settings: { LOG_LEVEL: 'info', MIXTAPE_PLAYLISTS_PER_USER: '1000000' },
        profile: false,
        cpu: 0,
      });
      spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
      let stopped = false;
      try {
        const { url } = service;
        // Each user's first request checks their password (slow on purpose); later ones are remembered.
        for (const name of ['alice', 'bob', 'carol', 'mallory', 'eve', 'vic']) {
          ok(await call(url, name, 'GET', '/v3/playlist?limit=1'), `${name}'s sign-in`);
        }

        let followers: FollowersResult | undefined;
        if (chosen.has('followers')) {
          console.error('1. followers');
          followers = await measureFollowers(url, sql, fresh, songs);
          console.error(JSON.stringify(followers));
        }
        let layers: LayersResult | undefined;
        if (chosen.has('layers')) {
          console.error('2. layers');
          layers = await measureLayers(url, sql, fresh, songs);
          console.error(JSON.stringify(layers));
        }

        const merges = await mergeTarget(url, songs);
        const setupStarted = performance.now();
        if (chosen.has('merges')) {
          console.error('4. (set-up) merged edits on the current version');
          for (let n = 0; n < MERGE_SETUP_EDITS && performance.now() - setupStarted < MERGE_SETUP_BOUND_MS; n++) {
            ok(await merges.edit(n, 0), `set-up merge ${n}`);
          }
        }
        const mergeSetupSeconds = round((performance.now() - setupStarted) / 1000);
        merges.state.distance.length = 0;

        const mine = await create(url, 'vic', { name: 'mine', songIds: songs(10) });
        const floods: FloodPhase[] = [];
        const phase = async (
          name: string,
          description: string,
          hostile?: (n: number) => Promise<Answer>,
          note?: () => string,
        ) => {
          const stops = [
            health(url, durationSeconds),
            paced(url, { path: `/v3/playlist/${mine}`, pace: READ_PACE, user: 'vic' }, durationSeconds),
            paced(
              url,
              {
                path: '/v3/playlist',
                pace: WRITE_PACE,
                user: 'vic',
                body: JSON.stringify({ name: 'v', songIds: songs(1) }),
              },
              durationSeconds,
            ),
          ];
          const load = hostile === undefined ? undefined : await flood(FLOOD_CONNECTIONS, durationSeconds, hostile);
          if (load === undefined) await sleep(durationSeconds * 1000);
          const [h, reads, writes] = await Promise.all(stops.map((stop) => stop()));
          const result: FloodPhase = {
            name,
            description,
            health: h!,
            reads: reads!,
            writes: writes!,
            ...(load === undefined ? {} : { hostile: { ...load, ...(note === undefined ? {} : { note: note() }) } }),
          };
          console.error(JSON.stringify(result));
          floods.push(result);
        };
        console.error('3, 4. floods');
        await phase('quiet', 'nobody else');
        if (chosen.has('rules'))
          await phase(
            'rules',
            `${FLOOD_CONNECTIONS} connections: creates with 50 contains under any, 3 sort keys, limit 1 000`,
            (n) => call(url, 'mallory', 'POST', '/v3/playlist', { name: `costly ${n}`, rules: costlyRules(n) }),
          );
        if (chosen.has('merges'))
          await phase(
            'merges',
            `${FLOOD_CONNECTIONS} connections: merged edits on a base ${MERGE_BACK} versions back`,
            (n) => merges.edit(MERGE_SETUP_EDITS + n, MERGE_BACK),
            () => {
              const d = [...merges.state.distance].sort((a, b) => a - b);
              return `versions from base to answer: min ${d[0] ?? '–'}, median ${d[Math.floor(d.length / 2)] ?? '–'}, max ${d.at(-1) ?? '–'}`;
            },
          );
        await phase('quiet again', 'nobody else, after the floods');
        stopped = true;
        await service.stop();
        return {
          dialect,
          songs: CATALOG,
          durationSeconds,
          loadAverage: { start, end: loadavg() },
          setupSeconds: { catalog: catalogSeconds, merges: mergeSetupSeconds },
          ...(followers === undefined ? {} : { followers }),
          ...(layers === undefined ? {} : { layers }),
          floods,
          serviceLog: readServiceLog(logFile),
        };
      } finally {
        if (!stopped) await service.stop();
      }
    } finally {
      await sql.close();
    }
  } finally {
    await database.drop();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The tables

const ratio = (value: number, base: number) => (base > 0 ? (value / base).toFixed(1) : '–');
const statusText = (l: Latency) => JSON.stringify(l.statuses);
const refreshText = (r: Refreshes | undefined) =>
  r === undefined ? 'not counted by this service' : `${r.total} ${JSON.stringify(r.outcomes)}`;
const ms = (value: number | null | undefined) => (value === null || value === undefined ? 'not caught up' : `${value}`);

function formatFollowers(f: FollowersResult): string[] {
  return [
    '1. Followers: alice appends one song, ms (p50 / p99 / max, over the appends sent), and /healthz at 20/s meanwhile',
    '| appends to | appends | p50 | p99 | max | p99 / quiet | statuses | /healthz p50 | /healthz p99 |',
    '|---|---|---|---|---|---|---|---|---|',
    `| a playlist nobody follows | ${f.quiet.appends.count} | ${f.quiet.appends.p50} | ${f.quiet.appends.p99} | ${f.quiet.appends.max} | 1.0 | ${statusText(f.quiet.appends)} | ${f.quiet.health.p50} | ${f.quiet.health.p99} |`,
    `| P, ${f.followers} followers | ${f.followed.appends.count} | ${f.followed.appends.p50} | ${f.followed.appends.p99} | ${f.followed.appends.max} | ${ratio(f.followed.appends.p99, f.quiet.appends.p99)} | ${statusText(f.followed.appends)} | ${f.followed.health.p50} | ${f.followed.health.p99} |`,
    '',
    `${f.followers} followers created in ${f.createSeconds} s; every follower held every song appended ` +
      `${ms(f.burstCatchUpMs)} ms after the last append's answer; appends on their own: ` +
      `${f.alone.map((a) => `${a.appendMs} ms, caught up ${ms(a.catchUpMs)} ms after`).join('; ')}; ` +
      `followers behind at the end: ${f.behind}; refresh revisions: ${f.refreshRevisions}; ` +
      `refreshes counted: ${refreshText(f.refreshes)}`,
    '',
  ];
}

function formatLayers(l: LayersResult): string[] {
  return [
    `2. Layers: 3 × ${LAYER} smart playlists, each layer following all of the one below; alice appends ${LAYER} songs`,
    `quiet (a playlist nobody follows): p50 ${l.quiet.p50} ms, max ${l.quiet.max} ms ${statusText(l.quiet)}`,
    '| run | append ms | ratio to quiet p50 | layer 1 ms | layer 2 ms | layer 3 ms | refreshes counted | refresh revisions |',
    '|---|---|---|---|---|---|---|---|',
    ...l.runs.map(
      (run, i) =>
        `| ${i + 1} | ${run.appendMs}${run.status === 200 ? '' : ` (${run.status})`} | ${ratio(run.appendMs, l.quiet.p50)} | ` +
        `${run.layerMs.map(ms).join(' | ')} | ${refreshText(run.refreshes)} | ${run.refreshRevisions} |`,
    ),
    `/healthz meanwhile: p50 ${l.health.p50}, p99 ${l.health.p99}, max ${l.health.max} ms ${statusText(l.health)}`,
    '',
  ];
}

export function formatHostileSmart(r: HostileSmartResults): string {
  const lines = [
    `Hostile smart playlists (${r.dialect}), ${r.songs} songs, ${r.durationSeconds} s a flood phase; ` +
      `load average at the start: ${r.loadAverage.start}; at the end: ${r.loadAverage.end}`,
    `set-up: catalog written in ${r.setupSeconds.catalog} s, 1 000 merged edits in ${r.setupSeconds.merges} s`,
    '',
    ...(r.followers === undefined ? [] : formatFollowers(r.followers)),
    ...(r.layers === undefined ? [] : formatLayers(r.layers)),
    "3, 4. Floods: /healthz at 20/s, vic's GET at 50/s and POST at 10/s, ms from when due (p50 / p99), ratio of p99 to quiet",
    '| phase | /healthz | ratio | vic GET | ratio | vic POST | ratio | vic POST statuses | GET statuses | flooding user: answers/s, p50 / p99 ms, statuses |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  const [quiet] = r.floods;
  const log = r.serviceLog;
  for (const p of r.floods) {
    const q = quiet ?? p;
    lines.push(
      `| ${p.name}: ${p.description} | ${p.health.p50} / ${p.health.p99} | ${ratio(p.health.p99, q.health.p99)} | ` +
        `${p.reads.p50} / ${p.reads.p99} | ${ratio(p.reads.p99, q.reads.p99)} | ${p.writes.p50} / ${p.writes.p99} | ` +
        `${ratio(p.writes.p99, q.writes.p99)} | ${statusText(p.writes)} | ${statusText(p.reads)} | ` +
        (p.hostile === undefined
          ? '– |'
          : `${p.hostile.perSecond}/s, ${p.hostile.latency.p50} / ${p.hostile.latency.p99}, ${statusText(p.hostile.latency)}${p.hostile.note === undefined ? '' : `; ${p.hostile.note}`} |`),
    );
  }
  lines.push(
    '',
    `The service's log: ${log.warnings} warnings, ${log.errors} errors${log.messages.length === 0 ? '' : ` (${log.messages.join('; ')})`}; ` +
      `5xx answers: ${JSON.stringify(log.serverErrors)}`,
  );
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('hostile-smart.ts') === true) {
  const arg = (name: string) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  measureHostileSmart(
    arg('--dialect') === 'postgres' ? 'postgres' : 'sqlite',
    arg('--pg-url') ?? 'postgres://root@127.0.0.1:5432/postgres',
    Number(arg('--duration') ?? 20),
    join(ROOT, 'bench', 'data'),
  )
    .then((results) => {
      console.log(formatHostileSmart(results));
      const out = arg('--json');
      if (out !== undefined) writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
    })
    .catch((error: unknown) => {
      console.error('bench:', error);
      process.exitCode = 1;
    });
}
