/**
 * What history costs, in process: the rows and bytes one appended song adds to a 1 000-song playlist, against a whole
 * copy, and a kept version's read after 1 000 revisions, the first time and again, against the playlist's own read.
 *
 *   npm run bench:history -- [--dialect sqlite,postgres] [--revisions 1000] [--reads 500] [--pg-url URL]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import type { Db } from '../src/db/database.js';
import { percentile } from './load.js';
import { inProcessApp } from './micro.js';
import { DEFAULT_PG_URL, type Dialect } from './service.js';

const { values } = parseArgs({
  options: {
    dialect: { type: 'string', default: 'sqlite,postgres' },
    revisions: { type: 'string', default: '1000' },
    reads: { type: 'string', default: '500' },
    'pg-url': { type: 'string', default: DEFAULT_PG_URL },
  },
});
const REVISIONS = Number(values.revisions);
const START_SONGS = 1000;

/** The bytes the revisions table and its indexes take. */
async function revisionBytes(db: Db): Promise<number> {
  const { rows } =
    db.dialect === 'postgres'
      ? await sql<{ n: string }>`SELECT pg_total_relation_size('playlist_revisions')::text AS n`.execute(db.kysely)
      : await sql<{ n: number }>`SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat
          WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'playlist_revisions')`.execute(db.kysely);
  return Number(rows[0]!.n);
}

async function run(dialect: Dialect) {
  const bench = await inProcessApp(dialect, { MIXTAPE_SONGS_MAX: String(START_SONGS + REVISIONS) }, values['pg-url']);
  const { db, app } = bench;
  try {
    const security = await bench.user('bench');
    const inject = async (method: 'GET' | 'POST', url: string, payload?: object) => {
      const started = performance.now();
      const answer = await app.inject({ method, url, headers: { security }, ...(payload && { payload }) });
      if (answer.statusCode !== 200) throw new Error(answer.body);
      return { answer, ms: performance.now() - started };
    };
    const songIds = Array.from({ length: START_SONGS }, (_, i) => (i % 200) + 1);
    const { id } = (await inject('POST', '/v3/playlist', { name: 'History bench', songIds })).answer.json<{
      id: number;
    }>();
    const vacuum = () =>
      db.dialect === 'postgres' ? sql`VACUUM ANALYZE playlist_revisions`.execute(db.kysely) : undefined;
    await vacuum();
    const bytesBefore = await revisionBytes(db);
    const started = performance.now();
    for (let i = 0; i < REVISIONS; i++) await inject('POST', `/v3/playlist/${id}/songs`, { songIds: [(i % 200) + 1] });
    const appendMs = (performance.now() - started) / REVISIONS;
    await vacuum();
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
    const first = await db.kysely
      .selectFrom('playlist_revisions')
      .select('songs')
      .where('playlist_id', '=', id)
      .where('version', '=', 1)
      .executeTakeFirstOrThrow();
    const [cold, warm, current] = [[] as number[], [] as number[], [] as number[]];
    for (let i = 0; i < 20; i++) await inject('GET', `/v3/playlist/${id}`);
    // Distinct versions in random order: each read first from the database, then again from memory.
    const order = Array.from({ length: REVISIONS + 1 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    for (const version of order.slice(0, Number(values.reads))) {
      cold.push((await inject('GET', `/v3/playlist/${id}/versions/${version}`)).ms);
      warm.push((await inject('GET', `/v3/playlist/${id}/versions/${version}`)).ms);
      current.push((await inject('GET', `/v3/playlist/${id}`)).ms);
    }
    const figures = (list: number[]) => {
      list.sort((a, b) => a - b);
      return { p50: percentile(list, 0.5), p99: percentile(list, 0.99), max: list.at(-1)! };
    };
    const ms = (f: { p50: number; p99: number; max: number }) =>
      [f.p50, f.p99, f.max].map((v) => v.toFixed(2)).join(' / ');
    const [c, w, b] = [figures(cold), figures(warm), figures(current)];
    console.log(`${dialect}: ${REVISIONS} appends of one song to a ${START_SONGS}-song playlist`);
    console.log(
      `  rows per append ${(Number(rows.n) / REVISIONS).toFixed(3)} (${rows.snapshots} whole copies among them)`,
    );
    console.log(
      `  bytes per append (table and indexes) ${((bytesAfter - bytesBefore) / REVISIONS).toFixed(0)}; song-id text ` +
        `${(Number(rows.text) / REVISIONS).toFixed(1)} bytes a revision, against ${first.songs.length} for a whole copy`,
    );
    console.log(`  append through the app: ${appendMs.toFixed(2)} ms each`);
    console.log(`  GET a version of ${REVISIONS + 1} the first time, ms p50 / p99 / max: ${ms(c)}`);
    console.log(`  GET it again (its songs in memory), ms p50 / p99 / max: ${ms(w)}`);
    console.log(
      `  GET the playlist (baseline), ms p50 / p99 / max: ${ms(b)}; ratios of p50 ` +
        `${(c.p50 / b.p50).toFixed(2)} and ${(w.p50 / b.p50).toFixed(2)}`,
    );
  } finally {
    await bench.close();
  }
}

for (const dialect of values.dialect.split(',') as Dialect[]) await run(dialect);
