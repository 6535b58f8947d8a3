/**
 * What a request costs the service and the database, in one process through the whole app (`app.inject`, no sockets
 * of its own), on a database made for the run and dropped after it: 16 users, each with their own 10-song playlists,
 * the 16 at once, each sending one request after another. Prints one JSON line: per request, the wall time, the
 * service's CPU (user and system) and, on PostgreSQL, the CPU of the server processes behind the service's
 * connections (and their system share: the commit's flush and the sockets). The work, first argument:
 *
 * - `rename`: renames of the user's playlist (a merge patch): a whole edit (the locked row, its entries, its songs,
 *   the revision, the search document) that leaves the playlist's length as it was, so every one costs the same;
 * - `search`: the same search of the user's 30 playlists, 3 of which match, again and again (a search kept in
 *   memory after the first);
 * - `get`: the user's playlist read again and again (its answer kept in memory after the first).
 *
 * Run it in two checkouts, back to back and alternating, to compare two commits:
 *
 *   npx tsx bench/request-cost.ts rename|search|get [sqlite|postgres] [requests, default 4000] [PostgreSQL server URL,
 *     default postgres://root@127.0.0.1:5432]
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

const work = process.argv[2] === 'search' || process.argv[2] === 'get' ? process.argv[2] : 'rename';
const dialect = process.argv[3] === 'sqlite' ? 'sqlite' : 'postgres';
const requests = Number(process.argv[4] ?? 4000);
const server = process.argv[5] ?? 'postgres://root@127.0.0.1:5432';
const PLAYLISTS = work === 'search' ? 30 : 1;
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

const name = `mixtape_request_cost_${process.pid}`;
const folder = mkdtempSync(join(tmpdir(), 'mixtape-request-cost-'));
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
    // Each user's playlists; the first of each ten has a word in its name that the searches look for.
    const playlists: number[] = [];
    for (const security of users) {
      for (let i = 0; i < PLAYLISTS; i++) {
        const made = await app.inject({
          method: 'POST',
          url: '/v3/playlist',
          headers: { security, 'content-type': 'application/json' },
          payload: JSON.stringify({
            name: i % 10 === 0 ? `Edited tangerine ${i}` : `Edited ${i}`,
            songIds: Array.from({ length: 10 }, (_v, k) => k + 1 + i),
          }),
        });
        if (i === 0) playlists.push(made.json<{ id: number }>().id);
      }
    }
    const send = async (count: number) => {
      await Promise.all(
        users.map(async (security, u) => {
          for (let i = 0; i < count / USERS; i++) {
            const answer = await app.inject(
              work === 'rename'
                ? {
                    method: 'PATCH',
                    url: `/v3/playlist/${playlists[u]}`,
                    headers: { security, 'content-type': 'application/merge-patch+json' },
                    payload: JSON.stringify({ name: `Renamed ${i}` }),
                  }
                : work === 'get'
                  ? { method: 'GET', url: `/v3/playlist/${playlists[u]}`, headers: { security } }
                  : { method: 'GET', url: '/v3/playlist?search=tangerine', headers: { security } },
            );
            if (answer.statusCode !== 200) throw new Error(`${work}: ${answer.statusCode} ${answer.body}`);
          }
        }),
      );
    };
    await send(WARM_UP);
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
    await send(requests);
    const wall = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const databaseAfter = database();
    const each = (micros: number) => Math.round((micros / requests) * 10) / 10;
    console.log(
      JSON.stringify({
        work,
        dialect,
        requests,
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
