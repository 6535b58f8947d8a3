/**
 * What one edit writes and costs by the playlist's length: for playlists of 10, 100, 1 000 and 10 000 songs, on
 * SQLite and PostgreSQL, an insert of one song at the top, the middle and the end (`POST …/edits` with an anchor, and
 * the positional `POST …/songs` with `position`), a move of the first song to the end and a remove in the middle
 * (`POST …/edits`, and a JSON Patch), each as the rows written to `playlist_songs` and the time of the request.
 * With `--before DIR`, a checkout of another commit (`b0bc896`, positions, which rewrote every row from the first
 * difference) is measured the same way in the same run, right after this one on each database: its positional
 * inserts and its JSON Patch move and remove. Then a merged edit whose base is `--far` versions back (1 000 edits
 * made since, some of them removing the entries the request anchors on), against the same request on the current
 * version. And, in this checkout, `--same-place` inserts one after the other after one entry, kept: each new order key
 * is longer than the one before, and past 48 characters the playlist's entries all get fresh keys (a bounded
 * rewrite); what that costs spread over the inserts.
 *
 * Rows are counted exactly, the same way on both databases and both commits: row-level triggers (AFTER INSERT,
 * UPDATE, DELETE … FOR EACH ROW) on `playlist_songs` add one to a counter table for each row inserted, updated
 * (an upsert's update too) or deleted; the counter is read before and after each counted request. The triggers are
 * there only for the `--counted` requests of each case, then dropped: the timed `--runs` requests run without them.
 * Each measured request is followed by an unmeasured one that undoes it (the inserted entry removed, the moved one
 * moved back, the removed song inserted again), so that every request meets a playlist of exactly the given length.
 *
 * The service runs as a child process from source (`node --import tsx src/cli.ts serve`) in either checkout, on a
 * fresh database of its own, on CPU 0; this process on CPU 1. Run alone, or as `npm run bench -- --only
 * entry-writes` (this checkout, the dialect given there).
 *
 *   npx tsx bench/entry-writes.ts [--dialect sqlite,postgres] [--sizes 10,100,1000,10000] [--runs 20] [--counted 5]
 *     [--before /work/wt-before] [--far 1000] [--far-runs 3] [--same-place 300] [--pg-url URL] [--out FILE.json]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { MERGE_VERSIONS } from '../src/playlists/edits/edits.service.js';
import { ROOT, pinToCpu, startService } from './service.js';

type Dialect = 'sqlite' | 'postgres';
type Tree = 'head' | 'before';

const USER = 'bench';
const PASSWORD = 'entry-writes-password';
const AUTH = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
/** The demo catalog's songs (ids 1 to 240) are the songs of every playlist here. */
const CATALOG = 240;
const UNDO_FAILED = 'the request that undoes the measured one failed';

export interface EntryWritesOptions {
  readonly dialects: readonly Dialect[];
  readonly sizes: readonly number[];
  readonly runs: number;
  readonly counted: number;
  readonly warmup: number;
  /** Another checkout to measure beside this one (its positional inserts, its JSON Patch move and remove). */
  readonly before?: string | undefined;
  /** Versions between a far merged edit's base and the current version (0: not measured). */
  readonly far: number;
  readonly farRuns: number;
  /** Inserts after one entry, one after the other with no undo, counted (0: not measured). */
  readonly samePlace: number;
  readonly pgUrl: string;
  /** The command line that ran it, for the results. */
  readonly command: string;
}

/** One case: its rows written (per counted request) and its times (per timed request). */
export interface CaseResult {
  readonly tree: Tree;
  readonly dialect: Dialect;
  readonly size: number;
  readonly name: string;
  readonly request: string;
  /** Rows inserted, updated and deleted in `playlist_songs` by each counted request. */
  readonly rows: readonly { ins: number; upd: number; del: number }[];
  /** Milliseconds, each timed request from its send to the end of its answer, sorted. */
  readonly ms: readonly number[];
}

/**
 * Inserts after one entry, each between that entry and the one inserted before it, as many as `inserts`: each new
 * key is longer than the one before, and past 48 characters every entry of the playlist gets a fresh key.
 */
export interface SamePlaceResult {
  readonly dialect: Dialect;
  readonly size: number;
  readonly inserts: number;
  /** Rows written by each insert. */
  readonly rows: readonly number[];
}

export interface FarResult {
  readonly dialect: Dialect;
  readonly versionsBack: number;
  readonly songs: number;
  readonly ops: number;
  /** The merged edit on a base `versionsBack` versions old, ms, one per playlist. */
  readonly farMs: readonly number[];
  /** The same ops on the current version, right after, ms. */
  readonly currentMs: readonly number[];
  /** What a base one version further back was answered, when that is past the service's bound (0: not asked). */
  readonly olderStatus: number;
  readonly results: string;
}

export interface EntryWritesResults {
  readonly date: string;
  readonly command: string;
  readonly machine: { cpuModel: string; cores: number; loadAverage: number[] };
  readonly runs: number;
  readonly counted: number;
  readonly cases: readonly CaseResult[];
  readonly samePlace: readonly SamePlaceResult[];
  readonly far: readonly FarResult[];
}

// ---------------------------------------------------------------------------------------------------------------
// The database of one service, and the counter of rows written

interface BenchDatabase {
  readonly url: string;
  /** Adds the triggers (and the counter table the first time). */
  count(): Promise<void>;
  /** Drops the triggers. */
  uncount(): Promise<void>;
  counter(): Promise<{ ins: number; upd: number; del: number }>;
  drop(): Promise<void>;
}

function sqliteDatabase(): BenchDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-entry-writes-'));
  const file = join(dir, 'bench.db');
  let db: SQLite.Database | undefined;
  const open = () => {
    if (db === undefined) {
      db = new SQLite(file);
      db.pragma('busy_timeout = 5000');
    }
    return db;
  };
  return {
    url: `sqlite:${file}`,
    count() {
      const d = open();
      d.exec(`CREATE TABLE IF NOT EXISTS bench_writes (ins INTEGER, upd INTEGER, del INTEGER);
        INSERT INTO bench_writes SELECT 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM bench_writes);
        CREATE TRIGGER bench_ins AFTER INSERT ON playlist_songs BEGIN UPDATE bench_writes SET ins = ins + 1; END;
        CREATE TRIGGER bench_upd AFTER UPDATE ON playlist_songs BEGIN UPDATE bench_writes SET upd = upd + 1; END;
        CREATE TRIGGER bench_del AFTER DELETE ON playlist_songs BEGIN UPDATE bench_writes SET del = del + 1; END;`);
      return Promise.resolve();
    },
    uncount() {
      open().exec('DROP TRIGGER bench_ins; DROP TRIGGER bench_upd; DROP TRIGGER bench_del;');
      return Promise.resolve();
    },
    counter() {
      const row = open().prepare('SELECT ins, upd, del FROM bench_writes').get() as {
        ins: number;
        upd: number;
        del: number;
      };
      return Promise.resolve(row);
    },
    drop() {
      db?.close();
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

async function postgresDatabase(adminUrl: string, tag: string): Promise<BenchDatabase> {
  const name = `mixtape_bench_entries_${process.pid}_${tag}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let client: pg.Client | undefined;
  const open = async () => {
    if (client === undefined) {
      client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
    }
    return client;
  };
  return {
    url: url.toString(),
    async count() {
      const c = await open();
      await c.query(`CREATE TABLE IF NOT EXISTS bench_writes (ins bigint, upd bigint, del bigint)`);
      await c.query(`INSERT INTO bench_writes SELECT 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM bench_writes)`);
      await c.query(`CREATE OR REPLACE FUNCTION bench_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN UPDATE bench_writes SET ins = ins + 1;
          ELSIF TG_OP = 'UPDATE' THEN UPDATE bench_writes SET upd = upd + 1;
          ELSE UPDATE bench_writes SET del = del + 1;
          END IF;
          RETURN NULL;
        END $$`);
      await c.query(`CREATE TRIGGER bench_count AFTER INSERT OR UPDATE OR DELETE ON playlist_songs
        FOR EACH ROW EXECUTE FUNCTION bench_count()`);
    },
    async uncount() {
      await (await open()).query('DROP TRIGGER bench_count ON playlist_songs');
    },
    async counter() {
      const { rows } = await (
        await open()
      ).query<{ ins: string; upd: string; del: string }>('SELECT ins, upd, del FROM bench_writes');
      const row = rows[0]!;
      return { ins: Number(row.ins), upd: Number(row.upd), del: Number(row.del) };
    },
    async drop() {
      await client?.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly ms: number;
}

async function call(url: string, method: string, path: string, body?: unknown, type = 'application/json') {
  const started = performance.now();
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: AUTH, ...(body === undefined ? {} : { 'content-type': type }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, ms: performance.now() - started } satisfies Answer;
}

function ok(answer: Answer, what: string): Answer {
  if (answer.status !== 200) throw new Error(`${what}: status ${answer.status}: ${answer.text.slice(0, 300)}`);
  return answer;
}

const songAt = (i: number) => 1 + (i % CATALOG);

async function createPlaylist(url: string, size: number): Promise<number> {
  const songIds = Array.from({ length: size }, (_, i) => songAt(i));
  const answer = ok(await call(url, 'POST', '/v3/playlist', { name: `Entries ${size}`, songIds }), 'create');
  return (JSON.parse(answer.text) as { id: number }).id;
}

interface EntriesAnswer {
  readonly version: number;
  readonly entries: readonly { entry: string; id: number }[];
}

async function readEntries(url: string, id: number): Promise<EntriesAnswer> {
  return JSON.parse(ok(await call(url, 'GET', `/v3/playlist/${id}/entries`), 'entries').text) as EntriesAnswer;
}

interface EditsAnswer {
  readonly playlist: EntriesAnswer;
  readonly results: readonly { applied: boolean; entries?: string[]; reason?: string }[];
}

const edits = (url: string, id: number, body: object) => call(url, 'POST', `/v3/playlist/${id}/edits`, body);
const patch = (url: string, id: number, ops: object[]) =>
  call(url, 'PATCH', `/v3/playlist/${id}`, ops, 'application/json-patch+json');
const insertAt = (url: string, id: number, songId: number, position: number | undefined) =>
  call(url, 'POST', `/v3/playlist/${id}/songs`, {
    songIds: [songId],
    ...(position === undefined ? {} : { position }),
  });

// ---------------------------------------------------------------------------------------------------------------
// The cases

/**
 * One case on a playlist of `size` songs: `measured` is the request counted and timed; `undo` puts the playlist back
 * as it was (the same songs in the same order), given the measured answer.
 */
interface Case {
  readonly name: string;
  readonly request: string;
  readonly trees: readonly Tree[];
  measured(s: State): Promise<Answer>;
  undo(s: State, answer: Answer): Promise<void>;
}

/** The playlist a case runs on; `entries` only in this checkout (where `GET …/entries` exists). */
interface State {
  readonly url: string;
  readonly id: number;
  readonly size: number;
  entries: string[];
  songs: number[];
}

const mid = (s: State) => Math.floor(s.size / 2);
const NEW_SONG = 7;

function insertedEntry(answer: Answer): string {
  const entry = (JSON.parse(answer.text) as EditsAnswer).results[0]?.entries?.[0];
  if (entry === undefined) throw new Error(`no entry inserted: ${answer.text.slice(0, 300)}`);
  return entry;
}

async function removeEntry(s: State, entry: string): Promise<void> {
  ok(await edits(s.url, s.id, { ops: [{ op: 'remove', entry }] }), UNDO_FAILED);
}

const removeAt = async (s: State, position: number) => {
  ok(await patch(s.url, s.id, [{ op: 'remove', path: `/songs/${position}` }]), UNDO_FAILED);
};

const CASES: readonly Case[] = [
  {
    name: 'insert at the top',
    request: 'POST …/edits, after: null',
    trees: ['head'],
    measured: (s) => edits(s.url, s.id, { ops: [{ op: 'insert', songIds: [NEW_SONG], after: null }] }),
    undo: (s, answer) => removeEntry(s, insertedEntry(answer)),
  },
  {
    name: 'insert in the middle',
    request: 'POST …/edits, after: the middle entry',
    trees: ['head'],
    measured: (s) =>
      edits(s.url, s.id, { ops: [{ op: 'insert', songIds: [NEW_SONG], after: s.entries[mid(s) - 1] ?? null }] }),
    undo: (s, answer) => removeEntry(s, insertedEntry(answer)),
  },
  {
    name: 'insert at the end',
    request: 'POST …/edits, no anchor',
    trees: ['head'],
    measured: (s) => edits(s.url, s.id, { ops: [{ op: 'insert', songIds: [NEW_SONG] }] }),
    undo: (s, answer) => removeEntry(s, insertedEntry(answer)),
  },
  {
    name: 'move top → end',
    request: 'POST …/edits, move, no anchor',
    trees: ['head'],
    measured: (s) => edits(s.url, s.id, { ops: [{ op: 'move', entry: s.entries[0] }] }),
    undo: async (s) => {
      ok(await edits(s.url, s.id, { ops: [{ op: 'move', entry: s.entries[0], after: null }] }), UNDO_FAILED);
    },
  },
  {
    name: 'remove in the middle',
    request: 'POST …/edits, remove',
    trees: ['head'],
    measured: (s) => edits(s.url, s.id, { ops: [{ op: 'remove', entry: s.entries[mid(s)] }] }),
    undo: async (s) => {
      const op = { op: 'insert', songIds: [s.songs[mid(s)]], after: s.entries[mid(s) - 1] ?? null };
      s.entries[mid(s)] = insertedEntry(ok(await edits(s.url, s.id, { ops: [op] }), UNDO_FAILED));
    },
  },
  {
    name: 'insert at the top',
    request: 'POST …/songs, position 0',
    trees: ['head', 'before'],
    measured: (s) => insertAt(s.url, s.id, NEW_SONG, 0),
    undo: (s) => removeAt(s, 0),
  },
  {
    name: 'insert in the middle',
    request: 'POST …/songs, position size/2',
    trees: ['head', 'before'],
    measured: (s) => insertAt(s.url, s.id, NEW_SONG, mid(s)),
    undo: (s) => removeAt(s, mid(s)),
  },
  {
    name: 'insert at the end',
    request: 'POST …/songs, position size',
    trees: ['head', 'before'],
    measured: (s) => insertAt(s.url, s.id, NEW_SONG, s.size),
    undo: (s) => removeAt(s, s.size),
  },
  {
    name: 'move top → end',
    request: 'PATCH, JSON Patch move /songs/0 → /songs/-',
    trees: ['head', 'before'],
    measured: (s) => patch(s.url, s.id, [{ op: 'move', from: '/songs/0', path: '/songs/-' }]),
    undo: async (s) => {
      ok(await patch(s.url, s.id, [{ op: 'move', from: `/songs/${s.size - 1}`, path: '/songs/0' }]), UNDO_FAILED);
    },
  },
  {
    name: 'remove in the middle',
    request: 'PATCH, JSON Patch remove /songs/size/2',
    trees: ['head', 'before'],
    measured: (s) => patch(s.url, s.id, [{ op: 'remove', path: `/songs/${mid(s)}` }]),
    undo: async (s) => {
      const add = { op: 'add', path: `/songs/${mid(s)}`, value: { id: s.songs[mid(s)] } };
      ok(await patch(s.url, s.id, [add]), UNDO_FAILED);
    },
  },
];

const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);

async function measureCase(
  c: Case,
  s: State,
  db: BenchDatabase,
  options: EntryWritesOptions,
): Promise<{ rows: CaseResult['rows']; ms: number[] }> {
  const rows: { ins: number; upd: number; del: number }[] = [];
  await db.count();
  try {
    for (let i = 0; i < options.counted; i++) {
      const before = await db.counter();
      const answer = ok(await c.measured(s), `${c.name} (${c.request})`);
      const after = await db.counter();
      rows.push({ ins: after.ins - before.ins, upd: after.upd - before.upd, del: after.del - before.del });
      await c.undo(s, answer);
    }
  } finally {
    await db.uncount();
  }
  const ms: number[] = [];
  for (let i = -options.warmup; i < options.runs; i++) {
    const answer = ok(await c.measured(s), `${c.name} (${c.request})`);
    if (i >= 0) ms.push(answer.ms);
    await c.undo(s, answer);
  }
  return { rows, ms: sorted(ms) };
}

/** `inserts` inserts of one song after the middle entry, kept (no undo), each counted. */
async function measureSamePlace(s: State, db: BenchDatabase, inserts: number, dialect: Dialect) {
  const rows: number[] = [];
  await db.count();
  try {
    for (let i = 0; i < inserts; i++) {
      const before = await db.counter();
      const op = { op: 'insert', songIds: [NEW_SONG], after: s.entries[mid(s) - 1] ?? null };
      ok(await edits(s.url, s.id, { ops: [op] }), 'insert at one place');
      rows.push(total(await db.counter()) - total(before));
    }
  } finally {
    await db.uncount();
  }
  return { dialect, size: s.size, inserts, rows } satisfies SamePlaceResult;
}

// ---------------------------------------------------------------------------------------------------------------
// A merge far from its base

/**
 * `--far` edits on a playlist of 200 songs after its version `base` was read: every fifth removes an entry of the
 * base's middle, the others insert at the end or move a song to the top. Then one merged edit made on `base` (each
 * insert anchored on an entry removed since, or on one still there, and a move), timed, and the same ops on the
 * current version, timed too. A base one version further back is answered 410 (at most 1 000 versions).
 */
async function measureFar(url: string, options: EntryWritesOptions, dialect: Dialect): Promise<FarResult> {
  const farMs: number[] = [];
  const currentMs: number[] = [];
  let olderStatus = 0;
  let results = '';
  let opsCount = 0;
  for (let run = 0; run < options.farRuns; run++) {
    const id = await createPlaylist(url, 200);
    // One edit first, so that the base is version 2 and a base one version further back is a version (1) too.
    ok(await edits(url, id, { ops: [{ op: 'insert', songIds: [NEW_SONG] }] }), 'far edit');
    const base = await readEntries(url, id);
    const names = base.entries.map((e) => e.entry);
    const removed: string[] = [];
    for (let i = 0; i < options.far; i++) {
      let op: object;
      if (i % 5 === 0 && removed.length < 80) {
        const entry = names[60 + removed.length]!;
        removed.push(entry);
        op = { op: 'remove', entry };
      } else if (i % 2 === 0) {
        op = { op: 'insert', songIds: [songAt(i)] };
      } else {
        op = { op: 'move', entry: names[150 + (i % 40)], after: null };
      }
      ok(await edits(url, id, { ops: [op] }), `far edit ${i}`);
    }
    const ops = [
      ...removed.slice(0, 10).map((after, i) => ({ op: 'insert', songIds: [songAt(i)], after })),
      ...names.slice(0, 5).map((after, i) => ({ op: 'insert', songIds: [songAt(i)], after })),
      { op: 'move', entry: names[20], after: names[40] },
    ];
    opsCount = ops.length;
    if (options.far >= MERGE_VERSIONS) {
      // Past the bound: refused, and nothing applied.
      const older = await edits(url, id, { base: base.version - 1, ops });
      olderStatus = older.status;
      if (older.status === 200) throw new Error(`a base ${options.far + 1} versions back was answered 200`);
    }
    const far = ok(await edits(url, id, { base: base.version, ops }), 'far merge');
    const answer = JSON.parse(far.text) as EditsAnswer;
    if (answer.playlist.version - 1 - base.version !== options.far) throw new Error('not as far back as asked');
    results = `${answer.results.filter((r) => r.applied).length} of ${ops.length} applied`;
    farMs.push(far.ms);
    const live = answer.playlist.entries.map((e) => e.entry);
    const current = [
      ...live.slice(60, 75).map((after, i) => ({ op: 'insert', songIds: [songAt(i)], after })),
      { op: 'move', entry: live[20], after: live[40] },
    ];
    currentMs.push(ok(await edits(url, id, { base: answer.playlist.version, ops: current }), 'current merge').ms);
  }
  return {
    dialect,
    versionsBack: options.far,
    songs: 200,
    ops: opsCount,
    farMs: sorted(farMs),
    currentMs: sorted(currentMs),
    olderStatus,
    results,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The run

async function runTree(
  tree: Tree,
  root: string,
  dialect: Dialect,
  options: EntryWritesOptions,
  log: (line: string) => void,
): Promise<{ cases: CaseResult[]; samePlace: SamePlaceResult[]; far?: FarResult }> {
  const db = dialect === 'sqlite' ? sqliteDatabase() : await postgresDatabase(options.pgUrl, tree);
  const logFile = join(ROOT, 'bench/data', `entry-writes-${tree}-${dialect}.log`);
  mkdirSync(dirname(logFile), { recursive: true });
  const cases: CaseResult[] = [];
  const samePlace: SamePlaceResult[] = [];
  let far: FarResult | undefined;
  try {
    const service = await startService({
      databaseUrl: db.url,
      logFile,
      root,
      fromSource: true,
      profile: false,
      cpu: os.cpus().length >= 2 ? 0 : undefined,
      settings: {
        LOG_LEVEL: 'warn',
        MIXTAPE_BOOTSTRAP_USER: `${USER}:${PASSWORD}`,
        MIXTAPE_SONGS_MAX: String(Math.max(1000, 2 * Math.max(...options.sizes))),
        MIXTAPE_BODY_LIMIT: String(1024 * 1024),
        // Sequential requests, some long: nothing to shed.
        MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0',
      },
    });
    try {
      for (const size of options.sizes) {
        const id = await createPlaylist(service.url, size);
        const state: State = {
          url: service.url,
          id,
          size,
          entries: tree === 'head' ? (await readEntries(service.url, id)).entries.map((e) => e.entry) : [],
          songs: Array.from({ length: size }, (_, i) => songAt(i)),
        };
        for (const c of CASES.filter((x) => x.trees.includes(tree))) {
          const { rows, ms } = await measureCase(c, state, db, options);
          const result = { tree, dialect, size, name: c.name, request: c.request, rows, ms };
          cases.push(result);
          log(`  ${tree} ${dialect} ${size} ${c.name} (${c.request}): ${describeCase(result)}`);
        }
        if (tree === 'head' && options.samePlace > 0) {
          const run = await measureSamePlace(state, db, options.samePlace, dialect);
          samePlace.push(run);
          log(`  ${dialect} ${size} ${describeSamePlace(run)}`);
        }
      }
      if (tree === 'head' && options.far > 0) {
        far = await measureFar(service.url, options, dialect);
        log(`  ${dialect} merge ${options.far} versions back: ${JSON.stringify(far)}`);
      }
    } finally {
      await service.stop();
    }
  } finally {
    await db.drop();
  }
  return far === undefined ? { cases, samePlace } : { cases, samePlace, far };
}

const median = (values: readonly number[]) => sorted(values)[Math.floor((values.length - 1) / 2)] ?? NaN;
const total = (r: { ins: number; upd: number; del: number }) => r.ins + r.upd + r.del;

function describeSamePlace(r: SamePlaceResult): string {
  const sum = r.rows.reduce((a, b) => a + b, 0);
  const rewrites = r.rows.filter((n) => n > 2).length;
  return (
    `${r.inserts} inserts after one entry: ${(sum / r.inserts).toFixed(2)} rows each on average, at most ` +
    `${Math.max(...r.rows)}; ${rewrites} of them wrote more than 2 rows`
  );
}

function describeCase(c: CaseResult): string {
  const totals = c.rows.map(total);
  const rows = totals.every((t) => t === totals[0])
    ? String(totals[0])
    : `${Math.min(...totals)}–${Math.max(...totals)}`;
  const r = c.rows[0]!;
  return `rows ${rows} (ins ${r.ins}, upd ${r.upd}, del ${r.del}), median ${median(c.ms).toFixed(2)} ms`;
}

export async function measureEntryWrites(
  options: EntryWritesOptions,
  log: (line: string) => void = console.log,
): Promise<EntryWritesResults> {
  const loadAverage = os.loadavg();
  if (os.cpus().length >= 2) pinToCpu(process.pid, 1);
  const cases: CaseResult[] = [];
  const samePlace: SamePlaceResult[] = [];
  const far: FarResult[] = [];
  for (const dialect of options.dialects) {
    // Back to back on each database: this checkout, then the other.
    const trees: [Tree, string][] = [['head', ROOT]];
    if (options.before !== undefined) trees.push(['before', resolve(options.before)]);
    for (const [tree, root] of trees) {
      log(`${tree} (${root}), ${dialect}:`);
      const done = await runTree(tree, root, dialect, options, log);
      cases.push(...done.cases);
      samePlace.push(...done.samePlace);
      if (done.far !== undefined) far.push(done.far);
    }
  }
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    command: options.command,
    machine: { cpuModel: cpus[0]?.model.trim() ?? 'unknown', cores: cpus.length, loadAverage },
    runs: options.runs,
    counted: options.counted,
    cases,
    samePlace,
    far,
  };
}

/** The results as Markdown tables: rows written and median ms by length, one table per database. */
export function formatEntryWrites(results: EntryWritesResults): string {
  const lines: string[] = [];
  const sizes = [...new Set(results.cases.map((c) => c.size))];
  for (const dialect of [...new Set(results.cases.map((c) => c.dialect))]) {
    lines.push(
      `\n${dialect}: rows written to playlist_songs per edit (ins+upd+del, of ${results.counted} counted), median ms of ${results.runs}`,
    );
    lines.push(`| commit | edit | request | ${sizes.map((n) => `${n}: rows, ms`).join(' | ')} |`);
    lines.push(`| --- | --- | --- | ${sizes.map(() => '---').join(' | ')} |`);
    const keys = [
      ...new Set(results.cases.filter((c) => c.dialect === dialect).map((c) => `${c.tree}|${c.name}|${c.request}`)),
    ];
    for (const key of keys) {
      const [tree, name, request] = key.split('|') as [Tree, string, string];
      const cells = sizes.map((size) => {
        const c = results.cases.find(
          (x) =>
            x.dialect === dialect && x.tree === tree && x.name === name && x.request === request && x.size === size,
        );
        if (c === undefined) return '';
        const totals = c.rows.map(total);
        const rows = totals.every((t) => t === totals[0])
          ? String(totals[0])
          : `${Math.min(...totals)}–${Math.max(...totals)}`;
        return `${rows}, ${median(c.ms).toFixed(2)}`;
      });
      lines.push(`| ${tree} | ${name} | ${request} | ${cells.join(' | ')} |`);
    }
  }
  for (const r of results.samePlace) lines.push(`\n${r.dialect}, ${r.size} songs: ${describeSamePlace(r)}`);
  for (const f of results.far) {
    lines.push(
      `\n${f.dialect}: a merged edit of ${f.ops} ops on a base ${f.versionsBack} versions back (${f.songs} songs, ${f.results}): ` +
        `${f.farMs.map((ms) => ms.toFixed(1)).join(', ')} ms; the same on the current version ${f.currentMs
          .map((ms) => ms.toFixed(1))
          .join(', ')} ms; a base ${f.versionsBack + 1} back: ${f.olderStatus}`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dialect: { type: 'string', default: 'sqlite,postgres' },
      sizes: { type: 'string', default: '10,100,1000,10000' },
      runs: { type: 'string', default: '20' },
      counted: { type: 'string', default: '5' },
      warmup: { type: 'string', default: '3' },
      before: { type: 'string' },
      far: { type: 'string', default: '1000' },
      'far-runs': { type: 'string', default: '3' },
      'same-place': { type: 'string', default: '300' },
      'pg-url': { type: 'string', default: 'postgres://root@127.0.0.1:5432/postgres' },
      out: { type: 'string' },
    },
  });
  const results = await measureEntryWrites({
    dialects: values.dialect.split(',') as Dialect[],
    sizes: values.sizes.split(',').map(Number),
    runs: Number(values.runs),
    counted: Number(values.counted),
    warmup: Number(values.warmup),
    before: values.before,
    far: Number(values.far),
    farRuns: Number(values['far-runs']),
    samePlace: Number(values['same-place']),
    pgUrl: values['pg-url'],
    command: `npx tsx bench/entry-writes.ts ${process.argv.slice(2).join(' ')}`.trim(),
  });
  console.log(formatEntryWrites(results));
  if (values.out !== undefined) {
    mkdirSync(dirname(values.out), { recursive: true });
    writeFileSync(values.out, `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\nResults: ${values.out}`);
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
