/**
 * A page read and a repeated search, statement by statement, against the way they were run before, alternating the
 * ways for seven rounds, each keeping its best µs of CPU a call (and the PostgreSQL server's), on load data sets.
 *
 *   npx tsx bench/page-reads.ts [bench/data/sqlite-10010.db] [postgres://root@127.0.0.1:5432/mixtape_bench_10010]
 */
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Db } from '../src/db/database.js';
import { catalogVersion } from '../src/db/playlist-changes.js';
import type { Database } from '../src/db/schema.js';
import { pageOfPlaylists } from '../src/playlists/playlist.repository.js';
import { libraryVersion, libraryVersions } from '../src/search/search.repository.js';
import { sqliteCopy } from './micro.js';
import { processCpuMs } from './service.js';

const sqliteSource = process.argv[2] ?? 'bench/data/sqlite-10010.db';
const postgresUrl = process.argv[3] ?? 'postgres://root@127.0.0.1:5432/mixtape_bench_10010';
const ROUNDS = 7;
const CALLS = 2000;
const PAGE = 20;

/** The page query as it was built for every request before it was compiled once. */
const pageBuiltEachTime = (q: Kysely<Database>, ownerId: number) =>
  q
    .selectFrom('playlists as p')
    .select([
      'p.id',
      'p.version',
      (eb) => eb.selectFrom('users').select('playlist_count').where('users.id', '=', ownerId).as('total'),
    ])
    .where('p.owner_id', '=', ownerId)
    .orderBy('p.id')
    .limit(PAGE)
    .offset(0)
    .select(catalogVersion)
    .execute();

/** The versions of a search page's playlists, read after the library version, as before they were read with it. */
const versionsAfter = (q: Kysely<Database>, ids: readonly number[]) =>
  q.selectFrom('playlists').select(['id', 'version']).where('id', 'in', ids).execute();

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/**
 * µs of CPU and of wall time a call, the best of ROUNDS rounds of CALLS calls, for each way, rounds alternating; with
 * `server`, the PostgreSQL server process of the one connection, its CPU a call too.
 */
async function compare(ways: Readonly<Record<string, () => Promise<unknown>>>, server?: number) {
  const best = Object.fromEntries(
    Object.keys(ways).map((name) => [name, { cpu: Infinity, wall: Infinity, server: Infinity }]),
  );
  for (const run of Object.values(ways)) for (let i = 0; i < 200; i++) await run();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(ways)) {
      const cpu = cpuMicros();
      const serverCpu = server === undefined ? 0 : processCpuMs(server) * 1000;
      const wall = performance.now();
      for (let i = 0; i < CALLS; i++) await run();
      const entry = best[name]!;
      entry.cpu = Math.min(entry.cpu, (cpuMicros() - cpu) / CALLS);
      entry.wall = Math.min(entry.wall, ((performance.now() - wall) * 1000) / CALLS);
      if (server !== undefined)
        entry.server = Math.min(entry.server, (processCpuMs(server) * 1000 - serverCpu) / CALLS);
    }
  }
  for (const [name, { cpu, wall, server: serverCpu }] of Object.entries(best)) {
    const serverPart = server === undefined ? '' : `, server ${serverCpu.toFixed(1).padStart(6)} µs CPU`;
    console.log(
      `  ${name.padEnd(58)} ${cpu.toFixed(1).padStart(7)} µs CPU ${wall.toFixed(1).padStart(7)} µs wall${serverPart}`,
    );
  }
}

/** The PostgreSQL server process that serves the pool's one connection. */
async function serverPid(db: Db): Promise<number> {
  const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db.kysely);
  return rows[0]!.pid;
}

/** The users who own playlists, to spread the calls over (as the bench spreads requests over its users). */
async function owners(db: Db): Promise<number[]> {
  const rows = await db.kysely
    .selectFrom('playlists')
    .select('owner_id')
    .groupBy('owner_id')
    .orderBy('owner_id')
    .limit(32)
    .execute();
  return rows.map((row) => row.owner_id);
}

async function pages(db: Db, label: string, server?: number) {
  const users = await owners(db);
  let next = 0;
  const owner = () => users[next++ % users.length]!;
  console.log(`${label}: a page of ${PAGE} of an owner's playlists`);
  await compare(
    {
      'built and compiled for each page (before)': () => pageBuiltEachTime(db.kysely, owner()),
      'compiled once (pageOfPlaylists)': () => pageOfPlaylists(db.kysely, owner(), PAGE, 0),
    },
    server,
  );
}

const copy = sqliteCopy(sqliteSource);
const sqlite = openDatabase(loadConfig({ DATABASE_URL: `sqlite:${copy.file}` }).database);
try {
  await pages(sqlite, 'SQLite');
} finally {
  await sqlite.close();
  copy.done();
}

const postgres = openDatabase(loadConfig({ DATABASE_URL: postgresUrl, DATABASE_POOL_SIZE: '1' }).database);
try {
  const server = await serverPid(postgres);
  await pages(postgres, 'PostgreSQL', server);
  const users = await owners(postgres);
  const pageIds = new Map<number, number[]>();
  for (const user of users) {
    const rows = await postgres.kysely
      .selectFrom('playlists')
      .select('id')
      .where('owner_id', '=', user)
      .orderBy('id')
      .limit(3)
      .execute();
    pageIds.set(
      user,
      rows.map((row) => row.id),
    );
  }
  let next = 0;
  const user = () => users[next++ % users.length]!;
  console.log('PostgreSQL: a repeated search of 3 playlists, confirmed');
  await compare(
    {
      'the library version, then the versions (before)': async () => {
        const id = user();
        await libraryVersion(postgres.kysely, id);
        await versionsAfter(postgres.kysely, pageIds.get(id)!);
      },
      'both in one statement (libraryVersions)': async () => {
        const id = user();
        await libraryVersions(postgres.kysely, [{ userId: id, ids: pageIds.get(id)! }]);
      },
    },
    server,
  );
} finally {
  await postgres.close();
}
