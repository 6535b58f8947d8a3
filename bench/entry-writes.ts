/**
 * What one edit writes and costs by the playlist's length: inserts, a move and a remove, by entries and by position
 * or JSON Patch, as rows written to `playlist_songs` (counted by triggers, there only for the counted requests) and
 * time, each request undone after, in this checkout and another (`--before DIR`), both from source; then a merge on a
 * base `--far` versions back, and 300 inserts after one entry (an order key past 48 characters renews every key).
 */
import { resolve } from 'node:path';
import { MERGE_VERSIONS } from '../src/playlists/edits/edits.service.js';
import { call, ok, type Answer } from './load.js';
import { render, table } from './results.js';
import {
  longPlaylistSettings,
  ROOT,
  openSql,
  withService,
  type Dialect,
  type OwnScenario,
  type RunContext,
  type Sql,
} from './service.js';

type Tree = 'head' | 'before';
const [RUNS, COUNTED, WARMUP, SAME_PLACE, NEW_SONG] = [20, 5, 3, 300, 7];
const UNDO = 'the request that undoes the measured one failed';

const COUNT = {
  sqlite: `CREATE TABLE IF NOT EXISTS bench_writes (ins INTEGER, upd INTEGER, del INTEGER);
    INSERT INTO bench_writes SELECT 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM bench_writes);
    CREATE TRIGGER bench_ins AFTER INSERT ON playlist_songs BEGIN UPDATE bench_writes SET ins = ins + 1; END;
    CREATE TRIGGER bench_upd AFTER UPDATE ON playlist_songs BEGIN UPDATE bench_writes SET upd = upd + 1; END;
    CREATE TRIGGER bench_del AFTER DELETE ON playlist_songs BEGIN UPDATE bench_writes SET del = del + 1; END;`,
  postgres: `CREATE TABLE IF NOT EXISTS bench_writes (ins bigint, upd bigint, del bigint);
    INSERT INTO bench_writes SELECT 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM bench_writes);
    CREATE OR REPLACE FUNCTION bench_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF TG_OP = 'INSERT' THEN UPDATE bench_writes SET ins = ins + 1;
      ELSIF TG_OP = 'UPDATE' THEN UPDATE bench_writes SET upd = upd + 1;
      ELSE UPDATE bench_writes SET del = del + 1; END IF;
      RETURN NULL; END $$;
    CREATE TRIGGER bench_count AFTER INSERT OR UPDATE OR DELETE ON playlist_songs FOR EACH ROW EXECUTE FUNCTION bench_count();`,
};
const UNCOUNT = {
  sqlite: 'DROP TRIGGER bench_ins; DROP TRIGGER bench_upd; DROP TRIGGER bench_del;',
  postgres: 'DROP TRIGGER bench_count ON playlist_songs',
};

type Rows = { ins: number; upd: number; del: number };
type Counter = Record<keyof Rows, string | number>;
const counter = async (sql: Sql): Promise<Rows> => {
  const [row] = await sql.all<Counter>('SELECT ins, upd, del FROM bench_writes');
  return { ins: Number(row!.ins), upd: Number(row!.upd), del: Number(row!.del) };
};
const total = (r: Rows) => r.ins + r.upd + r.del;

/** The demo catalog's songs (ids 1 to 240) are the songs of every playlist here. */
const songAt = (i: number) => 1 + (i % 240);

/** The playlist a case runs on; `entries` only in a checkout where `GET …/entries` exists. */
interface State {
  readonly url: string;
  readonly id: number;
  readonly size: number;
  entries: string[];
}

/** Writes are answered in brief (`Prefer: return=minimal`), as an app that keeps a copy asks for them. */
const BRIEF = { prefer: 'return=minimal' };
const bench = (s: { url: string }, method: string, path: string, body?: unknown, type?: string, brief = true) =>
  call(s.url, 'bench', method, path, body, type, brief ? BRIEF : {});
const edits = (s: State, body: object, brief = true) =>
  bench(s, 'POST', `/v3/playlist/${s.id}/edits`, body, undefined, brief);
const patch = (s: State, ops: object[]) =>
  bench(s, 'PATCH', `/v3/playlist/${s.id}`, ops, 'application/json-patch+json');
const insertAt = (s: State, position: number) =>
  bench(s, 'POST', `/v3/playlist/${s.id}/songs`, { songIds: [NEW_SONG], position });
const mid = (s: State) => Math.floor(s.size / 2);

function insertedEntry(answer: Answer): string {
  const entry = (JSON.parse(answer.text) as { results: { entries?: string[] }[] }).results[0]?.entries?.[0];
  if (entry === undefined) throw new Error(`no entry inserted: ${answer.text.slice(0, 300)}`);
  return entry;
}

const insertAfter = (s: State, after: string | null | undefined, songId = NEW_SONG) =>
  edits(s, { ops: [{ op: 'insert', songIds: [songId], ...(after === undefined ? {} : { after }) }] });
const removeEntry = async (s: State, answer: Answer) =>
  void ok(await edits(s, { ops: [{ op: 'remove', entry: insertedEntry(answer) }] }), UNDO);
const removeAt = async (s: State, position: number) =>
  void ok(await patch(s, [{ op: 'remove', path: `/songs/${position}` }]), UNDO);

type Case = [name: string, request: string, trees: Tree[], measured: (s: State) => Promise<Answer>, undo: Undo];
type Undo = (s: State, answer: Answer) => Promise<void>;
const undoMove: Undo = async (s) =>
  void ok(await edits(s, { ops: [{ op: 'move', entry: s.entries[0], after: null }] }), UNDO);
const undoRemove: Undo = async (s) => {
  s.entries[mid(s)] = insertedEntry(ok(await insertAfter(s, before(s), songAt(mid(s))), UNDO));
};
const undoMoveAt: Undo = async (s) =>
  void ok(await patch(s, [{ op: 'move', from: `/songs/${s.size - 1}`, path: '/songs/0' }]), UNDO);
const undoRemoveAt: Undo = async (s) =>
  void ok(await patch(s, [{ op: 'add', path: `/songs/${mid(s)}`, value: { id: songAt(mid(s)) } }]), UNDO);

const [HEAD, BOTH]: [Tree[], Tree[]] = [['head'], ['head', 'before']];
const before = (s: State) => s.entries[mid(s) - 1] ?? null;
const insertMiddle = (s: State) => insertAfter(s, before(s));
const insertMiddleAt = (s: State) => insertAt(s, mid(s));
const moveTop = (s: State) => edits(s, { ops: [{ op: 'move', entry: s.entries[0] }] });
const removeMiddle = (s: State) => edits(s, { ops: [{ op: 'remove', entry: s.entries[mid(s)] }] });
const moveTopAt = (s: State) => patch(s, [{ op: 'move', from: '/songs/0', path: '/songs/-' }]);
const removeMiddleAt = (s: State) => patch(s, [{ op: 'remove', path: `/songs/${mid(s)}` }]);

/** The cases: the request counted and timed, and the one that puts the playlist back as it was. */
const CASES: readonly Case[] = [
  ['insert at the top', 'POST …/edits, after: null', HEAD, (s) => insertAfter(s, null), removeEntry],
  ['insert in the middle', 'POST …/edits, after: the middle entry', HEAD, insertMiddle, removeEntry],
  ['insert at the end', 'POST …/edits, no anchor', HEAD, (s) => insertAfter(s, undefined), removeEntry],
  ['move top → end', 'POST …/edits, move, no anchor', HEAD, moveTop, undoMove],
  ['remove in the middle', 'POST …/edits, remove', HEAD, removeMiddle, undoRemove],
  ['insert at the top', 'POST …/songs, position 0', BOTH, (s) => insertAt(s, 0), (s) => removeAt(s, 0)],
  ['insert in the middle', 'POST …/songs, position size/2', BOTH, insertMiddleAt, (s) => removeAt(s, mid(s))],
  ['insert at the end', 'POST …/songs, position size', BOTH, (s) => insertAt(s, s.size), (s) => removeAt(s, s.size)],
  ['move top → end', 'PATCH, JSON Patch move /songs/0 → /songs/-', BOTH, moveTopAt, undoMoveAt],
  ['remove in the middle', 'PATCH, JSON Patch remove /songs/size/2', BOTH, removeMiddleAt, undoRemoveAt],
];

/** Rows written by each of `count` requests of `measure`, each then undone (the triggers there only meanwhile). */
async function counted(
  sql: Sql,
  dialect: Dialect,
  count: number,
  measure: () => Promise<Answer>,
  undo?: (a: Answer) => Promise<void>,
) {
  const rows: Rows[] = [];
  await sql.run(COUNT[dialect]);
  try {
    for (let i = 0; i < count; i++) {
      const before = await counter(sql);
      const answer = await measure();
      const after = await counter(sql);
      rows.push({ ins: after.ins - before.ins, upd: after.upd - before.upd, del: after.del - before.del });
      await undo?.(answer);
    }
  } finally {
    await sql.run(UNCOUNT[dialect]);
  }
  return rows;
}

const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
const median = (values: readonly number[]) => sorted(values)[Math.floor((values.length - 1) / 2)] ?? NaN;

async function createPlaylist(url: string, size: number): Promise<number> {
  const songIds = Array.from({ length: size }, (_, i) => songAt(i));
  const created = ok(await bench({ url }, 'POST', '/v3/playlist', { name: `Entries ${size}`, songIds }), 'create');
  return (JSON.parse(created.text) as { id: number }).id;
}

type Entries = { version: number; entries: { entry: string }[] };
const readEntries = async (url: string, id: number) =>
  JSON.parse(ok(await bench({ url }, 'GET', `/v3/playlist/${id}/entries`), 'entries').text) as Entries;

/**
 * `far` edits on a playlist of 200 songs after its version `base` was read (every fifth removes an entry of the
 * base's middle, the others insert at the end or move a song to the top), then one merged edit on `base` (inserts
 * anchored on entries removed since and on some still there, and a move), timed, and the same ops on the current
 * version. Past the service's bound, a base one version further back must be refused.
 */
async function measureFar(url: string, far: number, runs: number) {
  const [farMs, currentMs] = [[] as number[], [] as number[]];
  let [olderStatus, results, ops] = [0, '', 0];
  for (let run = 0; run < runs; run++) {
    const s: State = { url, id: await createPlaylist(url, 200), size: 200, entries: [] };
    // One edit first, so that a base one version further back is a version too.
    ok(await insertAfter(s, undefined), 'far edit');
    const base = await readEntries(url, s.id);
    const names = base.entries.map((e) => e.entry);
    const removed: string[] = [];
    for (let i = 0; i < far; i++) {
      const entry = names[60 + removed.length]!;
      const op =
        i % 5 === 0 && removed.length < 80
          ? (removed.push(entry), { op: 'remove', entry })
          : i % 2 === 0
            ? { op: 'insert', songIds: [songAt(i)] }
            : { op: 'move', entry: names[150 + (i % 40)], after: null };
      ok(await edits(s, { ops: [op] }), `far edit ${i}`);
    }
    const merged = [
      ...removed.slice(0, 10).map((after, i) => ({ op: 'insert', songIds: [songAt(i)], after })),
      ...names.slice(0, 5).map((after, i) => ({ op: 'insert', songIds: [songAt(i)], after })),
      { op: 'move', entry: names[20], after: names[40] },
    ];
    ops = merged.length;
    if (far >= MERGE_VERSIONS) {
      olderStatus = (await edits(s, { base: base.version - 1, ops: merged }, false)).status;
      if (olderStatus === 200) throw new Error(`a base ${far + 1} versions back was answered 200`);
    }
    const answer = ok(await edits(s, { base: base.version, ops: merged }, false), 'far merge');
    const body = JSON.parse(answer.text) as { playlist: Entries; results: { applied: boolean }[] };
    if (body.playlist.version - 1 - base.version !== far) throw new Error('not as far back as asked');
    results = `${body.results.filter((r) => r.applied).length} of ${merged.length} applied`;
    farMs.push(answer.ms);
    const live = body.playlist.entries.map((e) => e.entry);
    const current = [
      ...live.slice(60, 75).map((after, i) => ({ op: 'insert', songIds: [songAt(i)], after })),
      { op: 'move', entry: live[20], after: live[40] },
    ];
    currentMs.push(ok(await edits(s, { base: body.playlist.version, ops: current }, false), 'current merge').ms);
  }
  const times = { farMs: sorted(farMs), currentMs: sorted(currentMs) };
  return { versionsBack: far, songs: 200, ops, ...times, olderStatus, results };
}

async function runTree(context: RunContext, tree: Tree, root: string) {
  const sizes = (context.option('sizes') ?? '10,100,1000,10000').split(',').map(Number);
  const settings = longPlaylistSettings(sizes);
  const spec = { name: `entry-writes-${tree}`, settings, root, fromSource: true };
  return withService(context, spec, async ({ url, databaseUrl }) => {
    const sql = await openSql(databaseUrl);
    const cases = [];
    const samePlace = [];
    try {
      for (const size of sizes) {
        const id = await createPlaylist(url, size);
        // A checkout with entries (`GET …/entries`) runs every case; an older one, those it has.
        const listed = await bench({ url }, 'GET', `/v3/playlist/${id}/entries`);
        const entries =
          listed.status === 200 ? (JSON.parse(listed.text) as Entries).entries.map((e) => e.entry) : undefined;
        const s: State = { url, id, size, entries: entries ?? [] };
        for (const [name, request, trees, measured, undo] of CASES.filter(
          (c) => entries !== undefined || c[2].includes(tree),
        )) {
          const measuredOk = async () => ok(await measured(s), `${name} (${request})`);
          const rows = await counted(sql, context.dialect, COUNTED, measuredOk, (answer) => undo(s, answer));
          const ms: number[] = [];
          for (let i = -WARMUP; i < RUNS; i++) {
            const answer = await measuredOk();
            if (i >= 0) ms.push(answer.ms);
            await undo(s, answer);
          }
          cases.push({ tree, size, name, request, rows, ms: sorted(ms), trees: trees.length });
          console.error(
            `  ${tree} ${size} ${name} (${request}): rows ${rows.map(total).join(',')}, median ${median(ms)} ms`,
          );
        }
        if (tree === 'head') {
          const insert = async () => ok(await insertAfter(s, before(s)), 'insert at one place');
          const rows = await counted(sql, context.dialect, SAME_PLACE, insert);
          const totals = rows.map(total);
          const averageRows = totals.reduce((a, b) => a + b, 0) / totals.length;
          const [mostRows, overTwo] = [Math.max(...totals), totals.filter((n) => n > 2).length];
          samePlace.push({ size, inserts: SAME_PLACE, averageRows, mostRows, overTwo, rows: totals });
        }
      }
    } finally {
      await sql.close();
    }
    const far = context.int('far', 1000);
    const farRuns = context.int('far-runs', 3);
    return { cases, samePlace, far: tree === 'head' && far > 0 ? [await measureFar(url, far, farRuns)] : [] };
  });
}

async function entryWrites(context: RunContext) {
  const head = await runTree(context, 'head', ROOT);
  const dir = context.option('before');
  const other = dir === undefined ? undefined : await runTree(context, 'before', resolve(dir));
  const cases = [...head.cases, ...(other?.cases ?? [])];
  return { dialect: context.dialect, runs: RUNS, counted: COUNTED, ...head, cases };
}

/** Rows written (ins + upd + del, the range of the counted requests) and the median ms, by length. */
function formatEntryWrites(r: Awaited<ReturnType<typeof entryWrites>>): string {
  const sizes = [...new Set(r.cases.map((c) => c.size))];
  const key = (c: { tree: string; name: string; request: string }) => `${c.tree}|${c.name}|${c.request}`;
  const rows = [...new Set(r.cases.map(key))].map((k) => [
    ...k.split('|'),
    ...sizes.map((size) => {
      const c = r.cases.find((x) => key(x) === k && x.size === size);
      const [least, most] = [Math.min(...(c?.rows.map(total) ?? [])), Math.max(...(c?.rows.map(total) ?? []))];
      return c === undefined ? '' : `${least === most ? most : `${least}–${most}`}, ${median(c.ms).toFixed(2)}`;
    }),
  ]);
  const { samePlace, far } = r;
  return [
    `entry-writes (${r.dialect}): rows written to playlist_songs (of ${r.counted} counted), median ms of ${r.runs}`,
    table(['commit', 'edit', 'request', ...sizes.map((n) => `${n}: rows, ms`)].join('|'), rows),
    ...render({ samePlace: samePlace.map(({ rows: _rows, ...p }) => p), far }),
  ].join('\n');
}

export const ENTRY_WRITES: OwnScenario<Awaited<ReturnType<typeof entryWrites>>> = {
  ...{ name: 'entry-writes', seconds: 0, run: entryWrites, format: formatEntryWrites },
  description: 'the rows one edit writes, and its time, by the length of the playlist',
};
