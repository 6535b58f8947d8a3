/**
 * Hostile writes: how fast another user's small reads and creates stay while one signed-in user floods writes. On a
 * service and database of its own (SQLite, or a new PostgreSQL database with the default pool of 10):
 *
 * - quiet: nobody else works (the baseline, measured in the same run);
 * - long edits: eve sends merge patches `{"songIds": [1 000 ids]}` to one playlist of hers on 50 connections,
 *   the order of the ids alternating, so that each rewrites every entry;
 * - renames: eve renames one playlist on 50 connections;
 * - creates and deletes: eve creates a two-song playlist and deletes it, on 50 connections.
 *
 * During each, bob reads a 10-song playlist at 50/s and creates a one-song playlist at 10/s, each timed from when
 * it was due. `npm run bench -- --only hostile-writes [--dialect postgres]`, or alone with
 * `npx tsx bench/hostile-writes.ts [--dialect sqlite|postgres] [--duration S] [--phases long,renames,creates]`
 * (the quiet phase always runs first; `--phases` picks which of the others follow it, all by default).
 */
import { auth, heavyLoad, post, victimLoad, type VictimLatency, idOf, withHostileService } from './neighbours.js';
import { runStandalone } from './standalone.js';

const CONNECTIONS = 50;
const SONGS = 1000;

const PHASES = ['long', 'renames', 'creates'] as const;
/** The phases after the quiet one that `--phases a,b` names, or all of them. */
function chosenPhases(argv: readonly string[]): ReadonlySet<string> {
  const at = argv.indexOf('--phases');
  const named = at > 0 ? (argv[at + 1] ?? '').split(',') : [...PHASES];
  const unknown = named.filter((name) => !(PHASES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`--phases: unknown ${unknown.join(', ')}; one of ${PHASES.join(', ')}`);
  return new Set(named);
}

export interface WritesPhase {
  readonly description: string;
  readonly reads: VictimLatency;
  readonly creates: VictimLatency;
  readonly hostileRps: number;
  readonly hostileStatuses: Readonly<Record<string, number>>;
}

export interface HostileWritesResults {
  readonly dialect: 'sqlite' | 'postgres';
  readonly durationSeconds: number;
  readonly phases: readonly WritesPhase[];
}

const patch = (url: string, id: number, body: unknown) =>
  fetch(`${url}/v3/playlist/${id}`, {
    method: 'PATCH',
    headers: { ...auth('eve'), 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify(body),
  });

const songIds = (reversed: boolean) => {
  const ids = Array.from({ length: SONGS }, (_v, i) => 1 + (i % 240));
  return reversed ? ids.reverse() : ids;
};

/** Runs the phases on a service of its own; the service must be built (dist/). */
export async function measureHostileWrites(
  dialect: 'sqlite' | 'postgres',
  pgUrl: string,
  durationSeconds: number,
  logDir: string,
): Promise<HostileWritesResults> {
  const chosen = chosenPhases(process.argv);
  return withHostileService('hostile-writes', dialect, pgUrl, logDir, ['bob', 'eve'], async (url) => {
    const mine = await idOf(await post(url, 'bob', 'mine', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    const long = await idOf(await post(url, 'eve', 'long', songIds(false)));
    const small = await idOf(await post(url, 'eve', 'small', [1, 2, 3]));

    const phases: WritesPhase[] = [];
    const phase = async (description: string, hostile: ((n: number) => Promise<Response>) | undefined) => {
      const [reads, creates, load] = await Promise.all([
        victimLoad(url, [`/v3/playlist/${mine}`], durationSeconds, 'bob', 50),
        victimLoad(url, ['/v3/playlist'], durationSeconds, 'bob', 10, JSON.stringify({ name: 'b', songIds: [7] })),
        hostile === undefined
          ? Promise.resolve({ heavyRps: 0, heavyStatuses: {} })
          : heavyLoad(CONNECTIONS, durationSeconds, hostile),
      ]);
      phases.push({ description, reads, creates, hostileRps: load.heavyRps, hostileStatuses: load.heavyStatuses });
    };
    await phase('quiet', undefined);
    if (chosen.has('long'))
      await phase(`long edits: ${CONNECTIONS} connections, merge patches of ${SONGS} songs`, (n) =>
        patch(url, long, { songIds: songIds(n % 2 === 1) }),
      );
    if (chosen.has('renames'))
      await phase(`renames: ${CONNECTIONS} connections rename one playlist`, (n) =>
        patch(url, small, { name: `rename ${n}` }),
      );
    if (chosen.has('creates'))
      await phase(`creates and deletes: ${CONNECTIONS} connections`, async (n) => {
        const created = await post(url, 'eve', `c${n}`, [1, 2]);
        if (created.status !== 200) return created;
        const id = await idOf(created);
        return fetch(`${url}/v3/playlist/${id}`, { method: 'DELETE', headers: auth('eve') });
      });
    return { dialect, durationSeconds, phases };
  });
}

export function formatHostileWrites(results: HostileWritesResults): string {
  const [quiet] = results.phases;
  const lines = [
    `Hostile writes (${results.dialect}): bob's GET at 50/s and POST at 10/s, ms from when due`,
    '| phase | GET p50 | GET p99 | POST p50 | POST p99 | POST max | GET p99 / quiet | POST p99 / quiet | eve answers/s | eve statuses |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  const ratio = (value: number, base: number | undefined) =>
    base === undefined || base === 0 ? '' : (value / base).toFixed(1);
  for (const p of results.phases) {
    lines.push(
      `| ${p.description} | ${p.reads.p50} | ${p.reads.p99} | ${p.creates.p50} | ${p.creates.p99} | ${p.creates.max} | ` +
        `${ratio(p.reads.p99, quiet?.reads.p99)} | ${ratio(p.creates.p99, quiet?.creates.p99)} | ${p.hostileRps} | ` +
        `${JSON.stringify(p.hostileStatuses)} |`,
    );
  }
  return lines.join('\n');
}

runStandalone('hostile-writes.ts', measureHostileWrites, formatHostileWrites);
