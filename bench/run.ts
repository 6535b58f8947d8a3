/**
 * `npm run bench`: generates (or reuses) a data set, starts the built service on it, drives it with autocannon
 * scenario by scenario and level by level, each level also against a bare node:http baseline that answers the
 * same bytes, and writes the figures to bench/results/. See docs/benchmarks.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBaseline, type Answer, type Baseline } from './baseline.js';
import type { BenchUser, DatasetMeta } from './dataset.js';
import { ensureDataset } from './generate.js';
import { perRequest, readCpu } from './cpu.js';
import { measure, measurePaced, type BenchRequest, type Measurement } from './load.js';
import { USAGE, UsageError, parseOptions, type BenchOptions } from './options.js';
import { Random } from './random.js';
import { formatText, type BenchResults, type ScenarioResult } from './results.js';
import { formatHostileSearch, measureHostileSearch, type HostileResults } from './hostile-search.js';
import { formatHostileWrites, measureHostileWrites, type HostileWritesResults } from './hostile-writes.js';
import { formatHostileSignIn, measureHostileSignIn, type SignInResults } from './hostile-sign-in.js';
import { formatHostileFiles, measureHostileFiles, type HostileFilesResults } from './hostile-files.js';
import { formatHostileSmart, measureHostileSmart, type HostileSmartResults } from './hostile-smart.js';
import { formatEntryWrites, measureEntryWrites, type EntryWritesResults } from './entry-writes.js';
import { formatNeighbours, measureNeighbours, type NeighbourResults } from './neighbours.js';
import { SCENARIOS, authorization, type Scenario } from './scenarios.js';
import { PROFILE_DIR, ROOT, pinToCpu, startService, type RunningService } from './service.js';
import type { DatasetStore } from './store.js';
import { postgresStore } from './store-postgres.js';
import { sqliteStore } from './store-sqlite.js';

const RESULTS_DIR = join(ROOT, 'bench/results');
const DATA_DIR = join(ROOT, 'bench/data');
/** Sign-ins at once during the warm-up: each is a deliberately slow scrypt hash in the service. */
const SIGN_IN_CONCURRENCY = 4;
/** Tries of one user's sign-in that a busy service sheds (503) or holds to its share (429). */
const SIGN_IN_ATTEMPTS = 5;

function openStore(options: BenchOptions): DatasetStore {
  const { playlists } = options.params;
  return options.dialect === 'sqlite'
    ? sqliteStore(join(DATA_DIR, `sqlite-${playlists}.db`))
    : postgresStore(options.pgUrl, `mixtape_bench_${playlists}`);
}

/** The users the load is spread over: `count` of them, evenly across the data set. */
function activeUsers(meta: DatasetMeta, count: number): BenchUser[] {
  const all = meta.users;
  const n = Math.min(count, all.length);
  return Array.from({ length: n }, (_, i) => all[Math.floor((i * all.length) / n)]!);
}

/** One request with exactly the headers and body the load sends, and the whole answer. */
function capture(url: string, r: BenchRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${r.path}`, { method: r.method, headers: r.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
      res.once('error', reject);
    });
    req.once('error', reject);
    req.end(r.body);
  });
}

/**
 * Signs every active user in once. Verified credentials are cached by the service, so without this the first
 * seconds of the first level would measure scrypt, not the scenario.
 */
async function signIn(url: string, meta: DatasetMeta, users: readonly BenchUser[]): Promise<number> {
  const started = performance.now();
  const queue = [...users];
  const worker = async () => {
    for (let user = queue.shift(); user !== undefined; user = queue.shift()) {
      // A busy service may shed a sign-in (503) or hold it to its share (429): try again as told, a few times.
      for (let attempt = 1; ; attempt++) {
        const answer = await capture(url, {
          method: 'GET',
          path: '/v3/playlist?limit=1',
          headers: authorization(user, meta.password),
        });
        if (answer.status === 200) break;
        if ((answer.status !== 503 && answer.status !== 429) || attempt === SIGN_IN_ATTEMPTS)
          throw new Error(`Signing in as ${user.name} failed: status ${answer.status}`);
        const retryAfter = Number(answer.headers['retry-after'] ?? 1);
        await sleep(1000 * (Number.isFinite(retryAfter) ? Math.min(retryAfter, 5) : 1));
      }
    }
  };
  await Promise.all(Array.from({ length: SIGN_IN_CONCURRENCY }, worker));
  return performance.now() - started;
}

const describe = (m: Measurement) =>
  `${Math.round(m.rps)} req/s, p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms` +
  (m.non2xx + m.errors > 0 ? `, ${m.non2xx} non-2xx ${JSON.stringify(m.statusCodes)}, ${m.errors} errors` : '');

async function runScenario(
  scenario: Scenario,
  service: RunningService,
  baseline: Baseline,
  meta: DatasetMeta,
  users: readonly BenchUser[],
  options: BenchOptions,
  /** PostgreSQL: the data set's database, whose server processes' CPU time is counted. */
  database: string | undefined,
): Promise<ScenarioResult> {
  const context = { meta, users, random: new Random(meta.params.seed) };
  await scenario.prepare?.(service.url, context);
  const requests = scenario.requests(context);
  const sample = requests[0];
  if (sample === undefined) throw new Error(`The ${scenario.name} scenario has no requests.`);
  const answer = await capture(service.url, sample);
  const problem = scenario.check(answer, sample, meta);
  if (problem !== undefined) throw new Error(`The ${scenario.name} scenario's sample answer is wrong: ${problem}`);
  await baseline.answerWith(answer);

  console.log(`\n${scenario.name}: ${scenario.description} (${requests.length} different requests)`);
  const top = Math.max(...options.connections);
  const { exclusive } = scenario;
  // The baseline answers every request with the sample's answer: what a scenario learns from the service's answers
  // (an edit's ETag) is not to be learnt from it.
  const baselineRequests = requests.map((r) => ({ ...r, onResponse: undefined }));
  if (options.warmupSeconds > 0) {
    const warmup = { connections: top, durationSeconds: options.warmupSeconds, exclusive };
    scenario.beforeRun?.();
    await measure(service.url, requests, warmup);
    await measure(baseline.url, baselineRequests, warmup);
  }
  const levels = [];
  for (const connections of options.connections) {
    const load = { connections, durationSeconds: options.durationSeconds, exclusive };
    scenario.beforeRun?.();
    const cpuBefore = readCpu(service.pid, database);
    const s = await measure(service.url, requests, load);
    const cpu = perRequest(cpuBefore, readCpu(service.pid, database), s.responses);
    const b = await measure(baseline.url, baselineRequests, load);
    const ratio = s.rps / b.rps;
    const cpuText =
      cpu === undefined
        ? ''
        : ` | CPU a request: service ${cpu.serviceMs.toFixed(3)} ms, database ${cpu.databaseMs.toFixed(3)} ms`;
    console.log(
      `  ${connections} conn: service ${describe(s)} | baseline ${describe(b)} | ratio ${ratio.toFixed(3)}${cpuText}`,
    );
    levels.push({ connections, service: s, baseline: b, ratio, cpu });
  }
  if (scenario.halfPeak !== true) return { name: scenario.name, description: scenario.description, levels };

  const rate = Math.max(1, Math.round(Math.max(...levels.map((l) => l.service.rps)) / 2));
  const load = { connections: top, durationSeconds: options.durationSeconds, rate };
  const s = await measurePaced(service.url, requests, load);
  const b = await measurePaced(baseline.url, requests, load);
  console.log(`  half peak, ${rate}/s over ${top} conn: service ${describe(s)} | baseline ${describe(b)}`);
  return {
    name: scenario.name,
    description: scenario.description,
    levels,
    halfPeak: { rate, connections: top, service: s, baseline: b },
  };
}

/** The commit, and whether the tree differs from it; read-only (no index refresh), undefined outside git. */
function gitState(): BenchResults['git'] {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } });
  try {
    return { commit: git('rev-parse', 'HEAD').trim(), dirty: git('status', '--porcelain').trim() !== '' };
  } catch {
    return undefined;
  }
}

function writeResults(results: BenchResults): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(
    RESULTS_DIR,
    `${results.date.slice(0, 10)}-${results.dialect}-${results.dataset.params.playlists}.json`,
  );
  // Written whole or not at all: a half-written results file would read as a broken run.
  writeFileSync(`${file}.tmp`, `${JSON.stringify(results, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  return file;
}

const HOSTILE_SMART =
  '\nhostile-smart: a writer and others beside smart playlists that follow, costly rules and old-base merges';

/**
 * `--only hostile-smart` alone: it makes its own database and service, so no shared data set is generated or touched
 * (on PostgreSQL that one is a database every checkout names alike). Its figures go to
 * bench/results/<date>-<dialect>-hostile-smart.json.
 */
async function hostileSmartAlone(options: BenchOptions, git: BenchResults['git']): Promise<void> {
  const loadAverage = os.loadavg();
  if (options.build) {
    console.log('\nBuilding the service (npm run build)…');
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed; fix it, or pass --skip-build to serve dist/ as is');
  }
  console.log(HOSTILE_SMART);
  const hostileSmart = await measureHostileSmart(options.dialect, options.pgUrl, options.durationSeconds, DATA_DIR);
  console.log(formatHostileSmart(hostileSmart));
  const date = new Date().toISOString();
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${date.slice(0, 10)}-${options.dialect}-hostile-smart.json`);
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ date, command, git, loadAverage, hostileSmart }, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  console.log(`\nResults: ${file}`);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options === undefined) {
    console.log(USAGE);
    return;
  }
  const loadAverage = os.loadavg();
  // Read before the build, so that it names the code that was measured.
  const git = gitState();
  if (options.scenarios.length === 1 && options.scenarios[0] === 'hostile-smart') {
    await hostileSmartAlone(options, git);
    return;
  }
  // The service, the database and the load generator share this machine: anything else running skews the figures.
  if (loadAverage[0]! > os.cpus().length / 2) {
    console.warn(`Warning: the machine is busy (load average ${loadAverage[0]!.toFixed(2)}); figures will suffer.`);
  }
  // The service (and the baseline in its turn) on one core, the load generator on the other, as far as there are
  // two: they then do not take turns on the same core, and the ratio compares two servers on equal terms.
  const cpus = os.cpus();
  const serviceCpu = cpus.length >= 2 ? 0 : undefined;
  if (serviceCpu !== undefined) pinToCpu(process.pid, 1);
  const store = openStore(options);
  const { meta, generated } = await ensureDataset(store, options.params, options.regenerate);
  const diskBytes = await store.size();

  if (options.build) {
    console.log('\nBuilding the service (npm run build)…');
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed; fix it, or pass --skip-build to serve dist/ as is');
  }
  if (options.profile) mkdirSync(join(ROOT, PROFILE_DIR), { recursive: true });

  const settings = {
    LOG_LEVEL: 'info',
    MIXTAPE_SEED_CATALOG: 'false',
    // The create scenario adds thousands of playlists per user; the default quota would answer 409.
    MIXTAPE_PLAYLISTS_PER_USER: '1000000000',
  };
  mkdirSync(DATA_DIR, { recursive: true });
  const logFile = join(DATA_DIR, `service-${options.dialect}-${options.params.playlists}.log`);
  const service = await startService({
    databaseUrl: store.databaseUrl,
    logFile,
    settings,
    profile: options.profile,
    cpu: serviceCpu,
  });
  console.log(`\nService ready in ${service.startMs.toFixed(0)} ms at ${service.url}; its log: ${logFile}`);
  const scenarios: ScenarioResult[] = [];
  let signInWarmupMs: number;
  try {
    const users = activeUsers(meta, options.users);
    signInWarmupMs = await signIn(service.url, meta, users);
    console.log(`Signed in ${users.length} users in ${signInWarmupMs.toFixed(0)} ms`);
    const baseline = await startBaseline(serviceCpu);
    const database =
      options.dialect === 'postgres' ? decodeURIComponent(new URL(store.databaseUrl).pathname.slice(1)) : undefined;
    try {
      for (const scenario of SCENARIOS.filter((s) => options.scenarios.includes(s.name))) {
        if (scenario.settings === undefined) {
          scenarios.push(await runScenario(scenario, service, baseline, meta, users, options, database));
          continue;
        }
        // A scenario with settings of its own gets a service of its own, started the same way.
        const own = await startService({
          databaseUrl: store.databaseUrl,
          logFile: logFile.replace(/\.log$/, `-${scenario.name}.log`),
          settings: { ...settings, ...scenario.settings },
          profile: false,
          cpu: serviceCpu,
        });
        try {
          await signIn(own.url, meta, users);
          scenarios.push(await runScenario(scenario, own, baseline, meta, users, options, database));
        } finally {
          await own.stop();
        }
      }
    } finally {
      await baseline.stop();
    }
  } finally {
    await service.stop();
  }
  let neighbours: NeighbourResults | undefined;
  if (options.scenarios.includes('neighbours')) {
    console.log('\nneighbours: a small reader beside heavy listers and creators (a service of its own)');
    neighbours = await measureNeighbours(options.durationSeconds, DATA_DIR);
    console.log(formatNeighbours(neighbours));
  }
  let hostileSearch: HostileResults | undefined;
  if (options.scenarios.includes('hostile-search')) {
    console.log(
      '\nhostile-search: other users and the health checks beside the costliest searches (a service of its own)',
    );
    hostileSearch = await measureHostileSearch(options.dialect, options.pgUrl, options.durationSeconds, DATA_DIR);
    console.log(formatHostileSearch(hostileSearch));
  }
  let hostileWrites: HostileWritesResults | undefined;
  if (options.scenarios.includes('hostile-writes')) {
    console.log(
      '\nhostile-writes: another user beside one user flooding edits, creates and deletes (a service of its own)',
    );
    hostileWrites = await measureHostileWrites(options.dialect, options.pgUrl, options.durationSeconds, DATA_DIR);
    console.log(formatHostileWrites(hostileWrites));
  }
  let hostileSignIn: SignInResults | undefined;
  if (options.scenarios.includes('hostile-sign-in')) {
    console.log('\nhostile-sign-in: another user and the health checks beside floods of wrong credentials');
    hostileSignIn = await measureHostileSignIn(options.dialect, options.pgUrl, options.durationSeconds, DATA_DIR);
    console.log(formatHostileSignIn(hostileSignIn));
  }
  let hostileFiles: HostileFilesResults | undefined;
  if (options.scenarios.includes('hostile-files')) {
    console.log('\nhostile-files: another user and the health check beside floods of imports, long patches and diffs');
    hostileFiles = await measureHostileFiles(options.dialect, options.pgUrl, options.durationSeconds, DATA_DIR);
    console.log(formatHostileFiles(hostileFiles));
  }
  let hostileSmart: HostileSmartResults | undefined;
  if (options.scenarios.includes('hostile-smart')) {
    console.log(HOSTILE_SMART);
    hostileSmart = await measureHostileSmart(options.dialect, options.pgUrl, options.durationSeconds, DATA_DIR);
    console.log(formatHostileSmart(hostileSmart));
  }

  let entryWrites: EntryWritesResults | undefined;
  if (options.scenarios.includes('entry-writes')) {
    console.log(
      '\nentry-writes: the rows one edit writes, and its time, by the length of the playlist (a service of its own)',
    );
    entryWrites = await measureEntryWrites({
      dialects: [options.dialect],
      sizes: [10, 100, 1000, 10_000],
      runs: 20,
      counted: 5,
      warmup: 3,
      far: 1000,
      farRuns: 3,
      samePlace: 300,
      pgUrl: options.pgUrl,
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    });
    console.log(formatEntryWrites(entryWrites));
  }

  const problems = scenarios
    .filter((s) =>
      [...s.levels, ...(s.halfPeak === undefined ? [] : [s.halfPeak])].some(
        (l) => l.service.non2xx + l.service.errors > 0,
      ),
    )
    .map((s) => s.name);
  const results: BenchResults = {
    date: new Date().toISOString(),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    git,
    machine: {
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      cores: cpus.length,
      ramBytes: os.totalmem(),
      node: process.version,
      os: `${os.type()} ${os.release()}`,
      loadAverage,
    },
    dialect: options.dialect,
    dataset: {
      params: meta.params,
      generatorVersion: meta.generatorVersion,
      location: store.location,
      users: meta.users.length,
      playlistSongs: meta.playlistSongs,
      diskBytes,
      generationSeconds: meta.generationSeconds,
      generatedThisRun: generated,
    },
    settings: {
      durationSeconds: options.durationSeconds,
      warmupSeconds: options.warmupSeconds,
      connections: options.connections,
      activeUsers: Math.min(options.users, meta.users.length),
      service: settings,
    },
    service: {
      startMs: service.startMs,
      rssAtReadyBytes: service.rssAtReadyBytes,
      maxRssBytes: service.maxRssBytes(),
      signInWarmupMs,
    },
    scenarios,
    ...(neighbours === undefined ? {} : { neighbours }),
    ...(hostileSearch === undefined ? {} : { hostileSearch }),
    ...(hostileWrites === undefined ? {} : { hostileWrites }),
    ...(hostileSignIn === undefined ? {} : { hostileSignIn }),
    ...(hostileFiles === undefined ? {} : { hostileFiles }),
    ...(hostileSmart === undefined ? {} : { hostileSmart }),
    ...(entryWrites === undefined ? {} : { entryWrites }),
    problems,
  };
  const file = writeResults(results);
  console.log(`\n${formatText(results)}\n\nResults: ${file}`);
  if (options.profile) console.log(`CPU profile: ${PROFILE_DIR}/`);
  if (problems.length > 0) {
    console.error(
      `\n!!! ${problems.join(', ')}: non-2xx answers or errors (see above); these figures are NOT valid. !!!`,
    );
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`bench: ${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else {
    console.error('bench:', error);
    process.exitCode = 1;
  }
});
