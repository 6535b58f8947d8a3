/**
 * Smart playlists over a catalog of 200 000 songs, on a service and database of its own (SQLite, or a new PostgreSQL
 * database with the default pool of 10). The catalog comes in as an operator's would: a generated JSON Lines file
 * through `mixtape catalog import` (20 genres, 10 000 songs each), then dated 30 days back by one UPDATE of
 * `songs.added` (the CLI dates the songs it adds now), so that "added in the last day" means the songs a later import
 * brings. Measured:
 *
 * - (a) GET of a smart playlist (genre is X, sorted by added desc, limit 100) beside GET of a hand-made playlist of
 *   the same 100 songs, on the same connections: answers a second, p50, p99;
 * - (b) POST creating a smart playlist (those rules, X in turn over the genres) beside POST creating a hand-made
 *   playlist of 100 songs, on the same connections;
 * - (c) 1 000 smart playlists spread over 100 users (added in the last day, genre X, newest first, limit 100), then
 *   `mixtape catalog import` of 1 000 new songs (50 a genre) as its own process: the seconds until it exits (the
 *   import and its refresh), how many playlists it says changed (each a `refresh` revision, counted in the database
 *   too), and another user's GET at 50/s and POST at 10/s, each timed from when it was due, while it runs, beside the
 *   same user's when quiet, just before, in the same run.
 *
 * The service runs on CPU 0, this process and the CLI on CPU 1. The load average (`/proc/loadavg`) is printed at
 * the start and the end: the machine may be shared.
 *
 *   npx tsx bench/smart.ts --dialect sqlite|postgres [--duration S] [--songs N] [--pg-url URL]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { serviceEnvironment } from '../test/helpers/service-environment.js';
import { measure, type BenchRequest, type Measurement } from './load.js';
import { addUser, auth, victimLoad, type VictimLatency } from './neighbours.js';
import { newDatabase } from './hostile-search.js';
import { ROOT, startService } from './service.js';

const GENRES = [
  'Jazz',
  'Rock',
  'Pop',
  'Blues',
  'Folk',
  'Soul',
  'Funk',
  'Reggae',
  'Metal',
  'Punk',
  'Disco',
  'House',
  'Techno',
  'Ambient',
  'Gospel',
  'Country',
  'Bossa Nova',
  'Salsa',
  'Classical',
  'Opera',
] as const;
/** Connections of (a) and (b). */
const CONNECTIONS = 16;
const SMART_USERS = 100;
const SMART_PLAYLISTS = 1000;
const NEW_SONGS = 1000;
const DAY_MS = 86_400_000;

type Dialect = 'sqlite' | 'postgres';

export interface SmartResults {
  readonly dialect: Dialect;
  readonly songs: number;
  readonly durationSeconds: number;
  readonly loadAverage: { readonly start: string; readonly end: string };
  readonly catalogImportSeconds: number;
  readonly getSmart: Measurement;
  readonly getHand: Measurement;
  readonly postSmart: Measurement;
  readonly postHand: Measurement;
  readonly smartCreateSeconds: number;
  readonly quiet: { readonly reads: VictimLatency; readonly creates: VictimLatency };
  readonly importRun: {
    readonly seconds: number;
    readonly stdout: string;
    readonly refreshRevisions: number;
    /** From the first refresh revision to the last. */
    readonly refreshSeconds: number;
    readonly reads: VictimLatency;
    readonly creates: VictimLatency;
    readonly loopDelay: {
      readonly p50: number;
      readonly max: number;
      readonly maxAt: number;
      readonly samples: number;
    };
  };
}

/**
 * The service's event-loop delay every 500 ms: the largest single delay since the last look
 * (`nodejs_eventloop_lag_max_seconds`, reset at each scrape), which shows one long block that a mean hides.
 * `stop()` gives the samples' median and largest, in milliseconds, and when (s from the start) the largest came.
 */
function sampleLoopBlocks(url: string) {
  const samples: { at: number; ms: number }[] = [];
  const state = { running: true };
  const started = performance.now();
  const loop = (async () => {
    // A first look, not kept: it resets the largest delay, which until then covers the time since the service started.
    await fetch(`${url}/metrics`).then((response) => response.text());
    while (state.running) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      try {
        const text = await (await fetch(`${url}/metrics`)).text();
        const max = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1];
        if (max !== undefined) samples.push({ at: (performance.now() - started) / 1000, ms: Number(max) * 1000 });
      } catch {
        // A scrape that failed is no sample.
      }
    }
  })();
  return async () => {
    state.running = false;
    await loop;
    const sorted = [...samples].sort((a, b) => a.ms - b.ms);
    const largest = sorted.at(-1);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return {
      p50: round(sorted[Math.floor(sorted.length / 2)]?.ms ?? 0),
      max: round(largest?.ms ?? 0),
      maxAt: round(largest?.at ?? 0),
      samples: samples.length,
    };
  };
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

const songLine = (i: number, genre: string, prefix: string) =>
  JSON.stringify({
    title: `${prefix} song ${i}`,
    artist: `Artist ${i % 5000}`,
    album: `Album ${i % 20000}`,
    genre,
    duration: 120 + (i % 300),
  });

function writeCatalog(path: string, count: number, prefix: string): void {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) lines.push(songLine(i, GENRES[i % GENRES.length]!, prefix));
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** `mixtape catalog import FILE` as its own process, on CPU 1; its stdout, and the seconds from spawn to exit. */
function catalogImport(databaseUrl: string, file: string): Promise<{ seconds: number; stdout: string }> {
  const started = performance.now();
  const child = spawn('taskset', ['-c', '1', process.execPath, 'dist/cli.js', 'catalog', 'import', file], {
    cwd: ROOT,
    env: serviceEnvironment(process.env, { DATABASE_URL: databaseUrl }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`mixtape catalog import: exit ${code}\n${stderr}`));
      else resolve({ seconds: (performance.now() - started) / 1000, stdout: stdout.trim() });
    });
  });
}

/** Plain SQL on the bench's database, outside the service (set-up and counts). */
async function withSql<T>(
  dialect: Dialect,
  url: string,
  work: (run: (text: string) => Promise<unknown[]>) => Promise<T>,
) {
  if (dialect === 'sqlite') {
    const db = new SQLite(url.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    try {
      return await work((text) =>
        Promise.resolve(/^\s*select/i.test(text) ? db.prepare(text).all() : (db.prepare(text).run(), [])),
      );
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(async (text) => (await client.query(text)).rows as unknown[]);
  } finally {
    await client.end();
  }
}

const json = (user: string, body: unknown) => ({
  ...auth(user),
  'content-type': 'application/json',
  body: JSON.stringify(body),
});

/** A create of the set-up; sent again after a pause when the service sheds it (503) or holds a sign-in back (429). */
async function post(url: string, user: string, body: unknown): Promise<{ id: number; songs: { id: number }[] }> {
  const { body: text, ...headers } = json(user, body);
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(`${url}/v3/playlist`, { method: 'POST', headers, body: text });
    if (response.status === 200) return (await response.json()) as { id: number; songs: { id: number }[] };
    const answer = await response.text();
    if ((response.status !== 503 && response.status !== 429) || attempt === 20) {
      throw new Error(`create: ${response.status} ${answer}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const genreRules = (genre: string) => ({
  match: 'all',
  conditions: [{ field: 'genre', op: 'is', value: genre }],
  sort: [{ field: 'added', order: 'desc' }],
  limit: 100,
});

const recentRules = (genre: string) => ({
  match: 'all',
  conditions: [
    { field: 'added', op: 'inTheLast', value: 1 },
    { field: 'genre', op: 'is', value: genre },
  ],
  sort: [{ field: 'added', order: 'desc' }],
  limit: 100,
});

const postRequest = (user: string, body: unknown): BenchRequest => {
  const { body: text, ...headers } = json(user, body);
  return { method: 'POST', path: '/v3/playlist', headers, body: text };
};

export async function measureSmart(
  dialect: Dialect,
  pgUrl: string,
  durationSeconds: number,
  logDir: string,
  songs = 200_000,
): Promise<SmartResults> {
  const start = loadavg();
  const database = await newDatabase(dialect, pgUrl, 'smart');
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-smart-bench-'));
  try {
    // Users: two through the CLI (which also migrates), the hundred owners of (c) copies of one of them by SQL
    // (each `user add` is a process of its own that hashes a password).
    for (const name of ['bob', 'alice']) addUser(database.url, name);
    const catalogFile = join(dir, 'catalog.jsonl');
    writeCatalog(catalogFile, songs, 'Catalog');
    const catalog = await catalogImport(database.url, catalogFile);
    console.error(`catalog import of ${songs} songs: ${catalog.seconds.toFixed(1)} s (${catalog.stdout})`);
    const owners = Array.from({ length: SMART_USERS }, (_v, i) => `owner${String(i).padStart(3, '0')}`);
    await withSql(dialect, database.url, async (run) => {
      await run(`UPDATE songs SET added = added - ${30 * DAY_MS}`);
      for (const name of owners) {
        await run(
          `INSERT INTO users (name, password_hash, created_at) SELECT '${name}', password_hash, created_at FROM users WHERE name = 'alice'`,
        );
      }
    });

    mkdirSync(logDir, { recursive: true });
    const service = await startService({
      databaseUrl: database.url,
      logFile: join(logDir, `service-smart-${dialect}.log`),
      settings: { LOG_LEVEL: 'info', MIXTAPE_PLAYLISTS_PER_USER: '1000000' },
      profile: false,
      cpu: 0,
    });
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    try {
      const { url } = service;
      const mine = await post(url, 'bob', { name: 'mine', songIds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] });
      const victims = (seconds: number) =>
        Promise.all([
          victimLoad(url, [`/v3/playlist/${mine.id}`], seconds, 'bob', 50),
          victimLoad(url, ['/v3/playlist'], seconds, 'bob', 10, JSON.stringify({ name: 'b', songIds: [7] })),
        ]);

      // (a) GET of a smart playlist beside GET of a hand-made one of the same songs.
      const smart = await post(url, 'alice', { name: 'smart jazz', rules: genreRules('Jazz') });
      const hand = await post(url, 'alice', { name: 'hand jazz', songIds: smart.songs.map((s) => s.id) });
      if (smart.songs.length !== 100) throw new Error(`the smart playlist has ${smart.songs.length} songs`);
      const get = (id: number): BenchRequest => ({ method: 'GET', path: `/v3/playlist/${id}`, headers: auth('alice') });
      const options = { connections: CONNECTIONS, durationSeconds };
      // Both warmed up first, unmeasured, so that neither meets a colder service than the other.
      const warm = { connections: CONNECTIONS, durationSeconds: 2 };
      await measure(url, [get(smart.id), get(hand.id)], warm);
      const getSmart = await measure(url, [get(smart.id)], options);
      const getHand = await measure(url, [get(hand.id)], options);

      // (c) 1 000 smart playlists over 100 users, then a catalog import of 1 000 new songs beside another user.
      const createStarted = performance.now();
      const createSmart = (n: number) => {
        const genre = GENRES[n % GENRES.length]!;
        return post(url, owners[n % SMART_USERS]!, { name: `new ${genre} ${n}`, rules: recentRules(genre) });
      };
      // Each owner's first one alone (its password is checked then, and few sign-ins are checked at once), the
      // rest ten at a time.
      for (let n = 0; n < SMART_USERS; n++) await createSmart(n);
      for (let start = SMART_USERS; start < SMART_PLAYLISTS; start += 10) {
        await Promise.all(Array.from({ length: 10 }, (_v, k) => createSmart(start + k)));
      }
      const smartCreateSeconds = (performance.now() - createStarted) / 1000;
      const [quietReads, quietCreates] = await victims(durationSeconds);
      const newFile = join(dir, 'new.jsonl');
      writeCatalog(newFile, NEW_SONGS, 'New');
      // The refresh revisions the import wrote: how many, and from the first to the last (their `at`).
      const countRefreshes = () =>
        withSql(dialect, database.url, async (run) => {
          const rows = (await run(
            `SELECT count(*) AS n, min(at) AS first, max(at) AS last FROM playlist_revisions WHERE change = 'refresh'`,
          )) as { n: number | string; first: number | string | null; last: number | string | null }[];
          return { n: Number(rows[0]!.n), first: Number(rows[0]!.first), last: Number(rows[0]!.last) };
        });
      const refreshesBefore = (await countRefreshes()).n;
      const stopSampling = sampleLoopBlocks(url);
      // The other user's load runs twice the duration; the import starts a second into it.
      const [[reads, creates], imported] = await Promise.all([
        victims(2 * durationSeconds),
        new Promise((resolve) => setTimeout(resolve, 1000)).then(() => catalogImport(database.url, newFile)),
      ]);
      const loopDelay = await stopSampling();
      const refreshes = await countRefreshes();
      const refreshRevisions = refreshes.n - refreshesBefore;
      const refreshSeconds = (refreshes.last - refreshes.first) / 1000;

      // (b) POST of a smart playlist beside POST of a hand-made one of 100 songs.
      const smartBodies = GENRES.map((genre, i) =>
        postRequest('alice', { name: `b smart ${i}`, rules: genreRules(genre) }),
      );
      const handBodies = GENRES.map((_genre, i) =>
        postRequest('alice', { name: `b hand ${i}`, songIds: smart.songs.map((s) => s.id + i) }),
      );
      await measure(url, [...smartBodies, ...handBodies], warm);
      const postSmart = await measure(url, smartBodies, options);
      const postHand = await measure(url, handBodies, options);

      return {
        dialect,
        songs,
        durationSeconds,
        loadAverage: { start, end: loadavg() },
        catalogImportSeconds: catalog.seconds,
        getSmart,
        getHand,
        postSmart,
        postHand,
        smartCreateSeconds,
        quiet: { reads: quietReads, creates: quietCreates },
        importRun: { ...imported, refreshRevisions, refreshSeconds, reads, creates, loopDelay },
      };
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  }
}

export function formatSmart(r: SmartResults): string {
  const row = (name: string, m: Measurement) =>
    `| ${name} | ${m.rps.toFixed(0)} | ${m.p50.toFixed(1)} | ${m.p99.toFixed(1)} | ${m.non2xx} | ${m.errors} |`;
  const ratio = (a: Measurement, b: Measurement) => (a.rps / b.rps).toFixed(2);
  const victim = (name: string, v: VictimLatency) =>
    `| ${name} | ${v.requests} | ${v.failures} | ${v.p50} | ${v.p99} | ${v.max} |`;
  return [
    `Smart playlists (${r.dialect}), ${r.songs} songs, ${r.durationSeconds} s a measure, ${CONNECTIONS} connections`,
    `load average at the start: ${r.loadAverage.start}; at the end: ${r.loadAverage.end}`,
    `catalog import of ${r.songs} songs (set-up): ${r.catalogImportSeconds.toFixed(1)} s`,
    '',
    '| request | answers/s | p50 ms | p99 ms | non-2xx | errors |',
    '|---|---|---|---|---|---|',
    row('(a) GET smart playlist (genre, added desc, limit 100)', r.getSmart),
    row('(a) GET hand-made playlist, same 100 songs', r.getHand),
    row('(b) POST smart playlist (genre, added desc, limit 100)', r.postSmart),
    row('(b) POST hand-made playlist of 100 songs', r.postHand),
    '',
    `(a) smart / hand-made answers a second: ${ratio(r.getSmart, r.getHand)}; (b): ${ratio(r.postSmart, r.postHand)}`,
    '',
    `(c) ${SMART_PLAYLISTS} smart playlists over ${SMART_USERS} users created in ${r.smartCreateSeconds.toFixed(1)} s; ` +
      `mixtape catalog import of ${NEW_SONGS} songs: ${r.importRun.seconds.toFixed(1)} s to exit ` +
      `("${r.importRun.stdout.replace(/\n/g, ' ')}"); refresh revisions written: ${r.importRun.refreshRevisions}, ` +
      `the first to the last in ${r.importRun.refreshSeconds.toFixed(1)} s; ` +
      `service's largest event-loop delay in each 500 ms: median ${r.importRun.loopDelay.p50} ms, largest ` +
      `${r.importRun.loopDelay.max} ms (${r.importRun.loopDelay.maxAt} s into the window)`,
    '',
    '| other user (bob), ms from when due | requests | failures | p50 | p99 | max |',
    '|---|---|---|---|---|---|',
    victim('GET 50/s, quiet', r.quiet.reads),
    victim(`GET 50/s, during the import (${2 * r.durationSeconds} s window)`, r.importRun.reads),
    victim('POST 10/s, quiet', r.quiet.creates),
    victim(`POST 10/s, during the import (${2 * r.durationSeconds} s window)`, r.importRun.creates),
  ].join('\n');
}

if (process.argv[1]?.endsWith('smart.ts') === true) {
  const arg = (name: string) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const dialect = arg('--dialect') === 'postgres' ? 'postgres' : 'sqlite';
  measureSmart(
    dialect,
    arg('--pg-url') ?? 'postgres://root@127.0.0.1:5432/postgres',
    Number(arg('--duration') ?? 10),
    join(ROOT, 'bench', 'data'),
    Number(arg('--songs') ?? 200_000),
  )
    .then((results) => {
      console.log(formatSmart(results));
      const out = arg('--json');
      if (out !== undefined) writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
    })
    .catch((error: unknown) => {
      console.error('bench:', error);
      process.exitCode = 1;
    });
}
