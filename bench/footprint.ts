/**
 * What one user costs a PostgreSQL database (docs/scaling.md): generates USERS users of 100 playlists of 50 songs
 * each with the bench's generator (the service's own migrations, search documents and password hash) into a private
 * database, then prints every table's rows and bytes (heap, TOAST and indexes: `pg_total_relation_size`), per user
 * for the tables that grow with users. The database is dropped afterwards unless `--keep` (a kept one with the same
 * parameters is reused by the next run).
 *
 * With `--creates N`, the built service (`npm run build`) is then started on that database and N more playlists of 50
 * songs are created through its API (8 at a time, spread over 8 users), and what each cost is printed: time, WAL
 * written, and growth of the tables (a live service's writes, with index page splits, rather than a bulk load).
 *
 *   npx tsx bench/footprint.ts [--users 1000] [--creates 2000] [--pg-url postgres://root@127.0.0.1:5432/postgres] [--keep]
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ensureDataset } from './generate.js';
import { Random } from './random.js';
import { authorization } from './scenarios.js';
import { ROOT, startService } from './service.js';
import { postgresStore } from './store-postgres.js';
import { META_TABLE } from './store.js';

const PLAYLISTS_PER_USER = 100;
const SONGS_PER_PLAYLIST = 50;
const CATALOG_SONGS = 50_000;
/** Tables whose size follows the catalog or the service, not the number of users. */
const SHARED_TABLES = new Set([
  'songs',
  'catalog_version',
  'service_probe',
  'kysely_migration',
  'kysely_migration_lock',
]);

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '1000' },
    'pg-url': { type: 'string', default: 'postgres://root@127.0.0.1:5432/postgres' },
    keep: { type: 'boolean', default: false },
    creates: { type: 'string', default: '0' },
  },
});
const creates = Number(values.creates);
if (!Number.isInteger(creates) || creates < 0) throw new Error('--creates must be a whole number');
const users = Number(values.users);
if (!Number.isInteger(users) || users < 10) throw new Error('--users must be an integer of at least 10');
const adminUrl = values['pg-url'];
const database = `mixtape_footprint_${users}`;

const store = postgresStore(adminUrl, database);
const { meta } = await ensureDataset(
  store,
  {
    playlists: users * PLAYLISTS_PER_USER,
    playlistsPerUser: PLAYLISTS_PER_USER,
    songs: CATALOG_SONGS,
    seed: 1,
    songsPerPlaylist: SONGS_PER_PLAYLIST,
  },
  // A database kept by an earlier `--keep` with the same parameters is reused, less what its creates added.
  false,
);

interface TableRow {
  table: string;
  rows: string;
  heap: string;
  toast: string;
  indexes: string;
  total: string;
}

const client = new pg.Client({ connectionString: store.databaseUrl });
await client.connect();
let tables: TableRow[];
let databaseBytes: number;
let version: string;
try {
  const names = await client.query<{ table: string }>(
    `SELECT tablename AS table FROM pg_tables WHERE schemaname = 'public' AND tablename <> $1 ORDER BY tablename`,
    [META_TABLE],
  );
  tables = [];
  for (const { table } of names.rows) {
    const size = await client.query<TableRow>(
      `SELECT $1::text AS table, (SELECT count(*) FROM ${client.escapeIdentifier(table)})::text AS rows,
              pg_relation_size($1::regclass)::text AS heap,
              (pg_table_size($1::regclass) - pg_relation_size($1::regclass)
                - pg_relation_size($1::regclass, 'fsm') - pg_relation_size($1::regclass, 'vm'))::text AS toast,
              pg_indexes_size($1::regclass)::text AS indexes,
              pg_total_relation_size($1::regclass)::text AS total`,
      [table],
    );
    tables.push(size.rows[0]!);
  }
  databaseBytes = Number(
    (await client.query<{ b: string }>('SELECT pg_database_size(current_database()) AS b')).rows[0]!.b,
  );
  version = (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
} finally {
  await client.end();
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1);
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
console.log(
  `\nPostgreSQL ${version}, ${users} users x ${PLAYLISTS_PER_USER} playlists x ${SONGS_PER_PLAYLIST} songs ` +
    `(${meta.playlistSongs} entries), a catalog of ${CATALOG_SONGS} songs; bulk-loaded, then VACUUM ANALYZE\n`,
);
console.log('| table | rows | rows per user | heap MiB | TOAST MiB | indexes MiB | total MiB | bytes per user |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
let perUserBytes = 0;
let sharedBytes = 0;
for (const t of tables) {
  const total = Number(t.total);
  const shared = SHARED_TABLES.has(t.table);
  if (shared) sharedBytes += total;
  else perUserBytes += total / users;
  console.log(
    `| ${t.table} | ${t.rows} | ${shared ? '(shared)' : (Number(t.rows) / users).toFixed(1)} | ${mib(Number(t.heap))} | ` +
      `${mib(Number(t.toast))} | ${mib(Number(t.indexes))} | ${mib(total)} | ${shared ? '' : Math.round(total / users)} |`,
  );
}
console.log(
  `\nPer user: ${kib(perUserBytes)} KiB (${Math.round(perUserBytes / PLAYLISTS_PER_USER)} bytes per playlist, ` +
    `${(perUserBytes / (PLAYLISTS_PER_USER * SONGS_PER_PLAYLIST)).toFixed(1)} per entry); shared (catalog, schema): ` +
    `${mib(sharedBytes)} MiB; the database: ${mib(databaseBytes)} MiB`,
);

/** Sum of pg_total_relation_size over the tables that grow with users, and the WAL position. */
async function measureGrowth(): Promise<{ bytes: number; wal: string }> {
  const c = new pg.Client({ connectionString: store.databaseUrl });
  await c.connect();
  try {
    const names = tables.filter((t) => !SHARED_TABLES.has(t.table)).map((t) => t.table);
    const row = await c.query<{ bytes: string; wal: string }>(
      `SELECT (SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest($1::text[]) AS t)::text AS bytes,
              pg_current_wal_lsn()::text AS wal`,
      [names],
    );
    return { bytes: Number(row.rows[0]!.bytes), wal: row.rows[0]!.wal };
  } finally {
    await c.end();
  }
}

if (creates > 0) {
  mkdirSync(join(ROOT, 'bench/data'), { recursive: true });
  const service = await startService({
    databaseUrl: store.databaseUrl,
    logFile: join(ROOT, 'bench/data/footprint-service.log'),
    settings: { MIXTAPE_PLAYLISTS_PER_USER: '1000000000', LOG_LEVEL: 'warn' },
    profile: false,
  });
  try {
    const writers = meta.users.slice(0, 8);
    const random = new Random(7);
    // One sign-in each first, one at a time: the service checks at most 4 at once from one address (then 429).
    for (const user of writers) {
      const answer = await fetch(`${service.url}/v3/playlist?limit=1`, { headers: authorization(user, meta.password) });
      if (answer.status !== 200) throw new Error(`sign-in answered ${answer.status}`);
      await answer.arrayBuffer();
    }
    const before = await measureGrowth();
    const started = performance.now();
    let next = 0;
    await Promise.all(
      writers.map(async (user) => {
        const headers = { ...authorization(user, meta.password), 'content-type': 'application/json' };
        while (next < creates) {
          next += 1;
          const songIds = Array.from({ length: SONGS_PER_PLAYLIST }, () => random.between(1, CATALOG_SONGS));
          const answer = await fetch(`${service.url}/v3/playlist`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ name: `Footprint ${next}`, songIds }),
          });
          if (answer.status !== 200) throw new Error(`create answered ${answer.status}: ${await answer.text()}`);
          await answer.arrayBuffer();
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const after = await measureGrowth();
    const c = new pg.Client({ connectionString: store.databaseUrl });
    await c.connect();
    const wal = Number(
      (await c.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [after.wal, before.wal])).rows[0]!.d,
    );
    await c.end();
    console.log(
      `
Through the service: ${creates} creates of ${SONGS_PER_PLAYLIST} songs, 8 at a time, in ${seconds.toFixed(1)} s ` +
        `(${Math.round(creates / seconds)}/s); per create: ${Math.round(wal / creates)} bytes of WAL, ` +
        `${Math.round((after.bytes - before.bytes) / creates)} bytes of table and index growth`,
    );
  } finally {
    await service.stop();
  }
}

if (!values.keep) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
