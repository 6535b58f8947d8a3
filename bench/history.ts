/**
 * What history costs, in process, on each database: the rows and bytes (table and indexes) one appended song adds
 * to a playlist of 1 000 songs, against what a whole copy of the playlist per revision would take; and the time to
 * read a kept version of it after 1 000 revisions (GET …/versions/N through the app, distinct N in random order, the
 * first time and again), against reading the playlist itself (GET /v3/playlist/{id}, the baseline, measured in the same run).
 *
 *   npm run bench:history -- [--dialect sqlite,postgres] [--revisions 1000] [--reads 500] [--pg-url URL]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Db } from '../src/db/database.js';
import { prepareDatabase } from '../src/startup.js';
import { userService } from '../src/users/user.service.js';

const { values } = parseArgs({
  options: {
    dialect: { type: 'string', default: 'sqlite,postgres' },
    revisions: { type: 'string', default: '1000' },
    reads: { type: 'string', default: '500' },
    'pg-url': { type: 'string', default: 'postgres://root@127.0.0.1:5432/postgres' },
  },
});
const REVISIONS = Number(values.revisions);
const READS = Number(values.reads);
const START_SONGS = 1000;
const security = `Basic ${Buffer.from('bench:bench-password').toString('base64')}`;

/** The bytes the revisions table and its indexes take. */
async function revisionBytes(db: Db): Promise<number> {
  if (db.dialect === 'postgres') {
    const { rows } = await sql<{ n: string }>`SELECT pg_total_relation_size('playlist_revisions')::text AS n`.execute(
      db.kysely,
    );
    return Number(rows[0]!.n);
  }
  const { rows } = await sql<{ n: number | string }>`SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat
    WHERE name = 'playlist_revisions' OR name LIKE 'playlist_revisions_%'
       OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'playlist_revisions')`.execute(db.kysely);
  return Number(rows[0]!.n);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

async function run(dialect: 'sqlite' | 'postgres') {
  let url: string;
  let cleanup: () => Promise<void>;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'mixtape-history-bench-'));
    url = `sqlite:${join(dir, 'bench.db')}`;
    cleanup = () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    };
  } else {
    const name = `mixtape_bench_history_${process.pid}`;
    const admin = new pg.Client({ connectionString: values['pg-url'] });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const base = new URL(values['pg-url']);
    base.pathname = `/${name}`;
    url = base.toString();
    cleanup = async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    };
  }
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    MIXTAPE_SONGS_MAX: String(START_SONGS + REVISIONS),
  });
  const db = openDatabase(config.database);
  try {
    await prepareDatabase(db, config, { info: () => {}, warn: () => {} });
    await userService(db).add('bench', 'bench-password');
    const app = await buildApp({ config, db });
    const inject = (method: 'GET' | 'POST', url: string, payload?: object) =>
      app.inject({ method, url, headers: { security }, ...(payload === undefined ? {} : { payload }) });
    const songIds = Array.from({ length: START_SONGS }, (_, i) => (i % 200) + 1);
    const created = await inject('POST', '/v3/playlist', { name: 'History bench', songIds });
    const { id } = created.json<{ id: number }>();
    if (db.dialect === 'postgres') await sql`VACUUM ANALYZE playlist_revisions`.execute(db.kysely);
    const bytesBefore = await revisionBytes(db);
    const started = performance.now();
    for (let i = 0; i < REVISIONS; i++) {
      const appended = await inject('POST', `/v3/playlist/${id}/songs`, { songIds: [(i % 200) + 1] });
      if (appended.statusCode !== 200) throw new Error(appended.body);
    }
    const appendMs = (performance.now() - started) / REVISIONS;
    if (db.dialect === 'postgres') await sql`VACUUM ANALYZE playlist_revisions`.execute(db.kysely);
    const bytesAfter = await revisionBytes(db);
    const rows = await db.kysely
      .selectFrom('playlist_revisions')
      .select([
        (eb) => eb.fn.countAll<number | string>().as('n'),
        (eb) => eb.fn.sum<number | string>(eb.fn('length', ['songs'])).as('text'),
        (eb) => eb.fn.countAll<number | string>().filterWhere('splice_at', 'is', null).as('snapshots'),
      ])
      .where('playlist_id', '=', id)
      .where('version', '>', 1)
      .executeTakeFirstOrThrow();
    const wholeCopy = (
      await db.kysely
        .selectFrom('playlist_revisions')
        .select('songs')
        .where('playlist_id', '=', id)
        .where('version', '=', 1)
        .executeTakeFirstOrThrow()
    ).songs.length;

    const time = async (url: string) => {
      const t0 = performance.now();
      const answer = await inject('GET', url);
      if (answer.statusCode !== 200) throw new Error(answer.body);
      return performance.now() - t0;
    };
    const cold: number[] = [];
    const warm: number[] = [];
    const current: number[] = [];
    for (let i = 0; i < 20; i++) await time(`/v3/playlist/${id}`);
    // Distinct versions in random order: each read first from the database, then again from memory.
    const order = Array.from({ length: REVISIONS + 1 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    for (const version of order.slice(0, READS)) {
      cold.push(await time(`/v3/playlist/${id}/versions/${version}`));
      warm.push(await time(`/v3/playlist/${id}/versions/${version}`));
      current.push(await time(`/v3/playlist/${id}`));
    }
    for (const list of [cold, warm, current]) list.sort((a, b) => a - b);
    const figures = (list: number[]) => ({
      p50: percentile(list, 0.5),
      p99: percentile(list, 0.99),
      max: list.at(-1)!,
    });
    await app.close();
    return {
      dialect,
      appends: REVISIONS,
      rowsPerAppend: Number(rows.n) / REVISIONS,
      snapshots: Number(rows.snapshots),
      bytesPerAppend: (bytesAfter - bytesBefore) / REVISIONS,
      songTextPerAppend: Number(rows.text) / REVISIONS,
      wholeCopySongText: wholeCopy,
      appendMs,
      coldMs: figures(cold),
      warmMs: figures(warm),
      currentMs: figures(current),
    };
  } finally {
    await db.close();
    await cleanup();
  }
}

for (const dialect of values.dialect.split(',') as ('sqlite' | 'postgres')[]) {
  const r = await run(dialect);
  const ms = (f: { p50: number; p99: number; max: number }) =>
    `${f.p50.toFixed(2)} / ${f.p99.toFixed(2)} / ${f.max.toFixed(2)}`;
  console.log(`${r.dialect}: ${r.appends} appends of one song to a ${START_SONGS}-song playlist`);
  console.log(`  rows per append ${r.rowsPerAppend.toFixed(3)} (${r.snapshots} whole copies among them)`);
  console.log(
    `  bytes per append (table and indexes) ${r.bytesPerAppend.toFixed(0)}; song-id text ${r.songTextPerAppend.toFixed(1)} bytes a revision, against ${r.wholeCopySongText} for a whole copy`,
  );
  console.log(`  append through the app: ${r.appendMs.toFixed(2)} ms each`);
  console.log(`  GET a version of ${REVISIONS + 1} the first time, ms p50 / p99 / max: ${ms(r.coldMs)}`);
  console.log(`  GET it again (its songs in memory), ms p50 / p99 / max: ${ms(r.warmMs)}`);
  console.log(
    `  GET the playlist (baseline), ms p50 / p99 / max: ${ms(r.currentMs)}; ratios of p50 ${(r.coldMs.p50 / r.currentMs.p50).toFixed(2)} and ${(r.warmMs.p50 / r.currentMs.p50).toFixed(2)}`,
  );
}
