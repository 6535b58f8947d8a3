/**
 * Another user's latency beside one user's flood, each scenario on a service and database of its own: a set-up, the
 * probes (other users and health checks at a steady pace, each request timed from when it was due), and phases, each
 * a flood of one user's requests on a few connections, or none (quiet: the baseline, in the same run). `--phases a,b`
 * picks the flooding phases that run; the quiet ones always do. Also `unasked-shares`, one request at a time.
 */
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { auth, call, create, flood, inTurn, ok, paced, round1, send, summarize, TEN_SONGS } from './load.js';
import { metric, percentile, sampleLoop, scrape, type Answer, type Latency, type Probe } from './load.js';
import { ratio, render, table } from './results.js';
import { openSql, processCpuMs, withService, type OwnScenario, type RunContext, type Served } from './service.js';

/** A phase: the flooding user's `n`th request (none in a quiet phase), and what to say of the flood after it. */
export interface Phase {
  readonly name: string;
  readonly description: string;
  readonly connections?: number;
  readonly request?: (n: number) => Promise<Response | Answer>;
  readonly note?: () => string;
}

/**
 * A scenario of phases: `prepare` writes into the new database before the service starts, `setup` on the service;
 * `sample` starts with each phase what is read at its end; `before` and `after` are measures of the scenario's own.
 */
export interface Phased<S> {
  readonly name: string;
  readonly description: string;
  readonly seconds: number;
  readonly users: readonly string[];
  readonly settings?: Readonly<Record<string, string>>;
  prepare?(databaseUrl: string, context: RunContext): Promise<void>;
  setup(served: Served, context: RunContext): Promise<S>;
  probes(state: S): Probe[];
  phases(state: S, url: string): Phase[];
  sample?(served: Served): () => Promise<Record<string, unknown>>;
  before?(served: Served, state: S, context: RunContext): Promise<Record<string, unknown>>;
  after?(served: Served, state: S): Promise<Record<string, unknown>>;
}

type Flood = Awaited<ReturnType<typeof flood>> & { note?: string };
type PhaseResult = {
  name: string;
  description: string;
  probes: Record<string, Latency>;
  flood?: Flood;
  [k: string]: unknown;
};
export type PhasedResults = { dialect: string; seconds: number; phases: PhaseResult[]; [measure: string]: unknown };

/** Whether `--phases` leaves `name` in (every phase when it is not given). */
export const chosen = (context: RunContext, name: string) => context.phases?.has(name) ?? true;

async function runPhases<S>(spec: Phased<S>, context: RunContext, served: Served): Promise<PhasedResults> {
  const state = await spec.setup(served, context);
  const before = (await spec.before?.(served, state, context)) ?? {};
  const phases: PhaseResult[] = [];
  for (const { name, description, request, connections = 4, note } of spec.phases(state, served.url)) {
    if (request !== undefined && !chosen(context, name)) continue;
    const sampled = spec.sample?.(served);
    const probes = spec.probes(state);
    const [latencies, load] = await Promise.all([
      Promise.all(probes.map((probe) => paced(served.url, probe, context.seconds).done)),
      request === undefined ? undefined : flood(connections, context.seconds, request),
    ]);
    const result: PhaseResult = {
      ...{ name, description, probes: Object.fromEntries(probes.map((p, i) => [p.label, latencies[i]!])) },
      ...(load === undefined ? {} : { flood: { ...load, ...(note && { note: note() }) } }),
      ...(await sampled?.()),
    };
    console.error(`  ${JSON.stringify(result)}`);
    phases.push(result);
  }
  const after = (await spec.after?.(served, state)) ?? {};
  return { dialect: context.dialect, seconds: context.seconds, ...before, phases, ...after };
}

function formatPhases<S>(spec: Phased<S>, results: PhasedResults): string {
  const { dialect, seconds, phases, ...measures } = results;
  const [quiet] = phases;
  const labels = Object.keys(quiet?.probes ?? {});
  const extra = Object.keys(quiet ?? {}).filter((k) => !['name', 'description', 'probes', 'flood'].includes(k));
  const rows = phases.map(({ name, description, probes, flood: f, ...sampled }) => [
    `${name}: ${description}`,
    ...labels.map(
      (l) =>
        `${probes[l]!.p50} / ${probes[l]!.p99} / ${probes[l]!.max} (${ratio(probes[l]!.p99, quiet?.probes[l]?.p99)})`,
    ),
    Object.values(probes).reduce((sum, l) => sum + l.failures, 0),
    f && `${f.perSecond}/s, ${f.latency.p50} / ${f.latency.p99}, ${JSON.stringify(f.latency.statuses)} ${f.note ?? ''}`,
    ...extra.map((k) => sampled[k]),
  ]);
  const header = ['phase', ...labels, 'probe failures', 'flood: answers/s, p50 / p99 ms, statuses', ...extra];
  return [
    `${spec.name} (${dialect}, ${seconds} s a phase): ${spec.description}`,
    ...render(measures),
    'ms from when each request was due, p50 / p99 / max (p99 ÷ the first quiet phase\u2019s)',
    table(header.join('|'), rows),
  ].join('\n');
}

export const phased = <S>(spec: Phased<S>): OwnScenario<PhasedResults> => ({
  ...{ name: spec.name, description: spec.description, seconds: spec.seconds },
  run: (context) => {
    const prepare = (url: string) => spec.prepare?.(url, context) ?? Promise.resolve();
    return withService(context, { ...spec, prepare }, (served) => runPhases(spec, context, served));
  },
  format: (results) => formatPhases(spec, results),
});

/** `count` playlists of one song named `name(i)`, 16 at a time. */
const fill = (url: string, user: string, count: number, name: (i: number) => string) =>
  inTurn(count, 16, (i) => create(url, user, { name: name(i), songIds: [1 + (i % 200)] }));

/** The paths of 20 ten-song playlists made for `user`. */
async function tenSongPlaylists(url: string, user: string): Promise<string[]> {
  const paths: string[] = [];
  for (let i = 0; i < 20; i++)
    paths.push(`/v3/playlist/${(await create(url, user, { name: `${i}`, songIds: TEN_SONGS })).id}`);
  return paths;
}

/** `count` songs of the demo catalog (ids 1 to 240), from `offset` on. */
const songs = (count: number, offset = 0) => Array.from({ length: count }, (_v, i) => 1 + ((i + offset) % 240));

const patch = (url: string, user: string, id: number, body: unknown, type = 'application/merge-patch+json') =>
  call(url, user, 'PATCH', `/v3/playlist/${id}`, body, type);

export const QUIET: Phase = { name: 'quiet', description: 'nobody else' };
export const phase = (name: string, description: string, connections: number, request: Phase['request']): Phase => ({
  ...{ name, description, connections, request },
});
export const probe = (label: string, user: string | undefined, pace: number, paths: string[], more = {}): Probe => ({
  ...{ label, user, pace, paths, ...more },
});

const NEIGHBOURS = phased({
  ...{ name: 'neighbours', description: 'a small reader beside heavy listers and creators', seconds: 10 },
  users: ['victim', 'lister', 'creator'],
  async setup({ url }) {
    for (let i = 0; i < 100; i++) await create(url, 'lister', { name: `long ${i}`, songIds: songs(1000, i) });
    return tenSongPlaylists(url, 'victim');
  },
  probes: (reads) => [probe("victim's GET of a 10-song playlist at 50/s", 'victim', 50, reads)],
  phases: (_reads, url) => [
    QUIET,
    phase('lists', '8 connections listing 100 playlists of 1000 songs (about 7 MB each)', 8, () =>
      call(url, 'lister', 'GET', '/v3/playlist?limit=100'),
    ),
    phase('creates', '64 connections creating playlists of 1000 songs', 64, (n) =>
      call(url, 'creator', 'POST', '/v3/playlist', { name: `bulk ${n}`, songIds: songs(1000, n) }),
    ),
  ],
});

const KM = '㌖'; // normalised to six letters
const search = (url: string, user: string, text: string) =>
  call(url, user, 'GET', `/v3/playlist?limit=1&search=${encodeURIComponent(text)}`);

const SEARCH = phased({
  name: 'hostile-search',
  description:
    "the costliest searches one user can make, and whether a search's time tells what another's playlists hold",
  seconds: 10,
  users: ['victim', 'mallory', 'trudy', 'eve', 'spy'],
  settings: { MIXTAPE_PLAYLISTS_PER_USER: '10000' },
  async setup({ url }) {
    await fill(url, 'mallory', 2000, () => KM.repeat(200));
    // The most playlists a user may have.
    await fill(url, 'trudy', 10_000, () => 'a'.repeat(200));
    await fill(url, 'eve', 2100, () => KM.repeat(200));
    await fill(url, 'spy', 2100, (i) => `spy ${i}`);
    return tenSongPlaylists(url, 'victim');
  },
  probes: (reads) => [
    probe("victim's GET at 50/s", 'victim', 50, reads),
    probe('/healthz, /readyz at 20/s', 'victim', 20, ['/healthz', '/readyz']),
  ],
  phases: (_reads, url) => [
    QUIET,
    // 199 letters once normalised, the longest search there is (`<199 × ㌖>x` is refused with 400).
    phase('scan', `4 connections: mallory searches <33 × ${KM}>x over 2 000 playlists`, 4, () =>
      search(url, 'mallory', `${KM.repeat(33)}x`),
    ),
    phase('large', '4 connections: trudy searches a × 200 over 10 000 playlists, every one a match', 4, () =>
      search(url, 'trudy', 'a'.repeat(200)),
    ),
  ],
  /** Spy's search, 20 times one after the other, of a text only eve's playlists hold and of one nobody's do. */
  async after({ url }) {
    const timed = async (text: string) => {
      const [times, statuses] = [[] as number[], {} as Record<string, number>];
      for (let i = 0; i < 20; i++) {
        const a = await search(url, 'spy', text);
        times.push(a.ms);
        statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      }
      return summarize(times, statuses);
    };
    return { privacy: { othersText: await timed(KM.repeat(33)), nobodysText: await timed('㌕'.repeat(33)) } };
  },
});

const WRITES = phased({
  name: 'hostile-writes',
  description: "another user's reads and creates beside one user's flood of edits, creates and deletes",
  seconds: 10,
  users: ['bob', 'eve'],
  setup: async ({ url }) => ({
    mine: (await create(url, 'bob', { name: 'mine', songIds: TEN_SONGS })).id,
    long: (await create(url, 'eve', { name: 'long', songIds: songs(1000) })).id,
    small: (await create(url, 'eve', { name: 'small', songIds: [1, 2, 3] })).id,
  }),
  probes: ({ mine }) => [
    probe("bob's GET at 50/s", 'bob', 50, [`/v3/playlist/${mine}`]),
    probe("bob's POST at 10/s", 'bob', 10, ['/v3/playlist'], { body: '{"name":"b","songIds":[7]}' }),
  ],
  phases: ({ long, small }, url) => [
    QUIET,
    // The order alternates, so that each patch rewrites every entry.
    phase('long', '50 connections: merge patches of 1 000 songs to one playlist', 50, (n) =>
      patch(url, 'eve', long, { songIds: n % 2 === 1 ? songs(1000).reverse() : songs(1000) }),
    ),
    phase('renames', '50 connections rename one playlist', 50, (n) =>
      patch(url, 'eve', small, { name: `rename ${n}` }),
    ),
    phase('creates', '50 connections create a two-song playlist and delete it', 50, async (n) => {
      const created = await call(url, 'eve', 'POST', '/v3/playlist', { name: `c${n}`, songIds: [1, 2] });
      if (created.status !== 200) return created;
      return call(url, 'eve', 'DELETE', `/v3/playlist/${(JSON.parse(created.text) as { id: number }).id}`);
    }),
  ],
});

const XSPF = 'application/xspf+xml';
const xspf = (tracks: readonly string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>Import</title>` +
  `<trackList>${tracks.join('')}</trackList></playlist>\n`;
/** 1 000 tracks that match no song of the catalog (about 55 KB). */
const UNMATCHED = xspf(songs(1000).map((_v, i) => `<track><title>No ${i}</title><creator>Nx ${i}</creator></track>`));
/** A rotation: every op goes over the whole list. */
const LONG_PATCH = JSON.stringify(songs(999).map(() => ({ op: 'move', from: '/songs/0', path: '/songs/999' })));

/** The same songs in another order for each `seed`. */
function shuffled(seed: number): number[] {
  const ids = songs(1000);
  let state = seed + 1;
  for (let i = ids.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    const j = state % (i + 1);
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  return ids;
}

const FILES = phased({
  name: 'hostile-files',
  description: "another user's requests and the health check beside floods of imports, long JSON Patches and diffs",
  seconds: 10,
  users: ['bob', 'eve'],
  async setup({ url }) {
    await tenSongPlaylists(url, 'bob');
    const rotated = (await create(url, 'eve', { name: 'rotated', songIds: shuffled(0) })).id;
    const versioned = (await create(url, 'eve', { name: 'versioned', songIds: shuffled(0) })).id;
    for (let v = 1; v < 10; v++) ok(await patch(url, 'eve', versioned, { songIds: shuffled(v) }), 'an edit');
    return { rotated, versioned };
  },
  probes: () => [
    probe("bob's list at 50/s", 'bob', 50, ['/v3/playlist']),
    probe("bob's one-track import at 5/s", 'bob', 5, ['/v3/playlist/import?name=one'], {
      body: xspf(['<track><location>http://localhost/v3/song/7</location></track>']),
      type: XSPF,
    }),
    probe('/healthz at 20/s, a new connection each', 'bob', 20, ['/healthz'], { fresh: true }),
  ],
  phases: ({ rotated, versioned }, url) => [
    QUIET,
    // `fail` is answered 422; `skip` makes a new empty playlist each time.
    ...['fail', 'skip'].map((unmatched) =>
      phase(unmatched, `80 connections import a file of 1 000 unmatched tracks, ?unmatched=${unmatched}`, 80, () =>
        call(url, 'eve', 'POST', `/v3/playlist/import?unmatched=${unmatched}`, UNMATCHED, XSPF),
      ),
    ),
    phase('patches', '50 connections: JSON Patches of 999 moves of the first song to the end of 1 000', 50, () =>
      patch(url, 'eve', rotated, LONG_PATCH, 'application/json-patch+json'),
    ),
    phase('diffs', '50 connections: the diff of two of ten versions of a 1 000-song playlist', 50, (n) => {
      const [from, to] = [1 + (n % 10), 1 + ((n * 7 + 3) % 10)];
      const other = to === from ? (to % 10) + 1 : to;
      return call(url, 'eve', 'GET', `/v3/playlist/${versioned}/diff?from=${from}&to=${other}`);
    }),
  ],
  /** The mean event-loop delay over each 500 ms, as the load shedding sees it: median and largest. */
  sample({ url }) {
    const stop = sampleLoop(url, 500);
    return async () => {
      const means = (await stop()).map((s) => Math.max(0, s.mean - 10)).sort((a, b) => a - b);
      return { 'loop delay p50 / max': `${round1(percentile(means, 0.5))} / ${round1(means.at(-1) ?? 0)}` };
    };
  },
});

/** An address of its own for the nth request, in 10.0.0.0/8. */
const address = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
const signIn = (url: string, name: string, password: string, from: string) =>
  fetch(`${url}/v3/playlist?limit=1`, { headers: { ...auth(name, password), 'x-forwarded-for': from } });

const SIGN_IN = phased({
  name: 'hostile-sign-in',
  description:
    "another user and the health check beside floods of wrong credentials, and the sign-in budget table's size",
  seconds: 15,
  users: ['victim'],
  // Behind a trusted proxy: each attacker's request names its client in X-Forwarded-For. Victim sends 1 800 a minute.
  settings: { MIXTAPE_TRUST_PROXY: 'loopback', MIXTAPE_RATE_LIMIT: '3000' },
  setup: ({ url }) => tenSongPlaylists(url, 'victim'),
  probes: (reads) => [
    probe("victim's creates at 10/s", 'victim', 10, ['/v3/playlist'], { body: '{"name":"c","songIds":[1,2,3]}' }),
    probe("victim's reads at 20/s", 'victim', 20, reads),
    probe('/healthz at 20/s', 'victim', 20, ['/healthz']),
  ],
  phases: (_reads, url) => [
    QUIET,
    phase('guesses', "16 connections: wrong passwords for victim's name, a new address each", 16, (n) =>
      signIn(url, 'victim', `guess ${n}`, address(n)),
    ),
    phase('names', '16 connections: names no user can have, one address', 16, (n) =>
      signIn(url, `bad name ${n}`, 'x', '198.51.100.7'),
    ),
    phase('addresses', '16 connections: names no user can have, a new address each', 16, (n) =>
      signIn(url, `bad name ${n}`, 'x', address(n)),
    ),
  ],
  /** The budget table's rows, counted every second: at the phase's end, and the most seen. */
  sample({ databaseUrl }) {
    const opened = openSql(databaseUrl);
    const query = 'SELECT count(*) AS n FROM sign_in_budgets';
    const count = async () => Number((await (await opened).all<{ n: string }>(query))[0]?.n);
    let most = 0;
    const timer = setInterval(() => void count().then((n) => (most = Math.max(most, n))), 1000);
    return async () => {
      clearInterval(timer);
      const rows = await count();
      await (await opened).close();
      return { 'budget rows (most)': `${rows} (${Math.max(most, rows)})` };
    };
  },
});

const WORD = 'unasked';
/** One GET, timed to the last byte of its answer as sent (compressed or not). */
async function fetchBytes(agent: Agent, url: string, user: string, path: string, coding: string) {
  const started = performance.now();
  const answer = await send(url, { path, agent, headers: { 'accept-encoding': coding, ...auth(user) } });
  return { ...answer, bytes: answer.body.length, ms: answer.at - started, count: answer.headers['x-total-count'] };
}

/**
 * Mallory shares 300 playlists of 1 000 songs with alice, who never asked; alice reads her shared list and searches
 * it, 50 requests a row one at a time after 5 unmeasured, without and with gzip, beside bob (nothing shared with him)
 * and mallory listing her own. Each row: ms to the answer's last byte, its size, the longest the event loop was held
 * meanwhile (`nodejs_eventloop_lag_max_seconds`, reset at each scrape) and the service's CPU a request.
 */
async function unaskedShares(context: RunContext) {
  const spec = { name: 'unasked-shares', users: ['mallory', 'alice', 'bob'] };
  return withService(context, spec, async ({ url, service }) => {
    const ids: number[] = [];
    await inTurn(300, 2, async (i) => {
      ids[i] = (await create(url, 'mallory', { name: `mix ${i} ${WORD}`, songIds: songs(1000, i) })).id;
    });
    await inTurn(300, 4, async (i) => {
      ok(await call(url, 'mallory', 'PUT', `/v3/playlist/${ids[i]}/members/alice`, { role: 'viewer' }), 'a share');
    });
    const shared = ['shared', 'shared&limit=100', `shared&search=${WORD}`];
    const reads: [string, string][] = [
      ...[...shared, `all&search=${WORD}`].map((q): [string, string] => ['alice', `/v3/playlist?scope=${q}`]),
      ...shared.map((q): [string, string] => ['bob', `/v3/playlist?scope=${q}`]),
      ...['', '?limit=100', `?search=${WORD}`].map((q): [string, string] => ['mallory', `/v3/playlist${q}`]),
    ];
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const loopMax = async () => 1000 * (metric(await scrape(url), 'nodejs_eventloop_lag_max_seconds') ?? NaN);
    const rows = [];
    for (const [who, path] of reads) {
      for (const coding of ['identity', 'gzip']) {
        // The first reads build what memory keeps; the set-up's garbage is collected meanwhile.
        for (let i = 0; i < 5; i++) await fetchBytes(agent, url, who, path, coding);
        await loopMax();
        const cpu = processCpuMs(service.pid ?? 0);
        const answers = [];
        for (let i = 0; i < 50; i++) answers.push(await fetchBytes(agent, url, who, path, coding));
        const cpuMs = round1((processCpuMs(service.pid ?? 0) - cpu) / 50);
        const failed = answers.find((a) => a.status !== 200);
        if (failed !== undefined) throw new Error(`${who} ${path}: ${failed.status}`);
        const { p50, p99 } = summarize(answers.map((a) => a.ms));
        const { bytes, count = '' } = answers.at(-1)!;
        rows.push({ who, path, coding, p50, p99, bytes, count, loopMaxMs: round1(await loopMax()), cpuMs });
        console.error(JSON.stringify(rows.at(-1)));
      }
    }
    agent.destroy();
    return { dialect: context.dialect, rows };
  });
}

const UNASKED_SHARES: OwnScenario<Awaited<ReturnType<typeof unaskedShares>>> = {
  ...{ name: 'unasked-shares', seconds: 0, run: unaskedShares },
  description: '300 playlists of 1 000 songs shared with a user who never asked, read by her',
};

export const HOSTILE: readonly OwnScenario[] = [NEIGHBOURS, SEARCH, WRITES, SIGN_IN, FILES, UNASKED_SHARES];
