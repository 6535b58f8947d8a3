import { parseArgs } from 'node:util';
import type { DatasetParams } from './dataset.js';
import { SCENARIOS } from './scenarios.js';

/**
 * The scenarios of scenarios.ts, `neighbours` (bench/neighbours.ts): a small reader's latency beside heavy
 * listers and creators, and `hostile-search` (bench/hostile-search.ts): other users' latency and the health checks
 * beside the most expensive searches one user can make, `hostile-writes` (bench/hostile-writes.ts): another user's
 * latency beside one user's flood of edits, creates and deletes, and `hostile-sign-in` (bench/hostile-sign-in.ts):
 * another user's latency beside floods of wrong credentials, and `hostile-files` (bench/hostile-files.ts): another
 * user's latency and the health check beside floods of imports, long JSON Patches and diffs, and `hostile-smart`
 * (bench/hostile-smart.ts): a writer's appends beside smart playlists that follow, and the others beside costly
 * rules and old-base merges, and `entry-writes`
 * (bench/entry-writes.ts): the rows one edit writes and its time by the playlist's length, each on a service and
 * database of its own.
 */
export const SCENARIO_NAMES = [
  ...SCENARIOS.map((s) => s.name),
  'neighbours',
  'hostile-search',
  'hostile-writes',
  'hostile-sign-in',
  'hostile-files',
  'hostile-smart',
  'entry-writes',
];

export const USAGE = `Usage: npm run bench -- [options]

Data set (generated once per set of parameters, then reused):
  --dialect sqlite|postgres     the database (default sqlite)
  --playlists N                 playlists in the data set (default 10000)
  --playlists-per-user N        about this many per user, at least 10 (default 100)
  --songs N                     catalog size, at least 1000 (default 50000)
  --seed N                      seed of the generator (default 1)
  --regenerate                  generate again even if a matching data set exists
  --pg-url URL                  PostgreSQL server, as an administrator's URL
                                (default postgres://root@127.0.0.1:5432/postgres)

Load:
  --only a,b                    scenarios to run (default all: ${SCENARIO_NAMES.join(', ')})
  --scenarios a,b               the same as --only
  --connections 1,16,64         concurrency levels (default 1,16,64)
  --duration S                  seconds per level (default 10)
  --warmup S                    seconds of unmeasured load before each scenario (default 2)
  --users N                     users the load is spread over (default 200; each costs one slow sign-in first)

Service:
  --skip-build                  serve the existing dist/ instead of running npm run build first
  --profile                     write a CPU profile of the service to bench/profiles/`;

export interface BenchOptions {
  readonly dialect: 'sqlite' | 'postgres';
  readonly params: DatasetParams;
  readonly regenerate: boolean;
  readonly pgUrl: string;
  readonly scenarios: readonly string[];
  readonly connections: readonly number[];
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly users: number;
  readonly build: boolean;
  readonly profile: boolean;
}

export class UsageError extends Error {}

function integer(name: string, value: string, min: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be an integer of at least ${min}`);
  return n;
}

/** The command line as parseArgs reads it; its own errors (an unknown option) become usage errors. */
function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      strict: true,
      options: {
        dialect: { type: 'string', default: 'sqlite' },
        playlists: { type: 'string', default: '10000' },
        'playlists-per-user': { type: 'string', default: '100' },
        songs: { type: 'string', default: '50000' },
        seed: { type: 'string', default: '1' },
        regenerate: { type: 'boolean', default: false },
        'pg-url': { type: 'string', default: 'postgres://root@127.0.0.1:5432/postgres' },
        only: { type: 'string', default: SCENARIO_NAMES.join(',') },
        scenarios: { type: 'string' },
        connections: { type: 'string', default: '1,16,64' },
        duration: { type: 'string', default: '10' },
        warmup: { type: 'string', default: '2' },
        users: { type: 'string', default: '200' },
        'skip-build': { type: 'boolean', default: false },
        profile: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** The options, or undefined for --help. */
export function parseOptions(args: string[]): BenchOptions | undefined {
  const { values } = parse(args);
  if (values.help) return undefined;
  if (values.dialect !== 'sqlite' && values.dialect !== 'postgres') {
    throw new UsageError('--dialect must be sqlite or postgres');
  }
  const scenarios = (values.scenarios ?? values.only).split(',').filter((name) => name !== '');
  const unknown = scenarios.filter((name) => !SCENARIO_NAMES.includes(name));
  if (unknown.length > 0 || scenarios.length === 0) {
    throw new UsageError(`--only takes scenario names from: ${SCENARIO_NAMES.join(', ')}`);
  }
  const params: DatasetParams = {
    playlists: integer('playlists', values.playlists, 10),
    // Below 10, 1% of a user's playlists and three ten-song playlists would not fit.
    playlistsPerUser: integer('playlists-per-user', values['playlists-per-user'], 10),
    songs: integer('songs', values.songs, 1000),
    seed: integer('seed', values.seed, 0),
  };
  if (params.playlists < params.playlistsPerUser)
    throw new UsageError('--playlists must be at least --playlists-per-user');
  return {
    dialect: values.dialect,
    params,
    regenerate: values.regenerate,
    pgUrl: values['pg-url'],
    scenarios,
    connections: values.connections.split(',').map((c) => integer('connections', c.trim(), 1)),
    durationSeconds: integer('duration', values.duration, 1),
    warmupSeconds: integer('warmup', values.warmup, 0),
    users: integer('users', values.users, 1),
    build: !values['skip-build'],
    profile: values.profile,
  };
}
