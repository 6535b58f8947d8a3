/**
 * What an edit costs the service and the database, in one process through the whole app (`app.inject`, no sockets
 * of its own): 16 users, each renaming their own 10-song playlist over and over (a merge patch), the 16 at once, on a
 * database made for the run and dropped after it. Prints one JSON line: per rename, the wall time, the service's CPU
 * (user and system) and, on PostgreSQL, the CPU of the server processes behind the service's connections (and their
 * system share: the commit's flush and the sockets).
 *
 * A rename is a whole edit (the locked row, its entries, its songs, the revision, the search document) that leaves the
 * playlist's length as it was, so every rename costs the same. Run it in two checkouts, back to back and alternating,
 * to compare two commits:
 *
 *   npx tsx bench/edit-cost.ts [sqlite|postgres] [renames, default 4000] [PostgreSQL server URL, default
 *     postgres://root@127.0.0.1:5432]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { prepareDatabase } from '../src/startup.js';
import { userService } from '../src/users/user.service.js';
import { processCpuSplitMs } from './cpu.js';

const dialect = process.argv[2] === 'sqlite' ? 'sqlite' : 'postgres';
const renames = Number(process.argv[3] ?? 4000);
const server = process.argv[4] ?? 'postgres://root@127.0.0.1:5432';
const USERS = 16;
const WARM_UP = 320;
const PASSWORD = 'correct horse';

async function admin(work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: `${server}/postgres` });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

const name = `mixtape_edit_cost_${process.pid}`;
const folder = mkdtempSync(join(tmpdir(), 'mixtape-edit-cost-'));
let url = `sqlite:${join(folder, 'mixtape.db')}`;
if (dialect === 'postgres') {
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  url = `${server}/${name}`;
}
const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0' });
const db = openDatabase(config.database);
try {
  await prepareDatabase(db, config, { info: () => {}, warn: () => {} });
  const app = await buildApp({ config, db });
  await app.ready();
  try {
    const users = await Promise.all(
      Array.from({ length: USERS }, async (_v, i) => {
        await userService(db).add(`editor${i}`, PASSWORD);
        return `Basic ${Buffer.from(`editor${i}:${PASSWORD}`).toString('base64')}`;
      }),
    );
    const playlists: number[] = [];
    for (const security of users) {
      const made = await app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'Edited', songIds: Array.from({ length: 10 }, (_v, i) => i + 1) }),
      });
      playlists.push(made.json<{ id: number }>().id);
    }
    const rename = async (count: number) => {
      await Promise.all(
        users.map(async (security, u) => {
          for (let i = 0; i < count / USERS; i++) {
            const answer = await app.inject({
              method: 'PATCH',
              url: `/v3/playlist/${playlists[u]}`,
              headers: { security, 'content-type': 'application/merge-patch+json' },
              payload: JSON.stringify({ name: `Renamed ${i}` }),
            });
            if (answer.statusCode !== 200) throw new Error(`rename: ${answer.statusCode} ${answer.body}`);
          }
        }),
      );
    };
    await rename(WARM_UP);
    const backends =
      dialect === 'postgres'
        ? (
            await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`.execute(
              db.kysely,
            )
          ).rows.map((row) => row.pid)
        : [];
    const database = () =>
      backends
        .map(processCpuSplitMs)
        .reduce((sum, cpu) => ({ user: sum.user + cpu.user, system: sum.system + cpu.system }), {
          user: 0,
          system: 0,
        });
    const databaseBefore = database();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await rename(renames);
    const wall = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const databaseAfter = database();
    const each = (micros: number) => Math.round((micros / renames) * 10) / 10;
    console.log(
      JSON.stringify({
        dialect,
        renames,
        wallUs: each(wall * 1000),
        serviceCpuUs: each(cpu.user + cpu.system),
        serviceSystemUs: each(cpu.system),
        databaseCpuUs: each(
          (databaseAfter.user + databaseAfter.system - databaseBefore.user - databaseBefore.system) * 1000,
        ),
        databaseSystemUs: each((databaseAfter.system - databaseBefore.system) * 1000),
      }),
    );
  } finally {
    await app.close();
  }
} finally {
  await db.close();
  if (dialect === 'postgres') await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  rmSync(folder, { recursive: true, force: true });
}
