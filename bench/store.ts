/**
 * Where the load data set lives, a SQLite file or a PostgreSQL database, and its generation: the schema from the
 * service's own migrations, then bulk inserts (prepared statements in large transactions on SQLite, `unnest` arrays
 * on PostgreSQL) with the secondary indexes dropped first and rebuilt at the end from their own DDL.
 */
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import { loadConfig } from '../src/config.js';
import { hashPassword } from '../src/credentials/password.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { playlistDocument } from '../src/domain/search-text.js';
import * as data from './dataset.js';
import { DATA_DIR, PASSWORD, admin, databaseUrl, openSql, type Dialect, type Sql } from './service.js';

/** The settings of the load, and the secondary indexes dropped during it and rebuilt after it from their own DDL. */
const LOADING = {
  sqlite:
    'PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF; PRAGMA cache_size = -1048576; PRAGMA temp_store = MEMORY',
  postgres: `SET synchronous_commit = off; SET maintenance_work_mem = '1GB'`,
};
const TABLES = `('playlists', 'playlist_songs', 'playlist_documents')`;
const INDEXES = {
  sqlite: `SELECT name, sql AS ddl FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ${TABLES}`,
  postgres: `SELECT indexname AS name, indexdef AS ddl FROM pg_indexes WHERE schemaname = current_schema()
    AND tablename IN ${TABLES} AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
};
/**
 * Back to the normal settings. No ANALYZE on SQLite: the service never runs it. On PostgreSQL, rows came with their
 * ids, which leaves the identity sequences behind.
 */
const LOADED = {
  sqlite: 'PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA wal_checkpoint(TRUNCATE)',
  postgres: ['users', 'songs', 'playlists']
    .map((t) => `SELECT setval(pg_get_serial_sequence('${t}', 'id'), GREATEST((SELECT max(id) FROM ${t}), 1));`)
    .concat('SET synchronous_commit = on')
    .join(' '),
};
/** The table, next to the service's, that holds the `DatasetMeta` as JSON. */
const META_TABLE = 'bench_dataset';
/** Playlists per transaction (SQLite) or per set of `unnest` inserts (PostgreSQL). */
const BATCH = 5000;

/** A data set by its name (the playlists' number): `bench/data/sqlite-<name>.db`, or a database `mixtape_bench_<name>`. */
export function datasetStore(dialect: Dialect, name: string, adminUrl: string) {
  const [file, database] = [join(DATA_DIR, `sqlite-${name}.db`), `mixtape_bench_${name}`];
  const url = dialect === 'sqlite' ? `sqlite:${file}` : databaseUrl(adminUrl, database);
  const files = [file, `${file}-wal`, `${file}-shm`];
  const query = async (text: string, on = url) => {
    const sql = await openSql(on);
    return sql.all<{ n: string }>(text, [database]).finally(() => sql.close());
  };
  return {
    ...{ dialect, database, databaseUrl: url },
    location: dialect === 'sqlite' ? file : url.replace(/\/\/[^@/]*@/, '//'),
    exists: async () =>
      dialect === 'sqlite'
        ? existsSync(file)
        : (await query('SELECT 1 AS n FROM pg_database WHERE datname = ?', adminUrl)).length > 0,
    /** Bytes on disk. */
    size: async () =>
      dialect === 'sqlite'
        ? files.filter((f) => existsSync(f)).reduce((sum, f) => sum + statSync(f).size, 0)
        : Number((await query('SELECT pg_database_size(?) AS n'))[0]?.n),
    /** Throws away whatever is there, then the schema from the service's own migrations and connection code. */
    async recreate() {
      for (const path of dialect === 'sqlite' ? files : []) rmSync(path, { force: true });
      mkdirSync(DATA_DIR, { recursive: true });
      if (dialect === 'postgres')
        await admin(adminUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`, `CREATE DATABASE ${database}`);
      const db = openDatabase(loadConfig({ DATABASE_URL: url, DATABASE_POOL_SIZE: '1' }).database);
      await migrateToLatest(db).finally(() => db.close());
    },
  };
}

export type DatasetStore = ReturnType<typeof datasetStore>;

const postgres = (sql: Sql) => sql.sqlite === undefined;

/** The metadata of a complete generation, or undefined (nothing there, or an interrupted generation). */
async function readMeta(store: DatasetStore): Promise<data.DatasetMeta | undefined> {
  if (!(await store.exists())) return undefined;
  const sql = await openSql(store.databaseUrl);
  try {
    const [row] = await sql.all<{ meta: string }>(`SELECT meta FROM ${META_TABLE}`);
    return row === undefined ? undefined : (JSON.parse(row.meta) as data.DatasetMeta);
  } catch {
    return undefined;
  } finally {
    await sql.close();
  }
}

/**
 * Brings the data set back to its generated state: removes the playlists a run created, the deletes and revisions
 * it logged, and cuts the ten-song playlists the edit scenario appended to back to their ten songs and version 1.
 * Returns how many playlists it removed.
 */
async function reset(store: DatasetStore, meta: data.DatasetMeta): Promise<number> {
  const sql = await openSql(store.databaseUrl);
  const last = meta.lastPlaylistId;
  try {
    if (!postgres(sql)) await sql.run('PRAGMA foreign_keys = ON');
    await sql.run('BEGIN');
    await sql.run(
      `UPDATE users SET playlist_count = playlist_count -
         (SELECT count(*) FROM playlists p WHERE p.owner_id = users.id AND p.id > ?)
       WHERE id IN (SELECT owner_id FROM playlists WHERE id > ?)`,
      [last, last],
    );
    await sql.run('DELETE FROM deleted_playlists');
    await sql.run('DELETE FROM playlist_revisions');
    const edited = await sql.all<{ id: number; name: string }>(
      'SELECT id, name FROM playlists WHERE id <= ? AND version > 1',
      [last],
    );
    for (const { id, name } of edited) {
      await sql.run('DELETE FROM playlist_songs WHERE playlist_id = ? AND entry > 10', [id]);
      const songs = await sql.all<{ title: string; artist: string; genre: string }>(
        `SELECT s.title, s.artist, s.genre FROM playlist_songs ps JOIN songs s ON s.id = ps.song_id
         WHERE ps.playlist_id = ? ORDER BY ps.ord, ps.entry`,
        [id],
      );
      await sql.run('UPDATE playlist_documents SET doc = ? WHERE playlist_id = ?', [playlistDocument(name, songs), id]);
      await sql.run('UPDATE playlists SET version = 1 WHERE id = ?', [id]);
    }
    const [{ n } = { n: 0 }] = await sql.all<{ n: number | string }>(
      'SELECT count(*) AS n FROM playlists WHERE id > ?',
      [last],
    );
    // Cascades to the entries and the search documents.
    await sql.run('DELETE FROM playlists WHERE id > ?', [last]);
    await sql.run('COMMIT');
    // Dead rows and stale statistics change PostgreSQL's plans: the next run would not measure the generated state.
    if (postgres(sql) && Number(n) > 0) await sql.run('VACUUM ANALYZE');
    if (!postgres(sql)) await sql.run('PRAGMA wal_checkpoint(TRUNCATE)');
    return Number(n);
  } finally {
    await sql.close();
  }
}

/** The PostgreSQL type of a column of the bulk-loaded tables, by its name. */
const pgType = (column: string) =>
  /^(duration|playlist_count)$/.test(column) ? 'int' : /(^id|_id|entry|_at)$/.test(column) ? 'bigint' : 'text';

/** Rows into `table`: row by row on SQLite, in statements of `unnest` arrays on PostgreSQL. */
async function bulk(sql: Sql, table: string, rows: data.Rows) {
  const columns = Object.keys(rows[0] ?? {});
  const into = `INSERT INTO ${table} (${columns.join(', ')})`;
  if (sql.sqlite !== undefined) {
    const insert = sql.sqlite.prepare(`${into} VALUES (${columns.map(() => '?').join(', ')})`);
    for (const row of rows) insert.run(...Object.values(row));
    return;
  }
  for (let start = 0; start < rows.length; start += 100_000) {
    const chunk = rows.slice(start, start + 100_000);
    const unnest = columns.map((c) => `?::${pgType(c)}[]`).join(', ');
    const arrays = columns.map((c) => chunk.map((row) => row[c]));
    await sql.run(`${into} SELECT * FROM unnest(${unnest})`, arrays);
  }
}

/** Sets of rows by table, in one transaction. */
async function insert(sql: Sql, tables: Record<string, data.Rows>) {
  await sql.run('BEGIN');
  for (const [table, rows] of Object.entries(tables)) await bulk(sql, table, rows);
  await sql.run('COMMIT');
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/** Every generated row, into an empty schema; the metadata last, so that an interrupted generation is redone. */
async function generate(store: DatasetStore, params: data.DatasetParams): Promise<data.DatasetMeta> {
  data.assertPlantedWordUnused();
  const started = performance.now();
  console.log(`Data set: generating ${params.playlists} playlists into ${store.location}`);
  await store.recreate();
  const sql = await openSql(store.databaseUrl);
  try {
    // For the load only: a crash means generating again, so nothing waits for the disk.
    const dialect = postgres(sql) ? 'postgres' : 'sqlite';
    await sql.run(LOADING[dialect]);
    const indexes = await sql.all<{ name: string; ddl: string }>(INDEXES[dialect]);
    for (const index of indexes) await sql.run(`DROP INDEX "${index.name}"`);
    const catalog = data.buildCatalog(params);
    const users = data.planUsers(params);
    // One scrypt hash for every user, by the service's own code.
    const [password_hash, created_at] = [await hashPassword(PASSWORD), data.USERS_CREATED_AT];
    await insert(sql, {
      songs: catalog.map((song, i) => ({ id: i + 1, ...song })),
      users: users.map(({ id, name, playlists }) => ({
        id,
        name,
        password_hash,
        playlist_count: playlists,
        created_at,
      })),
    });
    console.log(`  ${catalog.length} songs and ${users.length} users in ${seconds(started).toFixed(1)} s`);
    // Without a terminal (a log file), a line every 10 s instead of a redrawn bar.
    const format = '  playlists {bar} {percentage}% | {value}/{total} | ETA {eta_formatted}';
    const bar = new cliProgress.SingleBar({ format, noTTYOutput: true, notTTYSchedule: 10_000 });
    bar.start(params.playlists, 0);
    let playlistSongs = 0;
    for (const batch of data.generatePlaylists(params, catalog, users, BATCH)) {
      await insert(sql, batch);
      playlistSongs += batch.playlist_songs.length;
      bar.increment(batch.playlists.length);
      // SQLite writes synchronously: without a turn of the event loop the bar is never redrawn.
      await nextTurn();
    }
    bar.stop();
    const sharing = data.shareWithNeighbours(params, users);
    await insert(sql, sharing);
    console.log(`  ${sharing.playlist_members.length} memberships and ${sharing.playlist_links.length} links`);
    const phase = performance.now();
    for (const index of indexes) await sql.run(index.ddl);
    await sql.run(LOADED[dialect]);
    // Autovacuum would get there on a live server: the planner has its statistics from the start.
    if (dialect === 'postgres') await sql.run('VACUUM ANALYZE');
    console.log(`  indexes and ${postgres(sql) ? 'VACUUM ANALYZE' : 'checkpoint'}: ${seconds(phase).toFixed(1)} s`);
    const meta: data.DatasetMeta = {
      ...{ generatorVersion: data.GENERATOR_VERSION, params, password: PASSWORD, plantedWord: data.PLANTED_WORD },
      ...{ lastPlaylistId: params.playlists, playlistSongs, generationSeconds: seconds(started), users },
    };
    await sql.run(`CREATE TABLE ${META_TABLE} (meta TEXT NOT NULL)`);
    await sql.run(`INSERT INTO ${META_TABLE} (meta) VALUES (?)`, [JSON.stringify(meta)]);
    if (!postgres(sql)) await sql.run('PRAGMA wal_checkpoint(TRUNCATE)');
    console.log(`Data set: generated in ${meta.generationSeconds.toFixed(1)} s (${playlistSongs} playlist entries)`);
    return meta;
  } finally {
    await sql.close();
  }
}

/**
 * The data set for these parameters: the stored one when its parameters and generator version match (and
 * `regenerate` is off), brought back to its generated state, else a new one.
 */
export async function ensureDataset(store: DatasetStore, params: data.DatasetParams, regenerate: boolean) {
  const existing = regenerate ? undefined : await readMeta(store);
  if (existing?.generatorVersion === data.GENERATOR_VERSION && data.sameParams(existing.params, params)) {
    const removed = await reset(store, existing);
    console.log(
      `Data set: reusing ${store.location} (generated in ${existing.generationSeconds.toFixed(1)} s)` +
        (removed > 0 ? `; removed ${removed} playlists added by an earlier run` : ''),
    );
    return { meta: existing, generated: false };
  }
  return { meta: await generate(store, params), generated: true };
}
