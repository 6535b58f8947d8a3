/**
 * Smart playlists over a catalog imported as an operator's would, then dated 30 days back. `smart`: GET and POST of
 * a smart playlist beside a hand-made one, and 1 000 refreshed after an import, beside another user. `hostile-smart`:
 * a writer's appends beside 300 followers and three layers of 8 (their catch-up read from the database, as a read
 * through the service would refresh first), then floods of costly rules and of merges 240 versions back (about 48 000
 * changes to replay, near the most a merge may) beside another user and /healthz (docs/benchmarks.md).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { serviceEnvironment } from '../test/helpers/service-environment.js';
import { QUIET, chosen, phase, phased, probe } from './hostile.js';
import { auth, call, create, inTurn, measure, metric, ok, paced, round1, sampleLoop, scrape } from './load.js';
import { summarize, TEN_SONGS, type Answer, type BenchRequest } from './load.js';
import { logSummary } from './results.js';
import { ROOT, openSql, withService, type OwnScenario, type RunContext, type Sql } from './service.js';

const GENRES = ['Jazz', 'Rock', 'Pop', 'Blues', 'Folk', 'Soul', 'Funk', 'Reggae', 'Metal', 'Punk', 'Disco', 'House'];
GENRES.push('Techno', 'Ambient', 'Gospel', 'Country', 'Bossa Nova', 'Salsa', 'Classical', 'Opera');
const DAY_MS = 86_400_000;

/** `mixtape catalog import` of `count` generated songs, as a process of its own on CPU 1: its output and seconds. */
async function catalogImport(databaseUrl: string, count: number, prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), 'mixtape-catalog-'));
  const file = join(dir, 'songs.jsonl');
  const line = (i: number) =>
    JSON.stringify({
      ...{ title: `${prefix} song ${i}`, artist: `Artist ${i % 5000}`, album: `Album ${i % 20000}` },
      ...{ genre: GENRES[i % GENRES.length], duration: 120 + (i % 300) },
    });
  writeFileSync(file, `${Array.from({ length: count }, (_v, i) => line(i)).join('\n')}\n`);
  const started = performance.now();
  const child = spawn('taskset', ['-c', '1', process.execPath, 'dist/cli.js', 'catalog', 'import', file], {
    cwd: ROOT,
    env: serviceEnvironment(process.env, { DATABASE_URL: databaseUrl }),
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`mixtape catalog import: exit ${String(code)}\n${output}`);
  return { seconds: round1((performance.now() - started) / 1000), output: output.trim() };
}

/** The catalog of `--songs` (default 200 000) songs, imported and dated 30 days back; then `more` SQL. */
const catalog =
  (context: RunContext, more: string[] = []) =>
  async (databaseUrl: string) => {
    const songs = context.int('songs', 200_000);
    const { seconds, output } = await catalogImport(databaseUrl, songs, 'Catalog');
    console.error(`catalog import of ${songs} songs: ${seconds} s (${output})`);
    const sql = await openSql(databaseUrl);
    for (const statement of [`UPDATE songs SET added = added - ${30 * DAY_MS}`, ...more]) await sql.run(statement);
    await sql.close();
  };

const rules = (genre: string, recent = false) => {
  const conditions = [{ field: 'genre', op: 'is', value: genre as unknown }];
  if (recent) conditions.unshift({ field: 'added', op: 'inTheLast', value: 1 });
  return { match: 'all', conditions, sort: [{ field: 'added', order: 'desc' }], limit: 100 };
};

const headers = { ...auth('alice'), 'content-type': 'application/json' };
const post = (body: unknown): BenchRequest => ({
  method: 'POST',
  path: '/v3/playlist',
  headers,
  body: JSON.stringify(body),
});

const OWNERS = Array.from({ length: 100 }, (_v, i) => `owner${String(i).padStart(3, '0')}`);

async function smart(context: RunContext) {
  // The 100 owners of (c) as copies of alice by SQL: each `user add` is a process that hashes a password.
  const copy = `INSERT INTO users (name, password_hash, created_at) SELECT 'NAME', password_hash, created_at FROM users`;
  const owners = OWNERS.map((name) => `${copy.replace('NAME', name)} WHERE name = 'alice'`);
  const spec = { name: 'smart', users: ['bob', 'alice'], prepare: catalog(context, owners) };
  return withService(context, spec, async ({ url, databaseUrl }) => {
    const seconds = context.seconds;
    const mine = await create(url, 'bob', { name: 'mine', songIds: TEN_SONGS });
    const probes = [
      { label: 'GET', paths: [`/v3/playlist/${mine.id}`], pace: 50, user: 'bob' },
      { label: 'POST', paths: ['/v3/playlist'], pace: 10, user: 'bob', body: '{"name":"b","songIds":[7]}' },
    ];
    const bob = (window: number) => Promise.all(probes.map((probe) => paced(url, probe, window).done));
    const load = { connections: 16, durationSeconds: seconds };
    // Both warmed up first, unmeasured, so that neither meets a colder service than the other.
    const warm = { connections: 16, durationSeconds: 2 };
    const jazz = await create(url, 'alice', { name: 'smart jazz', rules: rules('Jazz') });
    const hand = await create(url, 'alice', { name: 'hand jazz', songIds: jazz.songs.map((s) => s.id) });
    if (jazz.songs.length !== 100) throw new Error(`the smart playlist has ${jazz.songs.length} songs`);
    const get = (id: number): BenchRequest => ({ method: 'GET', path: `/v3/playlist/${id}`, headers: auth('alice') });
    await measure(url, [get(jazz.id), get(hand.id)], warm);
    const getSmart = await measure(url, [get(jazz.id)], load);
    const getHand = await measure(url, [get(hand.id)], load);
    const createStarted = performance.now();
    const createSmart = (n: number) =>
      create(url, OWNERS[n % 100]!, { name: `new ${n}`, rules: rules(GENRES[n % GENRES.length]!, true) });
    // Each owner's first alone (its password is checked then, few at once), the rest ten at a time.
    for (let n = 0; n < 100; n++) await createSmart(n);
    for (let start = 100; start < 1000; start += 10)
      await Promise.all(Array.from({ length: 10 }, (_v, k) => createSmart(start + k)));
    const smartCreateSeconds = round1((performance.now() - createStarted) / 1000);
    const quiet = await bob(seconds);
    const sql = await openSql(databaseUrl);
    const query = `SELECT count(*) AS n, min(at) AS first, max(at) AS last FROM playlist_revisions WHERE change = ?`;
    const refreshes = async () => (await sql.all<Record<'n' | 'first' | 'last', string>>(query, ['refresh']))[0]!;
    const before = Number((await refreshes()).n);
    const stopLoop = sampleLoop(url, 500);
    // Bob's load runs twice the duration; the import starts a second into it.
    const [during, imported] = await Promise.all([
      bob(2 * seconds),
      sleep(1000).then(() => catalogImport(databaseUrl, 1000, 'New')),
    ]);
    // The largest single delay in each 500 ms, which shows one long block that a mean hides.
    const blocks = (await stopLoop()).sort((a, b) => a.max - b.max);
    const after = await refreshes();
    await sql.close();
    const smartBodies = GENRES.map((genre, i) => post({ name: `b smart ${i}`, rules: rules(genre) }));
    const handBodies = GENRES.map((_g, i) => post({ name: `b hand ${i}`, songIds: jazz.songs.map((s) => s.id + i) }));
    await measure(url, [...smartBodies, ...handBodies], warm);
    const postSmart = await measure(url, smartBodies, load);
    const postHand = await measure(url, handBodies, load);
    return {
      dialect: context.dialect,
      seconds,
      ...{ getSmart, getHand, postSmart, postHand, smartCreateSeconds },
      quiet: { reads: quiet[0]!, creates: quiet[1]! },
      importRun: {
        ...{ ...imported, refreshRevisions: Number(after.n) - before, reads: during[0]!, creates: during[1]! },
        refreshSeconds: (Number(after.last) - Number(after.first)) / 1000,
        loopDelayMedianMs: round1(blocks[blocks.length >> 1]?.max ?? 0),
        ...{ loopDelayMaxMs: round1(blocks.at(-1)?.max ?? 0), loopDelayMaxAtSeconds: round1(blocks.at(-1)?.at ?? 0) },
      },
    };
  });
}

/** Refreshes counted by the service (`mixtape_smart_refreshes_total`) by outcome, and those waiting. */
async function refreshCount(url: string) {
  const text = await scrape(url);
  const outcomes: Record<string, number> = {};
  for (const m of text.matchAll(/^mixtape_smart_refreshes_total\{outcome="([^"]*)"\} (\S+)$/gm))
    outcomes[m[1]!] = Number(m[2]);
  const total = Object.values(outcomes).reduce((sum, n) => sum + n, 0);
  return { total, outcomes, waiting: metric(text, 'mixtape_smart_refreshes_waiting') ?? 0 };
}

/** Until nothing waits for a refresh and the count has stood for 300 ms (10 s at most). */
async function settled(url: string): Promise<void> {
  const until = performance.now() + 10_000;
  for (let last = await refreshCount(url); performance.now() < until;) {
    await sleep(300);
    const now = await refreshCount(url);
    if (now.waiting === 0 && now.total === last.total) return;
    last = now;
  }
}

/** Refreshes and `refresh` revisions from now until the function returned is called. */
async function counting(url: string, sql: Sql) {
  const query = `SELECT count(*) AS n FROM playlist_revisions WHERE change = 'refresh'`;
  const revisions = async () => Number((await sql.all<{ n: string }>(query))[0]!.n);
  const [metrics, rows] = [await refreshCount(url), await revisions()];
  return async () => {
    const now = await refreshCount(url);
    const outcomes = Object.entries(now.outcomes).map(([k, n]) => [k, n - (metrics.outcomes[k] ?? 0)]);
    const refreshes = `${now.total - metrics.total} ${JSON.stringify(Object.fromEntries(outcomes.filter(([, n]) => n)))}`;
    return { refreshes, refreshRevisions: (await revisions()) - rows };
  };
}

/** From now, ms until every playlist of each group holds every one of `songs`, read every 50 ms (null: not in 60 s). */
async function caughtUp(sql: Sql, groups: readonly (readonly number[])[], songs: readonly number[]) {
  const started = performance.now();
  const times: (number | null)[] = groups.map(() => null);
  for (;;) {
    const counts = await held(sql, groups.flat(), songs);
    const elapsed = performance.now() - started;
    groups.forEach((group, g) => {
      if (times[g] === null && group.every((id) => counts.get(id) === songs.length)) times[g] = round1(elapsed);
    });
    if (times.every((t) => t !== null) || elapsed > 60_000) return times;
    await sleep(50);
  }
}

/** For each playlist, how many of these songs it holds. */
async function held(sql: Sql, playlists: readonly number[], songs: readonly number[]) {
  const where = `playlist_id IN (${playlists.join(',')}) AND song_id IN (${songs.join(',')})`;
  const query = `SELECT playlist_id AS id, count(DISTINCT song_id) AS n FROM playlist_songs WHERE ${where} GROUP BY 1`;
  const rows = await sql.all<{ id: string; n: string }>(query);
  return new Map(rows.map((row) => [Number(row.id), Number(row.n)]));
}

const follow = (ids: readonly number[]) => ({
  match: ids.length === 1 ? 'all' : 'any',
  conditions: ids.map((value) => ({ field: 'playlist', op: 'in', value })),
});

const append = (url: string, id: number, songIds: number[]) =>
  call(url, 'alice', 'POST', `/v3/playlist/${id}/songs`, { songIds });

/** `count` creates of `user`'s, 4 at a time, their ids in order. */
async function createMany(url: string, user: string, count: number, body: (i: number) => object): Promise<number[]> {
  const ids: number[] = [];
  await inTurn(count, 4, async (i) => (ids[i] = (await create(url, user, body(i))).id));
  return ids;
}

interface SmartState {
  readonly sql: Sql;
  /** The catalog's songs in turn, and songs no playlist holds yet for the appends. */
  readonly songs: (n: number) => number[];
  readonly fresh: () => number;
  readonly mine: number;
  merges?: Awaited<ReturnType<typeof mergeTarget>>;
}

/** `count` appends of `size` new songs to `id`, 200 ms apart (45 s at most), and /healthz meanwhile. */
async function appends(url: string, state: SmartState, id: number, count: number, size = 1) {
  const [times, statuses, added] = [[] as number[], {} as Record<string, number>, [] as number[]];
  const health = paced(url, { label: 'health', paths: ['/healthz'], pace: 20 }, 600);
  for (let i = 0, end = performance.now() + 45_000; i < count && performance.now() < end; i++) {
    const songs = Array.from({ length: size }, state.fresh);
    const answer = await append(url, id, songs);
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    times.push(answer.ms);
    if (answer.status === 200) added.push(...songs);
    await sleep(200);
  }
  return { appends: summarize(times, statuses), added, health };
}

async function followers(url: string, state: SmartState) {
  const quietList = await create(url, 'alice', { name: 'nobody follows', songIds: state.songs(10) });
  const followed = (await create(url, 'alice', { name: 'followed', songIds: state.songs(10) })).id;
  ok(await call(url, 'alice', 'PUT', `/v3/playlist/${followed}/members/bob`, { role: 'viewer' }), 'share');
  const created = performance.now();
  const ids = await createMany(url, 'bob', 300, (i) => ({ name: `follows ${i}`, rules: follow([followed]) }));
  const createSeconds = round1((performance.now() - created) / 1000);
  await settled(url);
  const quiet = await appends(url, state, quietList.id, 30);
  const quietHealth = await quiet.health.stop();
  const count = await counting(url, state.sql);
  const burst = await appends(url, state, followed, 30);
  const [burstCatchUpMs] = await caughtUp(state.sql, [ids], burst.added);
  const burstHealth = await burst.health.stop();
  const alone = [];
  const all = [...burst.added];
  for (let i = 0; i < 3; i++) {
    await settled(url);
    const song = state.fresh();
    const answer = ok(await append(url, followed, [song]), 'append');
    all.push(song);
    alone.push({ appendMs: round1(answer.ms), catchUpMs: (await caughtUp(state.sql, [ids], [song]))[0] });
  }
  await settled(url);
  const counts = await held(state.sql, ids, all);
  return {
    createSeconds,
    quiet: { appends: quiet.appends, health: quietHealth },
    followed: { appends: burst.appends, health: burstHealth },
    burstCatchUpMs,
    alone,
    behind: ids.filter((id) => counts.get(id) !== all.length).length,
    ...(await count()),
  };
}

async function layers(url: string, state: SmartState) {
  const quietList = (await create(url, 'alice', { name: 'nobody follows 8', songIds: state.songs(10) })).id;
  const source = (await create(url, 'alice', { name: 'layered', songIds: state.songs(10) })).id;
  ok(await call(url, 'alice', 'PUT', `/v3/playlist/${source}/members/carol`, { role: 'viewer' }), 'share');
  const groups: number[][] = [];
  for (let layer = 1, below = [source]; layer <= 3; layer++) {
    const named = below;
    below = await createMany(url, 'carol', 8, (i) => ({ name: `layer ${layer} ${i}`, rules: follow(named) }));
    groups.push(below);
  }
  await settled(url);
  const eight = () => Array.from({ length: 8 }, state.fresh);
  const { appends: quiet, health } = await appends(url, state, quietList, 3, 8);
  const runs = [];
  for (let i = 0; i < 3; i++) {
    await settled(url);
    const count = await counting(url, state.sql);
    const added = eight();
    const answer = await append(url, source, added);
    const layerMs = answer.status === 200 ? await caughtUp(state.sql, groups, added) : [null, null, null];
    await settled(url);
    runs.push({ appendMs: round1(answer.ms), status: answer.status, layerMs, ...(await count()) });
  }
  return { quiet, runs, health: await health.stop() };
}

/**
 * A playlist of eve's of 200 songs to merge over, and the merged edit sent to it: two inserts (one anchored on an
 * entry removed since the base) and two removes, on a base `back` versions behind the newest an answer showed.
 */
async function mergeTarget(url: string, songs: (n: number) => number[]) {
  const id = (await create(url, 'eve', { name: 'merged', songIds: songs(200) })).id;
  const entries = ok(await call(url, 'eve', 'GET', `/v3/playlist/${id}/entries`), 'entries').text;
  const read = JSON.parse(entries) as { version: number; entries: { entry: string }[] };
  const names = read.entries.map((e) => e.entry);
  // Anchors nobody removes; entries to remove, oldest first; entries removed lately; versions back, each merge.
  const state = { version: read.version, anchors: names.slice(0, 100), removable: names.slice(100) };
  const [removed, distance] = [[] as string[], [] as number[]];
  const pool = songs(1000);
  const edit = async (n: number, back: number): Promise<Answer> => {
    const base = Math.max(1, state.version - back);
    const take = state.removable.splice(0, 2);
    const anchor = removed.at(-1 - (n % Math.max(1, Math.min(50, removed.length))));
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
    type Applied = { applied: boolean; entries?: string[] };
    const body = JSON.parse(answer.text) as { playlist: { version: number }; results: Applied[] };
    state.version = Math.max(state.version, body.playlist.version);
    distance.push(body.playlist.version - base);
    body.results.forEach((result, k) => {
      const op = ops[k]!;
      if (result.applied && op.op === 'insert') state.removable.push(...(result.entries ?? []));
      else if (result.applied) removed.push((op as { entry: string }).entry);
    });
    removed.splice(0, Math.max(0, removed.length - 200));
    return answer;
  };
  return { distance, edit };
}

/**
 * 50 conditions, each a text a few songs have (a song's number: about 11 songs; an artist: 40; an album: 10), some
 * hundreds of songs in all, fewer than the limit: no order lets the query stop early.
 */
function costlyRules(n: number) {
  const conditions = Array.from({ length: 50 }, (_v, k) => {
    const x = ((n * 50 + k) * 7919) % 100_000;
    const values = [`song ${10_000 + (x % 90_000)}`, `artist ${1000 + (x % 4000)}`, `album ${10_000 + (x % 10_000)}`];
    return { field: ['title', 'artist', 'album'][k % 3], op: 'contains', value: values[k % 3] };
  });
  const sort = ['artist', 'album', 'title'].map((field, k) => ({ field, order: k === 1 ? 'desc' : 'asc' }));
  return { match: 'any', conditions, sort, limit: 1000 };
}

const USERS = ['alice', 'bob', 'carol', 'mallory', 'eve', 'vic'];

const HOSTILE_SMART = phased<SmartState>({
  name: 'hostile-smart',
  description: 'a writer and others beside smart playlists that follow, costly rules and old-base merges',
  seconds: 20,
  users: USERS,
  prepare: (databaseUrl, context) => catalog(context)(databaseUrl),
  async setup({ url, databaseUrl }) {
    const sql = await openSql(databaseUrl);
    const [{ first } = { first: 1 }] = await sql.all<{ first: number | string }>('SELECT min(id) AS first FROM songs');
    // Each user's first request checks their password (slow on purpose); later ones are remembered.
    for (const name of USERS) ok(await call(url, name, 'GET', '/v3/playlist?limit=1'), `${name}'s sign-in`);
    const songs = (n: number) => Array.from({ length: n }, (_v, i) => Number(first) + i);
    let unused = Number(first) + 10_000;
    const mine = (await create(url, 'vic', { name: 'mine', songIds: songs(10) })).id;
    return { sql, songs, fresh: () => unused++, mine };
  },
  async before({ url }, state, context) {
    const f = chosen(context, 'followers') ? await followers(url, state) : undefined;
    const l = chosen(context, 'layers') ? await layers(url, state) : undefined;
    state.merges = await mergeTarget(url, state.songs);
    const started = performance.now();
    for (let n = 0; chosen(context, 'merges') && n < 1000 && performance.now() - started < 180_000; n++)
      ok(await state.merges.edit(n, 0), `set-up merge ${n}`);
    state.merges.distance.length = 0;
    return { followers: f, layers: l, mergeSetupSeconds: round1((performance.now() - started) / 1000) };
  },
  probes: ({ mine, songs }) => [
    probe('/healthz at 20/s', undefined, 20, ['/healthz']),
    probe("vic's GET at 50/s", 'vic', 50, [`/v3/playlist/${mine}`]),
    probe("vic's POST at 10/s", 'vic', 10, ['/v3/playlist'], {
      body: JSON.stringify({ name: 'v', songIds: songs(1) }),
    }),
  ],
  phases: ({ merges }, url) => [
    QUIET,
    phase('rules', '4 connections: creates with 50 contains under any, 3 sort keys, limit 1 000', 4, (n) =>
      call(url, 'mallory', 'POST', '/v3/playlist', { name: `costly ${n}`, rules: costlyRules(n) }),
    ),
    {
      ...phase('merges', '4 connections: merged edits on a base 240 versions back', 4, (n) =>
        merges!.edit(1000 + n, 240),
      ),
      note: () => {
        const d = [...merges!.distance].sort((a, b) => a - b);
        return `versions from base to answer: min ${d[0]}, median ${d[d.length >> 1]}, max ${d.at(-1)}`;
      },
    },
    { name: 'quiet again', description: 'nobody else, after the floods' },
  ],
  async after({ logFile }, { sql }) {
    await sql.close();
    return { serviceLog: logSummary([logFile]) };
  },
});

const description = 'smart playlists: reads, creates, the refresh of 1 000 after an import';
export const SMART: readonly OwnScenario[] = [{ name: 'smart', description, seconds: 10, run: smart }, HOSTILE_SMART];
