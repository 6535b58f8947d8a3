/**
 * Hostile sign-ins: how fast another user's creates and reads and the health checks stay while an attacker floods
 * the sign-in with wrong credentials, and how large the sign-in budget table grows. On a service and database of its
 * own (SQLite, or a new PostgreSQL database), behind a trusted proxy (MIXTAPE_TRUST_PROXY=loopback: each attacker's
 * request names its client in X-Forwarded-For) with MIXTAPE_RATE_LIMIT=3000 a minute per address
 * (victim sends 1 800; the probes are not counted):
 *
 * - quiet: nobody else works (the baseline, measured in the same run);
 * - guesses: 16 connections send victim's name with a wrong password, each request from a new address;
 * - bad names, one address: 16 connections send names no user can have (with a space), all from one address;
 * - bad names, many addresses: the same, each request from a new address (the budget table's growth).
 *
 * During each, victim (signed in once before) creates a 3-song playlist at 10/s and reads one at 20/s from the
 * proxy's own address, and a probe calls /healthz at 20/s, each timed from when it was due. The budget table's rows
 * are counted every second. `npm run bench -- --only hostile-sign-in [--dialect postgres]`, or alone with
 * `npx tsx bench/hostile-sign-in.ts [--dialect sqlite|postgres] [--duration S]`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import pg from 'pg';
import { newDatabase } from './hostile-search.js';
import { addUser, auth, heavyLoad, percentile, post, victimLoad, type VictimLatency } from './neighbours.js';
import { startService } from './service.js';
import { runStandalone } from './standalone.js';

const HOSTILE_CONNECTIONS = 16;
const RATE_LIMIT = 3000;
const CREATES_PER_SECOND = 10;
const READS_PER_SECOND = 20;

export interface SignInPhase {
  readonly description: string;
  readonly creates: VictimLatency;
  readonly reads: VictimLatency;
  readonly health: VictimLatency;
  readonly hostileRps: number;
  readonly hostileStatuses: Readonly<Record<string, number>>;
  /** The sign-in budget table's rows at the phase's end, and the most seen during it. */
  readonly budgetRows: number;
  readonly budgetRowsMost: number;
}

export interface SignInResults {
  readonly dialect: 'sqlite' | 'postgres';
  readonly durationSeconds: number;
  readonly phases: readonly SignInPhase[];
}

/** Creates at a steady pace on a thread of its own, each timed from when it was due (as neighbours' victimLoad). */
const CREATOR = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, seconds, pace, authorization } = workerData;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
(async () => {
  const times = [];
  let failures = 0;
  const pending = [];
  const start = performance.now();
  for (let i = 0; i < seconds * pace; i++) {
    const due = start + (i * 1000) / pace;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      fetch(url + '/v3/playlist', {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'created ' + i, songIds: [1, 2, 3] }),
      })
        .then(async (response) => {
          await response.arrayBuffer();
          if (response.status !== 200) failures++;
          times.push(performance.now() - due);
        })
        .catch(() => { failures++; }),
    );
  }
  await Promise.all(pending);
  parentPort.postMessage({ times, failures });
})();
`;

async function createLoad(url: string, seconds: number): Promise<VictimLatency> {
  const worker = new Worker(CREATOR, {
    eval: true,
    workerData: { url, seconds, pace: CREATES_PER_SECOND, authorization: auth('victim').authorization },
  });
  const { times, failures } = await new Promise<{ times: number[]; failures: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    requests: times.length,
    failures,
    p50: round(percentile(times, 0.5)),
    p99: round(percentile(times, 0.99)),
    max: round(times.at(-1) ?? 0),
  };
}

/** Counts the budget table's rows, read beside the service. */
function budgetCounter(dialect: 'sqlite' | 'postgres', databaseUrl: string) {
  if (dialect === 'sqlite') {
    const db = new Database(databaseUrl.replace(/^sqlite:/, ''), { readonly: true });
    const count = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM sign_in_budgets');
    return { count: () => Promise.resolve(count.get()?.n ?? 0), close: () => Promise.resolve(db.close()) };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  const connected = client.connect();
  return {
    async count() {
      await connected;
      const result = await client.query<{ n: string }>('SELECT count(*) AS n FROM sign_in_budgets');
      return Number(result.rows[0]?.n ?? 0);
    },
    close: () => client.end(),
  };
}

/** An address of its own for the nth request, in 10.0.0.0/8. */
const address = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

/** Runs the phases on a service of its own; the service must be built (dist/). */
export async function measureHostileSignIn(
  dialect: 'sqlite' | 'postgres',
  pgUrl: string,
  durationSeconds: number,
  logDir: string,
): Promise<SignInResults> {
  const database = await newDatabase(dialect, pgUrl);
  try {
    addUser(database.url, 'victim');
    mkdirSync(logDir, { recursive: true });
    const service = await startService({
      databaseUrl: database.url,
      logFile: join(logDir, `service-hostile-sign-in-${dialect}.log`),
      settings: {
        LOG_LEVEL: 'info',
        MIXTAPE_PLAYLISTS_PER_USER: '1000000',
        MIXTAPE_TRUST_PROXY: 'loopback',
        MIXTAPE_RATE_LIMIT: String(RATE_LIMIT),
      },
      profile: false,
      cpu: 0,
    });
    spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    const budgets = budgetCounter(dialect, database.url);
    try {
      const { url } = service;
      const paths: string[] = [];
      for (let i = 0; i < 20; i++) {
        const response = await post(url, 'victim', `short ${i}`, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        if (response.status !== 200) throw new Error(`creating victim's playlist: ${response.status}`);
        paths.push(`/v3/playlist/${((await response.json()) as { id: number }).id}`);
      }
      let next = 0;
      const phases: SignInPhase[] = [];
      const phase = async (
        description: string,
        hostile: ((n: number) => { name: string; password: string; from: string }) | undefined,
      ): Promise<void> => {
        let most = 0;
        const sampler = setInterval(() => {
          void budgets.count().then((n) => (most = Math.max(most, n)));
        }, 1000);
        const [creates, reads, health, load] = await Promise.all([
          createLoad(url, durationSeconds),
          victimLoad(url, paths, durationSeconds, 'victim', READS_PER_SECOND),
          victimLoad(url, ['/healthz'], durationSeconds, 'victim', 20),
          hostile === undefined
            ? Promise.resolve({ heavyRps: 0, heavyStatuses: {} })
            : heavyLoad(HOSTILE_CONNECTIONS, durationSeconds, () => {
                const { name, password, from } = hostile(next++);
                const credential = Buffer.from(`${name}:${password}`).toString('base64');
                return fetch(`${url}/v3/playlist?limit=1`, {
                  headers: { authorization: `Basic ${credential}`, 'x-forwarded-for': from },
                });
              }),
        ]);
        clearInterval(sampler);
        const budgetRows = await budgets.count();
        phases.push({
          description,
          creates,
          reads,
          health,
          hostileRps: load.heavyRps,
          hostileStatuses: load.heavyStatuses,
          budgetRows,
          budgetRowsMost: Math.max(most, budgetRows),
        });
      };
      await phase('nobody else', undefined);
      await phase(`${HOSTILE_CONNECTIONS} conn: wrong passwords for victim, a new address each`, (n) => ({
        name: 'victim',
        password: `guess ${n}`,
        from: address(n),
      }));
      await phase(`${HOSTILE_CONNECTIONS} conn: names no user can have, one address`, (n) => ({
        name: `bad name ${n}`,
        password: 'x',
        from: '198.51.100.7',
      }));
      await phase(`${HOSTILE_CONNECTIONS} conn: names no user can have, a new address each`, (n) => ({
        name: `bad name ${n}`,
        password: 'x',
        from: address(n),
      }));
      return { dialect, durationSeconds, phases };
    } finally {
      await budgets.close();
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

export function formatHostileSignIn(results: SignInResults): string {
  const [quiet] = results.phases;
  const ratio = (p99: number, base: number | undefined) =>
    base === undefined || base === 0 ? '' : ` (${(p99 / base).toFixed(1)}×)`;
  const lines = [
    `Hostile sign-ins (${results.dialect}, ${results.durationSeconds} s a phase): victim's creates at ` +
      `${CREATES_PER_SECOND}/s and reads at ${READS_PER_SECOND}/s, /healthz at 20/s, ms from when due ` +
      `(p99 × quiet p99); budget rows at the end (most seen)`,
    '| phase | creates p50 | creates p99 | reads p50 | reads p99 | health p99 | victim failures | hostile answers/s | hostile statuses | budget rows |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of results.phases) {
    lines.push(
      `| ${p.description} | ${p.creates.p50} | ${p.creates.p99}${ratio(p.creates.p99, quiet?.creates.p99)} | ` +
        `${p.reads.p50} | ${p.reads.p99}${ratio(p.reads.p99, quiet?.reads.p99)} | ` +
        `${p.health.p99}${ratio(p.health.p99, quiet?.health.p99)} | ` +
        `${p.creates.failures + p.reads.failures + p.health.failures} | ${p.hostileRps} | ` +
        `${JSON.stringify(p.hostileStatuses)} | ${p.budgetRows} (${p.budgetRowsMost}) |`,
    );
  }
  return lines.join('\n');
}

runStandalone('hostile-sign-in.ts', measureHostileSignIn, formatHostileSignIn, 15);
