import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, pgAdminUrl, type TestDatabase } from '../helpers/databases.js';
import { createPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { basic } from '../helpers/app.js';
import { killAllServers, runServeExpectingExit, startServer } from '../helpers/server-process.js';
import { call, eventually, isErrorBody, sleep, type Answer } from '../helpers/traffic.js';

/**
 * PostgreSQL faults against the real service: backends terminated under load (on the shared server, only this
 * test's own database), and a server of the test's own that hangs, stops and comes back. The process must live,
 * answer only 200 or 503 (with Retry-After and the error body), answer within its timeouts, and keep every
 * acknowledged write.
 */

const SECURITY = basic('fault', 'tolerant');
const TIMEOUTS = { DATABASE_QUERY_TIMEOUT_MS: '1000', DATABASE_CONNECT_TIMEOUT_MS: '1000' };

interface Created {
  readonly id: number;
  readonly body: string;
}

function expectOnly200or503(answers: readonly Answer[]): void {
  for (const answer of answers) {
    expect([200, 503], `${answer.status} ${answer.body}`).toContain(answer.status);
    if (answer.status === 503) {
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(isErrorBody(answer.body), answer.body).toBe(true);
    }
  }
}

describe('PostgreSQL backends terminated under load', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    await killAllServers();
    await database.drop();
  });

  it('keeps the process alive, answers 200 or 503, and keeps every acknowledged create', async () => {
    const server = await startServer({ databaseUrl: database.url, bootstrapUser: 'fault:tolerant', env: TIMEOUTS });
    const dbName = new URL(database.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: pgAdminUrl() });
    await admin.connect();
    const answers: Answer[] = [];
    const created: Created[] = [];
    let terminated = 0;
    const until = Date.now() + 4000;
    try {
      const worker = async (n: number) => {
        for (let i = 0; Date.now() < until && i < 2000; i++) {
          const create = await call(`${server.url}/v3/playlist`, {
            method: 'POST',
            headers: { security: SECURITY },
            body: { name: `w${n} #${i}`, songIds: [1 + (i % 200), 2, 3] },
          });
          answers.push(create);
          if (create.status === 200) {
            created.push({ id: (JSON.parse(create.body) as { id: number }).id, body: create.body });
          }
          const last = created.at(-1);
          if (last !== undefined) {
            answers.push(await call(`${server.url}/v3/playlist/${last.id}`, { headers: { security: SECURITY } }));
          }
        }
      };
      const killer = async () => {
        while (Date.now() < until) {
          const result = await admin.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
            [dbName],
          );
          terminated += result.rowCount ?? 0;
          await sleep(250);
        }
      };
      await Promise.all([...Array.from({ length: 8 }, (_v, n) => worker(n)), killer()]);
    } finally {
      await admin.end();
    }

    expect(server.process.exitCode).toBeNull();
    expect(terminated).toBeGreaterThan(0);
    expectOnly200or503(answers);
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
    expect(created.length).toBeGreaterThan(0);
    // Service resumes by itself, and every acknowledged create is there exactly as it was answered.
    for (const { id, body } of created) {
      const again = await call(`${server.url}/v3/playlist/${id}`, { headers: { security: SECURITY } });
      expect(again.status).toBe(200);
      expect(again.body).toBe(body);
    }
    const fault = server.logLines().find((line) => line.msg === 'database unavailable');
    expect(fault?.entry).toBeTypeOf('number');
    await server.stop();
  });
});

describe('a PostgreSQL server that hangs, stops and comes back', () => {
  let cluster: PrivatePostgres;
  beforeAll(async () => {
    cluster = await createPrivatePostgres();
  }, 120_000);
  afterAll(async () => {
    await killAllServers();
    cluster.destroy();
  });

  it('gives up at start after the configured time, one line per attempt, then one line to say why', async () => {
    const started = Date.now();
    const result = await runServeExpectingExit({
      DATABASE_URL: cluster.url,
      DATABASE_START_TIMEOUT_SECONDS: '2',
      LOG_LEVEL: 'info',
      ...TIMEOUTS,
    });
    expect(result.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(20_000);
    const attempts = result.stdout
      .split('\n')
      .filter((line) => line.includes('the database is not reachable') && line.includes('ECONNREFUSED'));
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    const errors = result.stderr.trim().split('\n');
    expect(errors, result.stderr).toHaveLength(1);
    expect(errors[0]).toMatch(/^mixtape: the database did not answer within 2 s .*ECONNREFUSED/);
  });

  it('waits at start for a database that comes up, then serves', async () => {
    let retries = 0;
    const server = await startServer({
      databaseUrl: cluster.url,
      bootstrapUser: 'fault:tolerant',
      env: { DATABASE_START_TIMEOUT_SECONDS: '60', ...TIMEOUTS },
      readyTimeoutMs: 60_000,
      onLog: (line) => {
        // The database comes up after the service has found it down once.
        if (String(line.msg).includes('the database is not reachable') && retries++ === 0) cluster.start();
      },
    });
    expect(retries).toBeGreaterThanOrEqual(1);
    const ready = await call(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    await server.stop();
  }, 90_000);

  it('answers 503 within the timeouts while the server hangs, and recovers by itself', async () => {
    cluster.start();
    const server = await startServer({ databaseUrl: cluster.url, bootstrapUser: 'fault:tolerant', env: TIMEOUTS });
    const first = await call(`${server.url}/v3/playlist`, {
      method: 'POST',
      headers: { security: SECURITY },
      body: { name: 'before the hang', songIds: [1, 2] },
    });
    expect(first.status).toBe(200);
    const { id } = JSON.parse(first.body) as { id: number };

    cluster.pause();
    let during: Answer[];
    let ready: Answer;
    try {
      // More requests than pooled connections: some wait for a connection, some for an answer.
      const requests = Array.from({ length: 16 }, (_v, i) =>
        i % 2 === 0
          ? call(`${server.url}/v3/playlist`, {
              method: 'POST',
              headers: { security: SECURITY },
              body: { name: `during ${i}`, songIds: [3] },
            })
          : call(`${server.url}/v3/playlist/${id}`, { headers: { security: SECURITY } }),
      );
      ready = await call(`${server.url}/readyz`);
      const health = await call(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      during = await Promise.all(requests);
    } finally {
      cluster.resume();
    }
    // A credential cached before the hang lets requests reach the database; every one gets its answer in time.
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(2000);
    for (const answer of during) {
      expect(answer.status, answer.body).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(isErrorBody(answer.body)).toBe(true);
      expect(answer.ms).toBeLessThan(6000);
    }

    expect(await eventually(async () => (await call(`${server.url}/readyz`)).status === 200, 15_000)).toBe(true);
    const after = await call(`${server.url}/v3/playlist`, {
      method: 'POST',
      headers: { security: SECURITY },
      body: { name: 'after the hang', songIds: [4] },
    });
    expect(after.status).toBe(200);

    // A crash of the whole server: 503s, then service resumes when it is back, with the acknowledged writes.
    cluster.stop();
    const down = await call(`${server.url}/v3/playlist/${id}`, { headers: { security: SECURITY } });
    expect(down.status).toBe(503);
    cluster.start();
    expect(
      await eventually(
        async () => (await call(`${server.url}/v3/playlist/${id}`, { headers: { security: SECURITY } })).status === 200,
        15_000,
      ),
    ).toBe(true);
    expect(server.process.exitCode).toBeNull();
    await server.stop();
  }, 90_000);
});
