/**
 * What one user costs a PostgreSQL database (docs/scaling.md): every table's rows and bytes for `--users` users of 100
 * playlists of 50 songs, and with `--creates N`, N creates through the service: time, WAL and growth of each.
 *
 *   npx tsx bench/footprint.ts [--users 1000] [--creates 2000] [--pg-url URL] [--keep]
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { create, inTurn } from './load.js';
import { Random } from './random.js';
import { DATA_DIR, DEFAULT_PG_URL, admin, openSql, startService } from './service.js';
import { datasetStore, ensureDataset } from './store.js';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '1000' },
    'pg-url': { type: 'string', default: DEFAULT_PG_URL },
    keep: { type: 'boolean', default: false },
    creates: { type: 'string', default: '0' },
  },
});
const [users, creates] = [Number(values.users), Number(values.creates)];
if (!Number.isInteger(users) || users < 10 || !Number.isInteger(creates) || creates < 0)
  throw new Error('--users takes a whole number of at least 10, --creates a whole number');
const store = datasetStore('postgres', `footprint_${users}`, values['pg-url']);
const params = { playlists: users * 100, playlistsPerUser: 100, songs: 50_000, seed: 1, songsPerPlaylist: 50 };
const { meta } = await ensureDataset(store, params, false);
/** Tables whose size follows the catalog or the service, not the number of users. */
const SHARED = ['songs', 'catalog_version', 'service_probe', 'kysely_migration', 'kysely_migration_lock'];

const sql = await openSql(store.databaseUrl);
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
try {
  const tables = await sql.all<{ t: string }>(
    `SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'bench_dataset' ORDER BY 1`,
  );
  const [{ v }] = (await sql.all<{ v: string }>("SELECT current_setting('server_version') AS v")) as [{ v: string }];
  console.log(
    `\nPostgreSQL ${v}, ${users} users x 100 playlists x 50 songs (${meta.playlistSongs} entries), a catalog of ` +
      `50000 songs; bulk-loaded, then VACUUM ANALYZE\n`,
  );
  console.log('| table | rows | rows per user | heap MiB | TOAST MiB | indexes MiB | total MiB | bytes per user |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  let [perUser, shared] = [0, 0];
  for (const { t } of tables) {
    const [s] = await sql.all<Record<'rows' | 'heap' | 'toast' | 'indexes' | 'total', string>>(
      `SELECT (SELECT count(*) FROM "${t}") AS rows, pg_relation_size(?::regclass) AS heap,
         pg_table_size(?::regclass) - pg_relation_size(?::regclass) - pg_relation_size(?::regclass, 'fsm')
           - pg_relation_size(?::regclass, 'vm') AS toast,
         pg_indexes_size(?::regclass) AS indexes, pg_total_relation_size(?::regclass) AS total`,
      Array<string>(7).fill(t),
    );
    const total = Number(s!.total);
    const own = !SHARED.includes(t);
    if (own) perUser += total / users;
    else shared += total;
    const parts = [s!.heap, s!.toast, s!.indexes].map((b) => mib(Number(b))).join(' | ');
    const rows = own ? (Number(s!.rows) / users).toFixed(1) : '(shared)';
    console.log(`| ${t} | ${s!.rows} | ${rows} | ${parts} | ${mib(total)} | ${own ? Math.round(total / users) : ''} |`);
  }
  const [{ b }] = (await sql.all<{ b: string }>('SELECT pg_database_size(current_database()) AS b')) as [{ b: string }];
  console.log(
    `\nPer user: ${(perUser / 1024).toFixed(1)} KiB (${Math.round(perUser / 100)} bytes per playlist, ` +
      `${(perUser / 5000).toFixed(1)} per entry); shared (catalog, schema): ${mib(shared)} MiB; the database: ${mib(Number(b))} MiB`,
  );
  /** The tables that grow with users, summed, and the WAL position. */
  const growth = async () =>
    (
      await sql.all<{ bytes: string; wal: string }>(
        `SELECT (SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(?::text[]) AS t) AS bytes,
           pg_current_wal_lsn()::text AS wal`,
        [tables.map(({ t }) => t).filter((t) => !SHARED.includes(t))],
      )
    )[0]!;
  if (creates > 0) {
    const service = await startService({
      databaseUrl: store.databaseUrl,
      logFile: join(DATA_DIR, 'footprint-service.log'),
      settings: { MIXTAPE_PLAYLISTS_PER_USER: '1000000000', LOG_LEVEL: 'warn' },
    });
    try {
      const writers = meta.users.slice(0, 8).map((u) => u.name);
      // One sign-in each first, one at a time: the service checks few at once from one address (then 429).
      for (const name of writers) await create(service.url, name, { name: 'first', songIds: [1] });
      const random = new Random(7);
      const before = await growth();
      const started = performance.now();
      await inTurn(creates, 8, async (n) => {
        const songIds = Array.from({ length: 50 }, () => random.between(1, 50_000));
        await create(service.url, writers[n % 8]!, { name: `Footprint ${n}`, songIds });
      });
      const seconds = (performance.now() - started) / 1000;
      const after = await growth();
      const [{ d }] = (await sql.all<{ d: string }>('SELECT pg_wal_lsn_diff(?, ?) AS d', [after.wal, before.wal])) as [
        { d: string },
      ];
      console.log(
        `\nThrough the service: ${creates} creates of 50 songs, 8 at a time, in ${seconds.toFixed(1)} s ` +
          `(${Math.round(creates / seconds)}/s); per create: ${Math.round(Number(d) / creates)} bytes of WAL, ` +
          `${Math.round((Number(after.bytes) - Number(before.bytes)) / creates)} bytes of table and index growth`,
      );
    } finally {
      await service.stop();
    }
  }
} finally {
  await sql.close();
}
if (!values.keep) await admin(values['pg-url'], `DROP DATABASE IF EXISTS ${store.database} WITH (FORCE)`);
