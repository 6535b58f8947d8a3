/**
 * What the everyday requests cost by the playlist's length: a create, reads (the playlist, a page of its entries),
 * writes answered in brief (a merged insert, a JSON Patch op, songs added, a rename) and the history's requests (the
 * diff of one change, a past version, a restore), one request at a time on a playlist of each length, each write
 * undone after so that the length stays the same; in this checkout and another (`--before DIR`), both from source.
 */
import { resolve } from 'node:path';
import { call, ok, type Answer } from './load.js';
import { ratio, table } from './results.js';
import { ROOT, longPlaylistSettings, withService, type OwnScenario, type RunContext } from './service.js';

type Tree = 'head' | 'before';
const [WARMUP, NEW_SONG, PAGE, RENAMED] = [3, 7, 100, 'Renamed'];
const UNDO = 'the request that undoes the measured one failed';
const [JSON_PATCH, MERGE_PATCH] = ['application/json-patch+json', 'application/merge-patch+json'];

/** The demo catalog's songs (ids 1 to 240) are the songs of every playlist here. */
const songAt = (i: number) => 1 + (i % 240);
const songsOf = (size: number) => Array.from({ length: size }, (_, i) => songAt(i));

/**
 * The playlist the operations run on: `middle`, the entry in its middle (read before a merged insert), and
 * `version`, the version a one-song insert made before the history's requests (`version - 1` has `size` songs).
 */
interface State {
  readonly url: string;
  readonly id: number;
  readonly size: number;
  readonly name: string;
  middle: string;
  version: number;
}

/** Writes are answered in brief (`Prefer: return=minimal`), as an app that keeps a copy asks for them. */
const BRIEF = { prefer: 'return=minimal' };
const bench = (url: string, method: string, path: string, body?: unknown, type?: string, brief = false) =>
  call(url, 'bench', method, path, body, type, brief ? BRIEF : {});
const read = (s: State, path = '') => bench(s.url, 'GET', `/v3/playlist/${s.id}${path}`);
const write = (s: State, method: string, path: string, body: unknown, type?: string) =>
  bench(s.url, method, `/v3/playlist/${s.id}${path}`, body, type, true);
const mid = (s: State) => Math.floor(s.size / 2);
const patch = (s: State, ops: object[]) => write(s, 'PATCH', '', ops, JSON_PATCH);
const removeAt = async (s: State, position: number) =>
  void ok(await patch(s, [{ op: 'remove', path: `/songs/${position}` }]), UNDO);
const restore = (s: State, version: number) => write(s, 'POST', '/restore', { version });

function insertedEntry(answer: Answer): string {
  const entry = (JSON.parse(answer.text) as { results: { entries?: string[] }[] }).results[0]?.entries?.[0];
  if (entry === undefined) throw new Error(`no entry inserted: ${answer.text.slice(0, 300)}`);
  return entry;
}

/** The newest version, from the history (an older checkout may answer a write in full, without a version). */
async function newestVersion(s: State): Promise<number> {
  const [newest] = JSON.parse(ok(await read(s, '/versions?limit=1'), 'versions').text) as { version: number }[];
  if (newest === undefined) throw new Error('no versions');
  return newest.version;
}

/** The one-song insert in the middle that the history's requests look back on; `removeOne` takes it out again. */
const removeOne = (s: State) => removeAt(s, mid(s));
async function insertOne(s: State): Promise<void> {
  ok(await write(s, 'POST', '/songs', { songIds: [NEW_SONG], position: mid(s) }), 'the one-song insert');
  try {
    s.version = await newestVersion(s);
  } catch (error) {
    await removeOne(s);
    throw error;
  }
}

/** What is wrong with an answer that the status does not tell (an older checkout may ignore a parameter). */
type Check = (s: State, body: unknown) => string | undefined;
const songCount = (songs: unknown) => (Array.isArray(songs) ? songs.length : undefined);
const hasSongs =
  (count: (s: State) => number): Check =>
  (s, body) => {
    const songs = songCount((body as { songs?: unknown }).songs);
    return songs === count(s) ? undefined : `${songs ?? 'no'} songs, not ${count(s)}`;
  };

/**
 * An operation: the request timed (`measured`), the one that puts the playlist back as it was (`undo`), and what
 * the runs need first and leave after (`prepare`, `finish`), none of them timed.
 */
interface Operation {
  readonly name: string;
  readonly request: string;
  readonly measured: (s: State) => Promise<Answer>;
  readonly check?: Check;
  readonly undo?: (s: State, answer: Answer) => Promise<void>;
  readonly prepare?: (s: State) => Promise<void>;
  readonly finish?: (s: State) => Promise<void>;
}

const OPERATIONS: readonly Operation[] = [
  {
    name: 'create',
    request: 'POST /v3/playlist {name, songIds}; DELETE after',
    measured: (s) => bench(s.url, 'POST', '/v3/playlist', { name: s.name, songIds: songsOf(s.size) }),
    check: hasSongs((s) => s.size),
    undo: async (s, answer) => {
      const { id } = JSON.parse(answer.text) as { id: number };
      ok(await bench(s.url, 'DELETE', `/v3/playlist/${id}`), UNDO);
    },
  },
  { name: 'get', request: 'GET /v3/playlist/{id}', measured: (s) => read(s), check: hasSongs((s) => s.size) },
  {
    name: 'entries page',
    request: `GET …/entries?limit=${PAGE}`,
    measured: (s) => read(s, `/entries?limit=${PAGE}`),
    check: (s, body) => {
      const entries = songCount((body as { entries?: unknown }).entries);
      return entries === Math.min(PAGE, s.size) ? undefined : `${entries ?? 'no'} entries, not a page of ${PAGE}`;
    },
  },
  {
    name: 'merged insert',
    request: 'POST …/edits, insert after the middle entry (brief)',
    prepare: async (s) => {
      const { entries } = JSON.parse(ok(await read(s, '/entries'), 'entries').text) as { entries: { entry: string }[] };
      s.middle = entries[mid(s)]?.entry ?? '';
    },
    measured: (s) => write(s, 'POST', '/edits', { ops: [{ op: 'insert', songIds: [NEW_SONG], after: s.middle }] }),
    undo: async (s, answer) =>
      void ok(await write(s, 'POST', '/edits', { ops: [{ op: 'remove', entry: insertedEntry(answer) }] }), UNDO),
  },
  {
    name: 'JSON Patch op',
    request: 'PATCH, JSON Patch remove /songs/size/2 (brief)',
    measured: (s) => patch(s, [{ op: 'remove', path: `/songs/${mid(s)}` }]),
    undo: async (s) =>
      void ok(await patch(s, [{ op: 'add', path: `/songs/${mid(s)}`, value: { id: songAt(mid(s)) } }]), UNDO),
  },
  {
    name: 'songs added',
    request: 'POST …/songs, one song at position size/2 (brief)',
    measured: (s) => write(s, 'POST', '/songs', { songIds: [NEW_SONG], position: mid(s) }),
    undo: (s) => removeAt(s, mid(s)),
  },
  {
    name: 'rename',
    request: 'PATCH, merge patch {name} (brief)',
    measured: (s) => write(s, 'PATCH', '', { name: RENAMED }, MERGE_PATCH),
    undo: async (s) => void ok(await write(s, 'PATCH', '', { name: s.name }, MERGE_PATCH), UNDO),
  },
  {
    name: 'diff of one change',
    request: 'GET …/diff?from=v-1&to=v, v a one-song insert',
    prepare: insertOne,
    measured: (s) => read(s, `/diff?from=${s.version - 1}&to=${s.version}`),
    check: (_s, body) => (Array.isArray(body) && body.length > 0 ? undefined : `not a patch: ${JSON.stringify(body)}`),
    finish: removeOne,
  },
  {
    name: 'past version',
    request: 'GET …/versions/v-1, the version before a one-song insert',
    prepare: insertOne,
    measured: (s) => read(s, `/versions/${s.version - 1}`),
    check: hasSongs((s) => s.size),
    finish: removeOne,
  },
  {
    name: 'restore',
    request: 'POST …/restore {version: v-1}, v a one-song insert (brief); restored back to v after',
    prepare: insertOne,
    measured: (s) => restore(s, s.version - 1),
    undo: async (s) => void ok(await restore(s, s.version), UNDO),
    finish: removeOne,
  },
];

const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
/** Of sorted values: the median (the lower of the two middle ones), and the p90 by nearest rank. */
const median = (ms: readonly number[]) => ms[Math.floor((ms.length - 1) / 2)] ?? NaN;
const p90 = (ms: readonly number[]) => ms[Math.max(0, Math.ceil(ms.length * 0.9) - 1)] ?? NaN;

type Measured =
  | { ms: number[]; median: number; p90: number; bytes: number; missing?: undefined }
  | { missing: string; ms?: undefined };

/**
 * `op` on the playlist: warm-up, then `runs` timed requests, each undone. In another checkout (`lenient`), an
 * operation it lacks or answers otherwise (its first request: refused, it wrote nothing) is noted, and the next runs.
 */
async function measureOperation(s: State, op: Operation, runs: number, lenient: boolean): Promise<Measured> {
  const ms: number[] = [];
  let bytes = 0;
  try {
    await op.prepare?.(s);
  } catch (error) {
    if (lenient) return { missing: `before the runs: ${String(error).slice(0, 300)}` };
    throw error;
  }
  for (let i = -WARMUP; i < runs; i++) {
    const answer = await op.measured(s);
    const problem =
      answer.status === 200 ? op.check?.(s, JSON.parse(answer.text)) : `status ${answer.status}: ${answer.text}`;
    if (problem !== undefined) {
      if (answer.status === 200) await op.undo?.(s, answer);
      if (lenient && i === -WARMUP) {
        await op.finish?.(s);
        return { missing: problem.slice(0, 300) };
      }
      throw new Error(`${op.name} (${op.request}): ${problem.slice(0, 300)}`);
    }
    if (i >= 0) ms.push(answer.ms);
    bytes = Buffer.byteLength(answer.text);
    await op.undo?.(s, answer);
  }
  await op.finish?.(s);
  const times = sorted(ms);
  return { ms: times, median: median(times), p90: p90(times), bytes };
}

async function runTree(context: RunContext, tree: Tree, root: string, sizes: readonly number[], runs: number) {
  const settings = longPlaylistSettings(sizes);
  const spec = { name: `long-playlists-${tree}`, settings, root, fromSource: true };
  return withService(context, spec, async ({ url }) => {
    const cases = [];
    for (const size of sizes) {
      const name = `Long ${size}`;
      const created = ok(await bench(url, 'POST', '/v3/playlist', { name, songIds: songsOf(size) }), 'create');
      const s: State = { url, id: (JSON.parse(created.text) as { id: number }).id, size, name, middle: '', version: 0 };
      for (const op of OPERATIONS) {
        const measured = await measureOperation(s, op, runs, tree === 'before');
        cases.push({ tree, size, name: op.name, request: op.request, ...measured });
        const figures = measured.missing ?? `median ${measured.median.toFixed(2)} ms, p90 ${measured.p90.toFixed(2)}`;
        console.error(`  ${tree} ${size} ${op.name}: ${figures}`);
      }
      // Every write was undone: the playlist is as it was made.
      const after = JSON.parse(ok(await read(s), 'the playlist after').text) as {
        name: string;
        songs: { id: number }[];
      };
      if (after.name !== name || after.songs.map((song) => song.id).join() !== songsOf(size).join())
        throw new Error(
          `the playlist of ${size} songs was left otherwise (${after.songs.length} songs, "${after.name}")`,
        );
      // Each length on its own: the next one's playlist is the only one there.
      ok(await bench(url, 'DELETE', `/v3/playlist/${s.id}`), 'delete');
    }
    return cases;
  });
}

function readSizes(value: string | undefined): number[] {
  const sizes = (value ?? '10,1000,10000').split(',').map((n) => (/^\d+$/.test(n.trim()) ? Number(n) : NaN));
  if (sizes.length === 0 || sizes.some((n) => !Number.isSafeInteger(n) || n < 1))
    throw new Error('--sizes must be playlist lengths of at least 1, as a,b,c');
  return sizes;
}

async function longPlaylists(context: RunContext) {
  const sizes = readSizes(context.option('sizes'));
  const runs = context.int('runs', 15);
  if (runs < 1) throw new Error('--runs must be at least 1');
  const dir = context.option('before');
  const head = await runTree(context, 'head', ROOT, sizes, runs);
  const other = dir === undefined ? [] : await runTree(context, 'before', resolve(dir), sizes, runs);
  const trees = { head: resolve(ROOT), ...(dir === undefined ? {} : { before: resolve(dir) }) };
  return { dialect: context.dialect, runs, warmup: WARMUP, sizes, trees, cases: [...head, ...other] };
}

/** 10000 as `10 000`. */
const spaced = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(1));

/** A table per checkout: an operation a row, the median ms (p90) by length, and the largest's ÷ the smallest's. */
function formatLongPlaylists(r: Awaited<ReturnType<typeof longPlaylists>>): string {
  const [smallest, largest] = [Math.min(...r.sizes), Math.max(...r.sizes)];
  const trees = [...new Set(r.cases.map((c) => c.tree))];
  return trees
    .flatMap((tree) => {
      const at = (name: string, size: number) => {
        const c = r.cases.find((x) => x.tree === tree && x.name === name && x.size === size);
        return c !== undefined && 'median' in c ? c : undefined;
      };
      const rows = OPERATIONS.map(({ name }) => {
        const cells = r.sizes.map((size) => {
          const c = at(name, size);
          return c === undefined ? 'failed' : `${ms(c.median)} (${ms(c.p90)})`;
        });
        const [low, high] = [at(name, smallest)?.median, at(name, largest)?.median];
        const growth = low === undefined || high === undefined ? '' : ratio(high, low);
        return [name, ...cells, ...(r.sizes.length > 1 ? [growth] : [])];
      });
      const header = [
        'operation',
        ...r.sizes.map(spaced),
        ...(r.sizes.length > 1 ? [`${spaced(largest)} ÷ ${spaced(smallest)}`] : []),
      ];
      const missing = r.cases.filter((c) => c.tree === tree && c.missing !== undefined);
      const checkout = tree === 'head' ? 'this checkout' : `--before ${r.trees.before}`;
      return [
        `long-playlists (${r.dialect}, ${checkout}): median ms (p90) of ${r.runs} runs after ${r.warmup} of warm-up, one request at a time, by the playlist's length`,
        table(header.join('|'), rows),
        ...missing.map((c) => `- failed: ${c.size} ${c.name}: ${c.missing}`),
        '',
      ];
    })
    .join('\n')
    .trimEnd();
}

export const LONG_PLAYLISTS: OwnScenario<Awaited<ReturnType<typeof longPlaylists>>> = {
  ...{ name: 'long-playlists', seconds: 0, run: longPlaylists, format: formatLongPlaylists },
  description: 'the time of everyday requests (reads, brief writes, history) by the length of the playlist',
};
