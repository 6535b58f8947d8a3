/**
 * `npm run bench`: the benchmark harness. The load scenarios (bench/scenarios.ts) run on the generated data set
 * (bench/store.ts) against the built service, level by level, each level also against a bare `node:http` baseline
 * answering the same bytes; every other scenario runs on a database and service of its own. Each dialect's figures go
 * to one results file (JSON) and are printed as tables. See docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startBaseline, type Baseline } from './floor-server.js';
import type { BenchUser, DatasetMeta } from './dataset.js';
import { auth, measure, measurePaced, send, type Measurement } from './load.js';
import { Random } from './random.js';
import { startPlainWay, type PlainWay } from './plain-way.js';
import { formatLoad, gitState, machine, report, resultsFile, writeJson, type ScenarioResult } from './results.js';
import { OWN, SCENARIOS, type Scenario } from './scenarios.js';
import * as service from './service.js';
import { datasetStore, ensureDataset } from './store.js';

const NAMES = [...SCENARIOS.map((s) => s.name), ...OWN.map((s) => s.name)];
/** Run only when named: they take long, or many of the machine's resources. */
const NAMED_ONLY = ['smart', 'unasked-shares', 'live', 'entry-writes', 'long-playlists', 'library', 'get-token'];

const USAGE = `Usage: npm run bench -- [options] (docs/benchmarks.md)

  --only a,b, --scenarios a,b   scenarios (default all but ${NAMED_ONLY.join(', ')}): ${NAMES.join(', ')}
  --dialect sqlite|postgres     the database, or both as sqlite,postgres (default sqlite)
  --pg-url URL                  PostgreSQL server, as an administrator's URL (default ${service.DEFAULT_PG_URL})
  --duration S                  seconds a level or phase (default 10; live, hostile-smart 20; hostile-sign-in 15)
  --out PATH [--tag T]          the results file (PATH.json), or PATH/<scenario>-<dialect>[-T].json
  --skip-build                  serve the existing dist/ instead of running npm run build first
  --profile                     write a CPU profile of the service to bench/profiles/
load scenarios, on the data set generated once per set of parameters:
  --playlists N (10000), --playlists-per-user N (100), --songs N (50000; smart, hostile-smart 200000), --seed N (1)
  --regenerate, --connections 1,16,64, --warmup S (2), --users N (200, each a slow sign-in first)
scenarios with a service of their own:
  --phases a,b                  the flooding phases or measures to run (the quiet phases always run)
  --root DIR                    serve another checkout's build (DIR/dist)
  live: --n N (200), --streams N (10000), --users N (1000), --rate N (50)
  entry-writes: --before DIR, --sizes a,b (10,100,1000,10000), --far N (1000; 0: none), --far-runs N (3)
  long-playlists: --before DIR, --sizes a,b,c (10,1000,10000), --runs N (15)
  library: --playlists N (10000), --folders N (500), --runs N (15)`;

class UsageError extends Error {}

function integer(name: string, value: string, min: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be an integer of at least ${min}`);
  return n;
}

const [text, flag] = [{ type: 'string' as const }, { type: 'boolean' as const, default: false }];
const given = (value: string) => ({ type: 'string' as const, default: value });
const OPTIONS = {
  ...{ dialect: given('sqlite'), playlists: given('10000'), 'playlists-per-user': given('100'), songs: text },
  ...{ seed: given('1'), regenerate: flag, 'pg-url': given(service.DEFAULT_PG_URL), only: text, scenarios: text },
  ...{ connections: given('1,16,64'), duration: text, warmup: given('2'), users: text, 'skip-build': flag },
  ...{ profile: flag, help: flag, phases: text, out: text, tag: text, root: text, n: text, streams: text },
  ...{ rate: text, before: text, sizes: text, far: text, 'far-runs': text, runs: text, folders: text },
};

function parseOptions(args: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args, strict: true, options: OPTIONS });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values: v } = parsed;
  const dialects = v.dialect.split(',');
  if (!dialects.every((d): d is service.Dialect => d === 'sqlite' || d === 'postgres'))
    throw new UsageError('--dialect must be sqlite, postgres or sqlite,postgres');
  const only = v.scenarios ?? v.only;
  const scenarios = only === undefined ? NAMES.filter((n) => !NAMED_ONLY.includes(n)) : only.split(',').filter(Boolean);
  if (scenarios.length === 0 || scenarios.some((name) => !NAMES.includes(name)))
    throw new UsageError(`--only takes scenario names from: ${NAMES.join(', ')}`);
  const params = {
    playlists: integer('playlists', v.playlists, 10),
    // Below 10, 1% of a user's playlists and three ten-song playlists would not fit.
    playlistsPerUser: integer('playlists-per-user', v['playlists-per-user'], 10),
    ...{ songs: integer('songs', v.songs ?? '50000', 1000), seed: integer('seed', v.seed, 0) },
  };
  if (params.playlists < params.playlistsPerUser)
    throw new UsageError('--playlists must be at least --playlists-per-user');
  const option = (name: string) => (v as Record<string, unknown>)[name] as string | undefined;
  return {
    ...{ help: v.help, dialects, params, regenerate: v.regenerate, pgUrl: v['pg-url'], scenarios, option },
    connections: v.connections.split(',').map((c) => integer('connections', c.trim(), 1)),
    duration: v.duration === undefined ? undefined : integer('duration', v.duration, 1),
    ...{ warmup: integer('warmup', v.warmup, 0), users: v.users === undefined ? 200 : integer('users', v.users, 1) },
    ...{ build: !v['skip-build'], profile: v.profile, out: v.out, tag: v.tag, root: v.root },
    phases: v.phases === undefined ? undefined : new Set(v.phases.split(',')),
  };
}

type Options = ReturnType<typeof parseOptions>;

/**
 * Signs every active user in once, 4 at a time: the service keeps verified credentials, so without this the first
 * seconds would measure scrypt, not the scenario. A busy service may shed one (503) or hold it back (429).
 */
async function signIn(url: string, users: readonly BenchUser[]): Promise<number> {
  const started = performance.now();
  const queue = [...users];
  const worker = async () => {
    for (let user = queue.shift(); user !== undefined; user = queue.shift()) {
      for (let attempt = 1; ; attempt++) {
        const answer = await send(url, { path: '/v3/playlist?limit=1', headers: auth(user.name) });
        if (answer.status === 200) break;
        if ((answer.status !== 503 && answer.status !== 429) || attempt === 5)
          throw new Error(`Signing in as ${user.name} failed: status ${answer.status}`);
        await sleep(1000 * Math.min(Number(answer.headers['retry-after'] ?? 1) || 1, 5));
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return performance.now() - started;
}

const describe = (m: Measurement) =>
  `${Math.round(m.rps)} req/s, p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms` +
  (m.non2xx + m.errors > 0 ? `, ${m.non2xx} non-2xx ${JSON.stringify(m.statusCodes)}, ${m.errors} errors` : '');

/**
 * One scenario, level by level, on the service and the baseline, and on the plain way too when the scenario is one it
 * answers; `database` names PostgreSQL's for its CPU.
 */
async function runScenario(
  scenario: Scenario,
  running: service.RunningService,
  baseline: Baseline,
  context: { meta: DatasetMeta; users: readonly BenchUser[]; options: Options; database: string | undefined } & {
    plain: PlainWay | undefined;
  },
): Promise<ScenarioResult> {
  const { meta, options, database } = context;
  const { url, pid } = running;
  const scenarioContext = { meta, users: context.users, random: new Random(meta.params.seed) };
  await scenario.prepare?.(url, scenarioContext);
  const requests = scenario.requests(scenarioContext);
  const sample = requests[0];
  if (sample === undefined) throw new Error(`The ${scenario.name} scenario has no requests.`);
  const answer = await send(url, sample);
  const problem = scenario.check(answer, sample, meta);
  if (problem !== undefined) throw new Error(`The ${scenario.name} scenario's sample answer is wrong: ${problem}`);
  await baseline.answerWith(answer);
  // The plain way has the data set's ids: the requests made for the service are its requests too.
  const plainUrl = scenario.plain === true ? context.plain?.url : undefined;
  if (plainUrl !== undefined) {
    const wrong = scenario.check(await send(plainUrl, sample), sample, meta);
    if (wrong !== undefined)
      throw new Error(`The plain way's sample answer of the ${scenario.name} scenario: ${wrong}`);
  }
  console.log(`\n${scenario.name}: ${scenario.description} (${requests.length} different requests)`);
  const [top, { exclusive }, durationSeconds] = [Math.max(...options.connections), scenario, options.duration ?? 10];
  // The baseline answers every request alike: what a scenario learns from answers is not to be learnt from it.
  const baselineRequests = requests.map((r) => ({ ...r, onResponse: undefined }));
  if (options.warmup > 0) {
    scenario.beforeRun?.();
    await measure(url, requests, { connections: top, durationSeconds: options.warmup, exclusive });
    await measure(baseline.url, baselineRequests, { connections: top, durationSeconds: options.warmup, exclusive });
    if (plainUrl !== undefined) {
      scenario.beforeRun?.();
      await measure(plainUrl, requests, { connections: top, durationSeconds: options.warmup, exclusive });
    }
  }
  const levels = [];
  for (const connections of options.connections) {
    scenario.beforeRun?.();
    const cpuBefore = service.readCpu(pid, database);
    const s = await measure(url, requests, { connections, durationSeconds, exclusive });
    const cpu = service.perRequest(cpuBefore, service.readCpu(pid, database), s.responses);
    const b = await measure(baseline.url, baselineRequests, { connections, durationSeconds, exclusive });
    let p: Measurement | undefined;
    if (plainUrl !== undefined) {
      // What the service's answers taught the requests (the edit scenario's ETags) means nothing to the plain way.
      scenario.beforeRun?.();
      p = await measure(plainUrl, requests, { connections, durationSeconds, exclusive });
    }
    const [ratio, ms] = [s.rps / b.rps, (n: number) => n.toFixed(3)];
    const vsPlain = p === undefined ? undefined : s.rps / p.rps;
    const cpuText =
      cpu === undefined ? '' : ` | CPU a request: service ${ms(cpu.serviceMs)}, database ${ms(cpu.databaseMs)}`;
    const plainText = p === undefined ? '' : ` | plain ${describe(p)} | service ÷ plain ${ms(vsPlain!)}`;
    console.log(
      `  ${connections} conn: service ${describe(s)} | baseline ${describe(b)} | ratio ${ms(ratio)}${plainText}${cpuText}`,
    );
    levels.push({ connections, service: s, baseline: b, ratio, plain: p, vsPlain, cpu });
  }
  const versus = scenario.versus === undefined ? {} : { versus: scenario.versus };
  const result = { name: scenario.name, description: scenario.description, ...versus, levels };
  if (scenario.halfPeak !== true) return result;
  const rate = Math.max(1, Math.round(Math.max(...levels.map((l) => l.service.rps)) / 2));
  const load = { connections: top, durationSeconds, rate };
  const [s, b] = [await measurePaced(url, requests, load), await measurePaced(baseline.url, requests, load)];
  // Not the plain way: paced at the service's rate, one that cannot keep up would measure its backlog.
  console.log(`  half peak, ${rate}/s over ${top} conn: service ${describe(s)} | baseline ${describe(b)}`);
  return { ...result, halfPeak: { rate, connections: top, service: s, baseline: b } };
}

/** The load scenarios on the data set: its generation or reuse, the service, the sign-ins, the baseline. */
async function runLoad(options: Options, dialect: service.Dialect, scenarios: readonly Scenario[]) {
  service.pinBench();
  const { playlists } = options.params;
  const store = datasetStore(dialect, String(playlists), options.pgUrl);
  const { meta, generated } = await ensureDataset(store, options.params, options.regenerate);
  // The create scenario adds thousands of playlists per user; the default quota would answer 409.
  const settings = { LOG_LEVEL: 'info', MIXTAPE_SEED_CATALOG: 'false', MIXTAPE_PLAYLISTS_PER_USER: '1000000000' };
  mkdirSync(service.DATA_DIR, { recursive: true });
  const logFile = join(service.DATA_DIR, `service-${dialect}-${playlists}.log`);
  const start = (extra: Readonly<Record<string, string>>, name = '') =>
    service.startService({
      ...{ databaseUrl: store.databaseUrl, settings: { ...settings, ...extra }, cpu: service.SERVICE_CPU },
      ...{
        logFile: name ? logFile.replace(/\.log$/, `-${name}.log`) : logFile,
        profile: options.profile && name === '',
      },
    });
  const running = await start({});
  console.log(`\nService ready in ${running.startMs.toFixed(0)} ms at ${running.url}; its log: ${logFile}`);
  // The users the load is spread over, evenly across the data set.
  const active = Math.min(options.users, meta.users.length);
  const users = Array.from({ length: active }, (_, i) => meta.users[Math.floor((i * meta.users.length) / active)]!);
  const results: ScenarioResult[] = [];
  let signInWarmupMs = 0;
  let plainWay: { fillMs: number; playlists: number } | undefined;
  try {
    signInWarmupMs = await signIn(running.url, users);
    console.log(`Signed in ${users.length} users in ${signInWarmupMs.toFixed(0)} ms`);
    const baseline = await startBaseline(service.SERVICE_CPU);
    let plain: PlainWay | undefined;
    try {
      // Filled from the data set before any scenario writes to it, on the service's CPU while the service is idle.
      if (scenarios.some((s) => s.plain === true)) {
        plain = await startPlainWay(service.SERVICE_CPU, store.databaseUrl);
        plainWay = { fillMs: plain.fillMs, playlists: plain.playlists };
        console.log(`Plain way ready in ${plain.fillMs.toFixed(0)} ms (${plain.playlists} playlists) at ${plain.url}`);
      }
      for (const scenario of scenarios) {
        // A scenario with settings of its own gets a service of its own, started the same way.
        const own = scenario.settings === undefined ? running : await start(scenario.settings, scenario.name);
        try {
          if (own !== running) await signIn(own.url, users);
          const database = dialect === 'postgres' ? store.database : undefined;
          const context = { meta, users, options, database, plain };
          results.push(await runScenario(scenario, own, baseline, context));
        } finally {
          if (own !== running) await own.stop();
        }
      }
    } finally {
      await plain?.stop();
      await baseline.stop();
    }
  } finally {
    await running.stop();
  }
  const failed = (s: ScenarioResult) =>
    [...s.levels, ...(s.halfPeak ? [s.halfPeak] : [])].some((l) => l.service.non2xx + l.service.errors > 0) ||
    s.levels.some((l) => l.plain !== undefined && l.plain.non2xx + l.plain.errors > 0);
  return {
    dataset: {
      ...{ params: meta.params, generatorVersion: meta.generatorVersion, location: store.location },
      users: meta.users.length,
      ...{ playlistSongs: meta.playlistSongs, diskBytes: await store.size() },
      generationSeconds: meta.generationSeconds,
      generatedThisRun: generated,
    },
    settings: {
      ...{ durationSeconds: options.duration ?? 10, warmupSeconds: options.warmup, connections: options.connections },
      ...{ activeUsers: users.length, service: settings },
    },
    service: {
      ...{ startMs: running.startMs, rssAtReadyBytes: running.rssAtReadyBytes, maxRssBytes: running.maxRssBytes() },
      signInWarmupMs,
    },
    ...(plainWay === undefined ? {} : { plainWay }),
    scenarios: results,
    problems: results.filter(failed).map((s) => s.name),
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.help) {
    console.log(USAGE);
    return;
  }
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();
  // Read before the build, so that it names the code that was measured.
  const [git, loadAverage] = [gitState(), os.loadavg()];
  // The service, the database and the load generator share this machine: anything else running skews the figures.
  if (loadAverage[0]! > os.cpus().length / 2)
    console.warn(`Warning: the machine is busy (load average ${loadAverage[0]!.toFixed(2)}); figures will suffer.`);
  if (options.build && spawnSync('npm', ['run', 'build'], { cwd: service.ROOT, stdio: 'inherit' }).status !== 0)
    throw new Error('npm run build failed; fix it, or pass --skip-build to serve dist/ as is');
  if (options.profile) mkdirSync(join(service.ROOT, service.PROFILE_DIR), { recursive: true });
  const load = SCENARIOS.filter((s) => options.scenarios.includes(s.name));
  const own = OWN.filter((s) => options.scenarios.includes(s.name));
  for (const dialect of options.dialects) {
    const date = new Date().toISOString();
    const results: Record<string, unknown> = { date, command, git, machine: machine(loadAverage), dialect };
    const loaded = load.length === 0 ? undefined : await runLoad(options, dialect, load);
    Object.assign(results, loaded);
    for (const scenario of own) {
      console.log(`\n${scenario.name} (${dialect}): ${scenario.description}`);
      const { pgUrl, phases, profile, root, option } = options;
      const int = (name: string, fallback: number) => {
        const value = option(name);
        return value === undefined ? fallback : integer(name, value, 0);
      };
      const seconds = options.duration ?? scenario.seconds;
      results[scenario.name] = await scenario.run({ dialect, pgUrl, seconds, phases, profile, root, option, int });
      console.log(`\n${report(scenario, results[scenario.name])}`);
    }
    const label = loaded === undefined ? own.map((s) => s.name).join('+') : String(options.params.playlists);
    // Two databases and one `.json` file: one file each.
    const out = options.dialects.length > 1 ? options.out?.replace(/\.json$/, `-${dialect}.json`) : options.out;
    const file = resultsFile(label, dialect, out, options.tag);
    writeJson(file, results);
    if (loaded !== undefined) console.log(`\n${formatLoad(results as Parameters<typeof formatLoad>[0], false)}`);
    console.log(`\nResults: ${file}`);
    if ((loaded?.problems.length ?? 0) > 0) {
      console.error(
        `\n!!! ${loaded!.problems.join(', ')}: non-2xx answers or errors; these figures are NOT valid. !!!`,
      );
      process.exitCode = 1;
    }
  }
  if (options.profile) console.log(`CPU profile: ${service.PROFILE_DIR}/`);
}

main().catch((error: unknown) => {
  console.error(error instanceof UsageError ? `bench: ${error.message}\n\n${USAGE}` : error);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});
