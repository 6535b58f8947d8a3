/**
 * What a request costs the service and PostgreSQL's server, in one process through the app (`app.inject`), 16 users
 * at once: `rename` (a merge patch), `search` (30 playlists, 3 matching) or `get`. Compare two checkouts, alternating:
 *
 *   npx tsx bench/request-cost.ts rename|search|get [sqlite|postgres] [requests, default 4000]
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { inProcessApp } from './micro.js';
import { processCpuSplitMs } from './service.js';

const work = process.argv[2] === 'search' || process.argv[2] === 'get' ? process.argv[2] : 'rename';
const dialect = process.argv[3] === 'sqlite' ? 'sqlite' : 'postgres';
const requests = Number(process.argv[4] ?? 4000);
const PLAYLISTS = work === 'search' ? 30 : 1;
const USERS = 16;

const bench = await inProcessApp(dialect, { MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0' });
try {
  const { app, db } = bench;
  const users = await Promise.all(Array.from({ length: USERS }, (_v, i) => bench.user(`editor${i}`)));
  // Each user's playlists; the first of each ten has a word in its name that the searches look for.
  const playlists: number[] = [];
  for (const security of users) {
    for (let i = 0; i < PLAYLISTS; i++) {
      const name = i % 10 === 0 ? `Edited tangerine ${i}` : `Edited ${i}`;
      const songIds = Array.from({ length: 10 }, (_v, k) => k + 1 + i);
      const made = await app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security },
        payload: { songIds, name },
      });
      if (i === 0) playlists.push(made.json<{ id: number }>().id);
    }
  }
  const send = (count: number) =>
    Promise.all(
      users.map(async (security, u) => {
        for (let i = 0; i < count / USERS; i++) {
          const url = work === 'search' ? '/v3/playlist?search=tangerine' : `/v3/playlist/${playlists[u]}`;
          const answer = await app.inject(
            work === 'rename'
              ? {
                  ...{ method: 'PATCH', url, payload: JSON.stringify({ name: `Renamed ${i}` }) },
                  headers: { security, 'content-type': 'application/merge-patch+json' },
                }
              : { method: 'GET', url, headers: { security } },
          );
          if (answer.statusCode !== 200) throw new Error(`${work}: ${answer.statusCode} ${answer.body}`);
        }
      }),
    );
  await send(320);
  const backends =
    dialect === 'postgres'
      ? (
          await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`.execute(
            db.kysely,
          )
        ).rows
      : [];
  const database = () =>
    backends
      .map((b) => processCpuSplitMs(b.pid))
      .reduce((a, b) => ({ user: a.user + b.user, system: a.system + b.system }), { user: 0, system: 0 });
  const [databaseBefore, cpuBefore, started] = [database(), process.cpuUsage(), performance.now()];
  await send(requests);
  const wall = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const databaseAfter = database();
  const each = (micros: number) => Math.round((micros / requests) * 10) / 10;
  const databaseSystem = databaseAfter.system - databaseBefore.system;
  console.log(
    JSON.stringify({
      ...{ work, dialect, requests, wallUs: each(wall * 1000) },
      ...{ serviceCpuUs: each(cpu.user + cpu.system), serviceSystemUs: each(cpu.system) },
      databaseCpuUs: each((databaseAfter.user - databaseBefore.user + databaseSystem) * 1000),
      databaseSystemUs: each(databaseSystem * 1000),
    }),
  );
} finally {
  await bench.close();
}
