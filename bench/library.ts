/**
 * What the folders of API 1.10.0 cost on a large library: one user's `--playlists` small playlists filed in
 * `--folders` folders (a tenth of them at the top level, each holding the others in turn), then, one request at a
 * time, the whole tree (and its 304), a page of one folder and of the top level beside the ordinary list's pages, a
 * playlist filed in another folder, a folder moved under another parent and a folder renamed, each write then put
 * back (the way back timed too), with the rows each write wrote to the tree's tables (counted by triggers, there only
 * for the counted requests). From source.
 */
import { performance } from 'node:perf_hooks';
import { auth, call, create, inTurn, ok, type Answer } from './load.js';
import { table } from './results.js';
import { longPlaylistSettings, openSql, withService, type OwnScenario, type RunContext, type Sql } from './service.js';

const [WARMUP, COUNTED, PAGE, CONCURRENCY, SONGS] = [3, 3, 20, 16, 3];
/** A tenth of the folders are at the top level; each holds the nine made after it. */
const SPREAD = 10;

/** The demo catalog's songs (ids 1 to 240) are the songs of every playlist here. */
const songAt = (i: number) => 1 + (i % 240);

type Folder = { folder: number; name: string; items: Item[] };
type Item = Folder | { playlist: number; name: string };
type Tree = { version: number; items: Item[] };
type Anchor = { folder: number } | { playlist: number };
const isFolder = (item: Item): item is Folder => 'folder' in item;
const anchor = (item: Item): Anchor => (isFolder(item) ? { folder: item.folder } : { playlist: item.playlist });
/** Where the item at `index` of `items` stands: after the one before it, or before the one after it. */
const placeOf = (items: readonly Item[], index: number) => {
  const [previous, next] = [items[index - 1], items[index + 1]];
  return previous !== undefined ? { after: anchor(previous) } : next !== undefined ? { before: anchor(next) } : {};
};
const middle = <T>(list: readonly T[]): T => {
  const item = list[Math.floor((list.length - 1) / 2)];
  if (item === undefined) throw new Error('an empty list');
  return item;
};

const bench = (url: string, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
  call(url, 'bench', method, path, body, undefined, extra);

/** A write of the set-up, sent again after a pause while the service sheds it (503) or holds it back (429). */
async function setupWrite(url: string, method: string, path: string, body: unknown, what: string): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await bench(url, method, path, body);
    if (answer.status === 200) return answer;
    if ((answer.status !== 503 && answer.status !== 429) || attempt === 20) return ok(answer, what);
    await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
  }
}

const readTree = async (url: string) =>
  JSON.parse(ok(await bench(url, 'GET', '/v3/library'), 'the library').text) as Tree;

/**
 * The library, not timed: the folders first (the top level's, then those inside them), then the playlists, then
 * each filed at the end of folder `i % folders`, `CONCURRENCY` requests at a time.
 */
async function setUp(url: string, playlists: number, folders: number) {
  const started = performance.now();
  const ids: number[] = new Array<number>(folders);
  const tops = Array.from({ length: Math.ceil(folders / SPREAD) }, (_, t) => t * SPREAD);
  const inside = Array.from({ length: folders }, (_, i) => i).filter((i) => i % SPREAD !== 0);
  const makeFolder = async (i: number) => {
    const parent = i % SPREAD === 0 ? {} : { parent: ids[i - (i % SPREAD)] };
    const made = await setupWrite(url, 'POST', '/v3/folder', { name: `Folder ${i}`, ...parent }, 'a folder');
    ids[i] = (JSON.parse(made.text) as { id: number }).id;
  };
  await inTurn(tops.length, CONCURRENCY, (n) => makeFolder(tops[n]!));
  await inTurn(inside.length, CONCURRENCY, (n) => makeFolder(inside[n]!));
  const foldersMs = performance.now() - started;
  console.error(`  ${folders} folders made in ${(foldersMs / 1000).toFixed(1)} s`);

  const playlistIds: number[] = new Array<number>(playlists);
  const createStarted = performance.now();
  await inTurn(playlists, CONCURRENCY, async (i) => {
    const songIds = Array.from({ length: SONGS }, (_, k) => songAt(i + k));
    playlistIds[i] = (await create(url, 'bench', { name: `Playlist ${i}`, songIds })).id;
    if ((i + 1) % 2000 === 0) console.error(`  ${i + 1} playlists created`);
  });
  const playlistsMs = performance.now() - createStarted;
  console.error(`  ${playlists} playlists created in ${(playlistsMs / 1000).toFixed(1)} s`);

  const placeStarted = performance.now();
  await inTurn(playlists, CONCURRENCY, async (i) => {
    const body = { folder: ids[i % folders] };
    await setupWrite(url, 'PUT', `/v3/playlist/${playlistIds[i]}/place`, body, 'filing a playlist');
    if ((i + 1) % 2000 === 0) console.error(`  ${i + 1} playlists filed`);
  });
  const placeMs = performance.now() - placeStarted;
  const totalMs = performance.now() - started;
  console.error(`  ${playlists} playlists filed in ${(placeMs / 1000).toFixed(1)} s; set-up ${totalMs.toFixed(0)} ms`);
  return { foldersMs, playlistsMs, placeMs, totalMs };
}

/** What the operations run on, read from the tree once it is made (concurrent writes chose the order). */
interface State {
  readonly url: string;
  readonly playlists: number;
  readonly offset: number;
  /** The folder paged, whose middle playlist `moved` goes to `target`, after its middle playlist `after`. */
  readonly paged: Folder;
  readonly moved: number;
  readonly movedBack: object;
  readonly target: number;
  readonly after: number;
  /** The folder moved from `home` into the top-level folder `parent`, and where it stood in `home`. */
  readonly folder: Folder;
  readonly home: number;
  readonly parent: number;
  readonly folderBack: object;
  etag: string;
}

function plan(url: string, tree: Tree, playlists: number): State {
  const tops = tree.items.filter(isFolder);
  if (tops.length < 2) throw new Error(`${tops.length} folders at the top level, not 2 or more`);
  const [homeIndex, targetIndex] = [Math.floor((tops.length - 1) / 2), Math.floor((tops.length - 1) / 2) + 1];
  const [home, other] = [tops[homeIndex]!, tops[targetIndex]!];
  const inner = (top: Folder) => top.items.filter(isFolder);
  const paged = inner(home).length > 0 ? middle(inner(home)) : home;
  const target = inner(other).length > 0 ? middle(inner(other)) : other;
  const playlistsOf = (f: Folder) => f.items.filter((item) => !isFolder(item)) as { playlist: number }[];
  const moved = middle(playlistsOf(paged)).playlist;
  const movedIndex = paged.items.findIndex((item) => !isFolder(item) && item.playlist === moved);
  // The folder moved: the one beside the paged one (or itself, alone in its parent).
  const siblings = inner(home);
  const folder = siblings.length > 1 ? siblings[(siblings.indexOf(paged) + 1) % siblings.length]! : paged;
  const folderIndex = home.items.indexOf(folder);
  return {
    ...{ url, playlists, offset: Math.floor(playlists / 2), paged, moved, target: target.folder },
    ...{ movedBack: { folder: paged.folder, ...placeOf(paged.items, movedIndex) } },
    after: middle(playlistsOf(target)).playlist,
    ...{ folder, home: home.folder, parent: other.folder },
    folderBack: { parent: home.folder, ...placeOf(home.items, folderIndex) },
    etag: '',
  };
}

/** A request timed, the status it must answer, and what is wrong with its answer otherwise. */
interface Step {
  readonly name: string;
  readonly request: (s: State) => string;
  readonly send: (s: State) => Promise<Answer>;
  readonly status?: number;
  readonly check?: (s: State, body: unknown) => string | undefined;
}

/** Requests sent in turn on each run, each timed; together, they leave the tree as it was. */
interface Operation {
  readonly steps: readonly Step[];
  /** The rows its steps write are counted. */
  readonly writes?: boolean;
  readonly prepare?: (s: State) => Promise<void>;
}

const ids = (body: unknown) => (Array.isArray(body) ? (body as { id: number }[]).map((p) => p.id) : undefined);
const page =
  (expected: (s: State) => number[] | number): Step['check'] =>
  (s, body) => {
    const [got, want] = [ids(body), expected(s)];
    if (got === undefined) return `not a list: ${JSON.stringify(body).slice(0, 200)}`;
    if (typeof want === 'number') return got.length === want ? undefined : `${got.length} playlists, not ${want}`;
    return got.join() === want.join() ? undefined : `playlists ${got.join()}, not ${want.join()}`;
  };
const folderPage = (s: State) =>
  s.paged.items.flatMap((item) => (isFolder(item) ? [] : [item.playlist])).slice(0, PAGE);
const library: Step = {
  name: 'library',
  request: () => 'GET /v3/library',
  send: (s) => bench(s.url, 'GET', '/v3/library'),
  check: (_s, body) => (Array.isArray((body as Tree).items) ? undefined : 'no items'),
};
const place = (s: State, id: number, body: object) => bench(s.url, 'PUT', `/v3/playlist/${id}/place`, body);
const editFolder = (s: State, body: object) => bench(s.url, 'PATCH', `/v3/folder/${s.folder.folder}`, body);
const rename = (s: State, name: string) => bench(s.url, 'PATCH', `/v3/folder/${s.paged.folder}`, { name });
const json = (body: object) => JSON.stringify(body);
/** The list page the others are read beside. */
const LIST = 'list page';

const OPERATIONS: readonly Operation[] = [
  { steps: [library] },
  {
    prepare: async (s) => {
      const answer = await fetch(`${s.url}/v3/library`, { headers: auth('bench') });
      await answer.arrayBuffer();
      s.etag = answer.headers.get('etag') ?? '';
      if (answer.status !== 200 || s.etag === '') throw new Error(`the library's ETag: status ${answer.status}`);
    },
    steps: [
      {
        name: 'library, If-None-Match',
        request: () => 'GET /v3/library, If-None-Match: its ETag',
        send: (s) => bench(s.url, 'GET', '/v3/library', undefined, { 'if-none-match': s.etag }),
        status: 304,
      },
    ],
  },
  {
    steps: [
      {
        name: 'folder page',
        request: (s) => `GET /v3/playlist?folder=${s.paged.folder}&limit=${PAGE}`,
        send: (s) => bench(s.url, 'GET', `/v3/playlist?folder=${s.paged.folder}&limit=${PAGE}`),
        check: page(folderPage),
      },
    ],
  },
  {
    steps: [
      {
        name: 'top-level page',
        request: () => `GET /v3/playlist?folder=top&limit=${PAGE} (every playlist is filed: empty)`,
        send: (s) => bench(s.url, 'GET', `/v3/playlist?folder=top&limit=${PAGE}`),
        check: page(() => 0),
      },
    ],
  },
  {
    steps: [
      {
        name: LIST,
        request: () => `GET /v3/playlist?limit=${PAGE}`,
        send: (s) => bench(s.url, 'GET', `/v3/playlist?limit=${PAGE}`),
        check: page((s) => Math.min(PAGE, s.playlists)),
      },
    ],
  },
  {
    steps: [
      {
        name: 'list page, far',
        request: (s) => `GET /v3/playlist?limit=${PAGE}&offset=${s.offset}`,
        send: (s) => bench(s.url, 'GET', `/v3/playlist?limit=${PAGE}&offset=${s.offset}`),
        check: page((s) => Math.min(PAGE, s.playlists - s.offset)),
      },
    ],
  },
  {
    writes: true,
    steps: [
      {
        name: 'playlist to another folder',
        request: (s) => `PUT /v3/playlist/${s.moved}/place ${json({ folder: s.target, after: { playlist: s.after } })}`,
        send: (s) => place(s, s.moved, { folder: s.target, after: { playlist: s.after } }),
      },
      {
        name: 'playlist back',
        request: (s) => `PUT /v3/playlist/${s.moved}/place ${json(s.movedBack)}`,
        send: (s) => place(s, s.moved, s.movedBack),
      },
    ],
  },
  {
    writes: true,
    steps: [
      {
        name: 'folder to another parent',
        request: (s) => `PATCH /v3/folder/${s.folder.folder} ${json({ parent: s.parent })}`,
        send: (s) => editFolder(s, { parent: s.parent }),
      },
      {
        name: 'folder back',
        request: (s) => `PATCH /v3/folder/${s.folder.folder} ${json(s.folderBack)}`,
        send: (s) => editFolder(s, s.folderBack),
      },
    ],
  },
  {
    writes: true,
    steps: [
      {
        name: 'folder renamed',
        request: (s) => `PATCH /v3/folder/${s.paged.folder} {"name": "… renamed"}`,
        send: (s) => rename(s, `${s.paged.name} renamed`),
      },
      {
        name: 'folder name back',
        request: (s) => `PATCH /v3/folder/${s.paged.folder} {"name": "${s.paged.name}"}`,
        send: (s) => rename(s, s.paged.name),
      },
    ],
  },
];

/** Rows written to the tree's tables: `folders`, `library_placements`, `library_changes` (the version). */
const TABLES = { folders: 'folders', placements: 'library_placements', version: 'library_changes' } as const;
type Rows = Record<keyof typeof TABLES, number>;
const COLUMNS = Object.keys(TABLES) as (keyof Rows)[];
const EVENTS = ['INSERT', 'UPDATE', 'DELETE'];
const COUNTER = `CREATE TABLE IF NOT EXISTS bench_library_writes (${COLUMNS.map((c) => `${c} bigint`).join(', ')});
  INSERT INTO bench_library_writes SELECT 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM bench_library_writes);`;
const COUNT = {
  sqlite:
    COUNTER +
    COLUMNS.flatMap((c) =>
      EVENTS.map(
        (e) => `CREATE TRIGGER bench_library_${c}_${e.toLowerCase()} AFTER ${e} ON ${TABLES[c]} BEGIN
          UPDATE bench_library_writes SET ${c} = ${c} + 1; END;`,
      ),
    ).join('\n'),
  postgres: `${COUNTER}
    CREATE OR REPLACE FUNCTION bench_library_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      ${COLUMNS.map((c) => `IF TG_TABLE_NAME = '${TABLES[c]}' THEN UPDATE bench_library_writes SET ${c} = ${c} + 1; END IF;`).join('\n      ')}
      RETURN NULL; END $$;
    ${COLUMNS.map((c) => `CREATE TRIGGER bench_library_count AFTER INSERT OR UPDATE OR DELETE ON ${TABLES[c]} FOR EACH ROW EXECUTE FUNCTION bench_library_count();`).join('\n    ')}`,
};
const UNCOUNT = {
  sqlite: COLUMNS.flatMap((c) => EVENTS.map((e) => `DROP TRIGGER bench_library_${c}_${e.toLowerCase()};`)).join(' '),
  postgres: COLUMNS.map((c) => `DROP TRIGGER bench_library_count ON ${TABLES[c]};`).join(' '),
};
const counter = async (sql: Sql): Promise<Rows> => {
  const [row] = await sql.all<Record<keyof Rows, string | number>>(
    `SELECT ${COLUMNS.join(', ')} FROM bench_library_writes`,
  );
  return Object.fromEntries(COLUMNS.map((c) => [c, Number(row![c])])) as Rows;
};
/** Rows as `folders/placements/version`. */
const rowsText = (r: Rows) => COLUMNS.map((c) => r[c]).join('/');

async function send(s: State, step: Step): Promise<Answer> {
  const answer = await step.send(s);
  const status = step.status ?? 200;
  const problem =
    answer.status !== status
      ? `status ${answer.status}, not ${status}: ${answer.text.slice(0, 300)}`
      : answer.status === 200
        ? step.check?.(s, answer.text === '' ? undefined : JSON.parse(answer.text))
        : undefined;
  if (problem !== undefined) throw new Error(`${step.name} (${step.request(s)}): ${problem}`);
  return answer;
}

/** Rows each step writes, over `COUNTED` runs of the operation (the triggers there only meanwhile). */
async function countRows(sql: Sql, dialect: keyof typeof COUNT, s: State, op: Operation) {
  const rows: string[][] = op.steps.map(() => []);
  await sql.run(COUNT[dialect]);
  try {
    for (let run = 0; run < COUNTED; run++) {
      for (const [i, step] of op.steps.entries()) {
        const before = await counter(sql);
        await send(s, step);
        const after = await counter(sql);
        rows[i]!.push(rowsText(Object.fromEntries(COLUMNS.map((c) => [c, after[c] - before[c]])) as Rows));
      }
    }
  } finally {
    await sql.run(UNCOUNT[dialect]);
  }
  return rows.map((r) => [...new Set(r)].join(' or '));
}

const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
/** Of sorted values: the median (the lower of the two middle ones), and the p90 by nearest rank. */
const median = (ms: readonly number[]) => ms[Math.floor((ms.length - 1) / 2)] ?? NaN;
const p90 = (ms: readonly number[]) => ms[Math.max(0, Math.ceil(ms.length * 0.9) - 1)] ?? NaN;

async function measureOperation(s: State, op: Operation, runs: number) {
  await op.prepare?.(s);
  const ms: number[][] = op.steps.map(() => []);
  const bytes: number[] = op.steps.map(() => 0);
  for (let run = -WARMUP; run < runs; run++) {
    for (const [i, step] of op.steps.entries()) {
      const answer = await send(s, step);
      if (run >= 0) ms[i]!.push(answer.ms);
      bytes[i] = Buffer.byteLength(answer.text);
    }
  }
  return op.steps
    .map((step, i) => {
      const times = sorted(ms[i]!);
      const status = step.status ?? 200;
      return { name: step.name, request: step.request(s), status, median: median(times), p90: p90(times), ms: times };
    })
    .map((c, i) => ({ ...c, bytes: bytes[i]! }));
}

async function runLibrary(context: RunContext) {
  const playlists = context.int('playlists', 10_000);
  const folders = context.int('folders', 500);
  const runs = context.int('runs', 15);
  if (runs < 1) throw new Error('--runs must be at least 1');
  if (folders < SPREAD + 1) throw new Error(`--folders must be at least ${SPREAD + 1}: two at the top level`);
  if (playlists < 2 * folders) throw new Error('--playlists must be at least twice --folders: two in each folder');
  const settings = {
    ...longPlaylistSettings([SONGS]),
    MIXTAPE_PLAYLISTS_PER_USER: String(Math.max(10_000, 2 * playlists)),
    MIXTAPE_FOLDERS_MAX: String(Math.max(1000, 2 * folders)),
  };
  const spec = { name: 'library', settings, fromSource: true };
  return withService(context, spec, async ({ url, databaseUrl }) => {
    const setup = await setUp(url, playlists, folders);
    const before = await readTree(url);
    const filed = (items: readonly Item[]): number =>
      items.reduce((n, item) => n + (isFolder(item) ? filed(item.items) : 1), 0);
    const topPlaylists = before.items.filter((item) => !isFolder(item)).length;
    if (filed(before.items) !== playlists || topPlaylists !== 0)
      throw new Error(`the tree holds ${filed(before.items)} playlists, ${topPlaylists} of them at the top level`);
    const s = plan(url, before, playlists);
    const sql = await openSql(databaseUrl);
    const cases = [];
    try {
      for (const op of OPERATIONS) {
        const rows = op.writes === true ? await countRows(sql, context.dialect, s, op) : undefined;
        const measured = await measureOperation(s, op, runs);
        for (const [i, c] of measured.entries()) {
          cases.push({ ...c, ...(rows === undefined ? {} : { rows: rows[i] }) });
          const written = rows === undefined ? '' : `, rows ${rows[i]}`;
          console.error(
            `  ${c.name}: median ${c.median.toFixed(2)} ms, p90 ${c.p90.toFixed(2)}, ${c.bytes} B${written}`,
          );
        }
      }
    } finally {
      await sql.close();
    }
    // Every write was put back: the tree is as it was made (its version apart).
    const after = await readTree(url);
    if (JSON.stringify(after.items) !== JSON.stringify(before.items))
      throw new Error('the tree was left otherwise than it was made');
    const shape = { topLevel: before.items.length, perFolder: playlists / folders };
    return {
      dialect: context.dialect,
      runs,
      warmup: WARMUP,
      counted: COUNTED,
      playlists,
      folders,
      shape,
      setup,
      cases,
    };
  });
}

/** 10000 as `10 000`. */
const spaced = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const times = (value: number, base: number | undefined) =>
  base === undefined || base === 0 ? '' : (value / base).toFixed(value < base ? 2 : 1);

/** An operation a row: the median ms (p90), the answer's bytes, the median ÷ the list page's, the rows written. */
function formatLibrary(r: Awaited<ReturnType<typeof runLibrary>>): string {
  const list = r.cases.find((c) => c.name === LIST)?.median;
  const rows = r.cases.map((c) => [
    c.name,
    `${ms(c.median)} (${ms(c.p90)})`,
    String(c.bytes),
    times(c.median, list),
    'rows' in c ? c.rows : '',
  ]);
  const s = (n: number) => `${(n / 1000).toFixed(1)} s`;
  return [
    `library (${r.dialect}): median ms (p90) of ${r.runs} runs after ${r.warmup} of warm-up, one request at a time; one user's ${spaced(r.playlists)} playlists of 3 songs, ${r.shape.perFolder} in each of ${spaced(r.folders)} folders (${r.shape.topLevel} at the top level)`,
    table('operation|median (p90) ms|bytes|÷ list|rows written (folders/placements/version)', rows),
    ...r.cases.map((c) => `- ${c.name}: ${c.request}${c.status === 200 ? '' : ` (${c.status})`}`),
    `- rows written: counted by triggers over ${r.counted} runs, before the timed ones`,
    `- set-up (not timed): folders ${s(r.setup.foldersMs)}, playlists created ${s(r.setup.playlistsMs)}, filed ${s(r.setup.placeMs)}; in all ${s(r.setup.totalMs)}`,
  ].join('\n');
}

export const LIBRARY: OwnScenario<Awaited<ReturnType<typeof runLibrary>>> = {
  ...{ name: 'library', seconds: 0, run: runLibrary, format: formatLibrary },
  description: "the folders' requests (the tree, a folder's page, moves, a rename) on one user's large library",
};
