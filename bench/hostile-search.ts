/**
 * Hostile searches: how fast other users' small requests and the health checks stay while one signed-in user sends
 * the most expensive searches they can make, and whether a search's time tells one user what another user's
 * playlists contain. On a service and database of its own (SQLite, or a new PostgreSQL database):
 *
 * - quiet: nobody else works (the baseline, measured in the same run);
 * - scan: mallory (2 000 playlists, each named with 200 × `㌖`, which normalises to six letters each) searches
 *   `<33 × ㌖>x` (199 letters once normalised, the longest search there is; `<199 × ㌖>x` is now refused with 400)
 *   with `limit=1` on 4 connections as fast as answers come;
 * - large: trudy (10 000 playlists named `a` × 200, the most a user may have) searches `a` × 200, which every one
 *   of them matches, on 4 connections;
 * - privacy: spy (2 100 playlists of her own) searches a text that eve's 2 100 playlists contain and one that nobody
 *   has, one at a time; the two medians should be the same.
 *
 * During the first three, a victim reads a 10-song playlist at 50/s and a probe calls /healthz and /readyz at 20/s,
 * each timed from when it was due. `npm run bench -- --only hostile-search [--dialect postgres]`, or alone with
 * `npx tsx bench/hostile-search.ts [--dialect sqlite|postgres] [--duration S]`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { startService } from './service.js';
import { addUser, auth, heavyLoad, percentile, post, victimLoad, type VictimLatency } from './neighbours.js';
import { runStandalone } from './standalone.js';

const SCAN_PLAYLISTS = 2000;
const LARGE_PLAYLISTS = 10_000;
const PRIVACY_PLAYLISTS = 2100;
const HOSTILE_CONNECTIONS = 4;
const PRIVACY_SEARCHES = 20;

export interface HostilePhase {
  readonly name: string;
  readonly description: string;
  readonly victim: VictimLatency;
  readonly probes: VictimLatency;
  readonly hostileRps: number;
  readonly hostileStatuses: Readonly<Record<string, number>>;
}

export interface PrivacyTiming {
  /** Median and slowest milliseconds of spy's search for a text only eve's playlists contain. */
  readonly othersTextMs: { readonly p50: number; readonly max: number; readonly statuses: Record<string, number> };
  /** The same for a text nobody has. */
  readonly nobodysTextMs: { readonly p50: number; readonly max: number; readonly statuses: Record<string, number> };
}

export interface HostileResults {
  readonly dialect: 'sqlite' | 'postgres';
  readonly durationSeconds: number;
  readonly phases: readonly HostilePhase[];
  readonly privacy: PrivacyTiming;
}

const search = (url: string, user: string, text: string, limit = 1) =>
  fetch(`${url}/v3/playlist?limit=${limit}&search=${encodeURIComponent(text)}`, { headers: auth(user) });

/** `count` playlists of one song named `name(i)`, 16 at a time. */
async function fill(url: string, user: string, count: number, name: (i: number) => string): Promise<void> {
  const connections = 16;
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < count; i = next++) {
      const response = await post(url, user, name(i), [1 + (i % 200)]);
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`creating ${user}'s playlist ${i}: ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
}

async function timedSearches(url: string, user: string, text: string) {
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  for (let i = 0; i < PRIVACY_SEARCHES; i++) {
    const started = performance.now();
    const response = await search(url, user, text);
    await response.arrayBuffer();
    times.push(performance.now() - started);
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
  }
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return { p50: round(percentile(times, 0.5)), max: round(times.at(-1) ?? 0), statuses };
}

export interface Database {
  readonly url: string;
  drop(): Promise<void>;
}

/** A new, empty database of the dialect for one measurement (`name` tells it apart), dropped by `drop()`. */
export async function newDatabase(dialect: 'sqlite' | 'postgres', pgUrl: string, name = 'hostile'): Promise<Database> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `mixtape-${name}-`));
    return {
      url: `sqlite:${join(dir, 'mixtape.db')}`,
      drop() {
        rmSync(dir, { recursive: true, force: true });
        return Promise.resolve();
      },
    };
  }
  const database = `mixtape_bench_${name.replace(/\W/g, '_')}_${process.pid}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const url = new URL(pgUrl);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Runs the phases on a service of its own; the service must be built (dist/). */
export async function measureHostileSearch(
  dialect: 'sqlite' | 'postgres',
  pgUrl: string,
  durationSeconds: number,
  logDir: string,
): Promise<HostileResults> {
  const database = await newDatabase(dialect, pgUrl);
  try {
    const users = ['victim', 'mallory', 'trudy', 'eve', 'spy'];
    for (const name of users) addUser(database.url, name);
    mkdirSync(logDir, { recursive: true });
    const service = await startService({
      databaseUrl: database.url,
      logFile: join(logDir, `service-hostile-search-${dialect}.log`),
      settings: { LOG_LEVEL: 'info' },
      profile: false,
      cpu: 0,
    });
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    try {
      const { url } = service;
      const km = '㌖';
      await fill(url, 'mallory', SCAN_PLAYLISTS, () => km.repeat(200));
      await fill(url, 'trudy', LARGE_PLAYLISTS, () => 'a'.repeat(200));
      await fill(url, 'eve', PRIVACY_PLAYLISTS, () => km.repeat(200));
      await fill(url, 'spy', PRIVACY_PLAYLISTS, (i) => `spy ${i}`);
      const paths: string[] = [];
      for (let i = 0; i < 20; i++) {
        const response = await post(url, 'victim', `short ${i}`, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        paths.push(`/v3/playlist/${((await response.json()) as { id: number }).id}`);
      }
      const probes = ['/healthz', '/readyz'];

      const phases: HostilePhase[] = [];
      const phase = async (
        name: string,
        description: string,
        hostile: (() => Promise<Response>) | undefined,
      ): Promise<void> => {
        const [victim, probe, load] = await Promise.all([
          victimLoad(url, paths, durationSeconds),
          victimLoad(url, probes, durationSeconds, 'victim', 20),
          hostile === undefined
            ? Promise.resolve({ heavyRps: 0, heavyStatuses: {} })
            : heavyLoad(HOSTILE_CONNECTIONS, durationSeconds, hostile),
        ]);
        phases.push({
          name,
          description,
          victim,
          probes: probe,
          hostileRps: load.heavyRps,
          hostileStatuses: load.heavyStatuses,
        });
      };
      await phase('quiet', 'nobody else', undefined);
      await phase('scan', `4 connections: mallory searches <33 × ㌖>x over ${SCAN_PLAYLISTS} playlists`, () =>
        search(url, 'mallory', `${km.repeat(33)}x`),
      );
      await phase('large', `4 connections: trudy searches a × 200 over ${LARGE_PLAYLISTS} playlists`, () =>
        search(url, 'trudy', 'a'.repeat(200)),
      );
      const othersTextMs = await timedSearches(url, 'spy', km.repeat(33));
      const nobodysTextMs = await timedSearches(url, 'spy', '㌕'.repeat(33));
      return { dialect, durationSeconds, phases, privacy: { othersTextMs, nobodysTextMs } };
    } finally {
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

export function formatHostileSearch(results: HostileResults): string {
  const [quiet] = results.phases;
  const lines = [
    `Hostile searches (${results.dialect}): another user's GET at 50/s and /healthz, /readyz at 20/s, ms from when due`,
    '| phase | victim p50 | victim p99 | victim max | p99 / quiet p99 | health p99 | health max | hostile answers/s | hostile statuses |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of results.phases) {
    const ratio = quiet === undefined || quiet.victim.p99 === 0 ? '' : (p.victim.p99 / quiet.victim.p99).toFixed(1);
    lines.push(
      `| ${p.description} | ${p.victim.p50} | ${p.victim.p99} | ${p.victim.max} | ${ratio} | ${p.probes.p99} | ${p.probes.max} | ${p.hostileRps} | ${JSON.stringify(p.hostileStatuses)} |`,
    );
  }
  const { othersTextMs: others, nobodysTextMs: nobody } = results.privacy;
  lines.push(
    '',
    `Privacy: spy's search, ${PRIVACY_SEARCHES} times each: for eve's text p50 ${others.p50} ms (max ${others.max}, ` +
      `${JSON.stringify(others.statuses)}), for nobody's text p50 ${nobody.p50} ms (max ${nobody.max}, ` +
      `${JSON.stringify(nobody.statuses)}); ratio ${(others.p50 / Math.max(nobody.p50, 0.001)).toFixed(2)}`,
  );
  return lines.join('\n');
}

runStandalone('hostile-search.ts', measureHostileSearch, formatHostileSearch);
