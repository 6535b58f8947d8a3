/**
 * Hostile files and long edits: how fast another user's requests and the health check stay while one signed-in user
 * sends, as fast as answers come, the requests whose cost grows with their body. On a service and database of its
 * own (SQLite, or a new PostgreSQL database):
 *
 * - quiet: nobody else works (the baseline, measured in the same run);
 * - import flood, `?unmatched=fail`: eve sends on 80 connections an XSPF file of 1 000 tracks that match no song
 *   (about 55 KB), each answered 422;
 * - import flood, `?unmatched=skip`: the same file, each answered with a new empty playlist;
 * - long JSON Patches: eve sends on 50 connections a JSON Patch of 999 `move`s over a playlist of 1 000 songs;
 * - diffs: eve asks on 50 connections for the diff between two of ten versions of a 1 000-song playlist, each
 *   version the songs in another order.
 *
 * During each, bob lists his playlists at 50/s and imports a one-track file at 5/s, and a probe calls /healthz at
 * 20/s, each on a new connection (as a load balancer's check opens one); all timed from when each was due.
 * `npm run bench -- --only hostile-files [--dialect postgres]`, or alone with
 * `npx tsx bench/hostile-files.ts [--dialect sqlite|postgres] [--duration S]`.
 */
import {
  auth,
  heavyLoad,
  post,
  sampleLoopDelay,
  victimLoad,
  type VictimLatency,
  idOf,
  withHostileService,
} from './neighbours.js';
import { runStandalone } from './standalone.js';

const IMPORT_CONNECTIONS = 80;
const CONNECTIONS = 50;
const SONGS = 1000;
const VERSIONS = 10;

export interface FilesPhase {
  readonly description: string;
  readonly lists: VictimLatency;
  readonly imports: VictimLatency;
  readonly health: VictimLatency;
  /** The event loop's mean delay over each 500 ms, as the load shedding sees it: median and largest, ms. */
  readonly loopDelay: { readonly p50: number; readonly max: number };
  readonly hostileRps: number;
  readonly hostileStatuses: Readonly<Record<string, number>>;
}

export interface HostileFilesResults {
  readonly dialect: 'sqlite' | 'postgres';
  readonly durationSeconds: number;
  readonly phases: readonly FilesPhase[];
}

const XSPF = 'application/xspf+xml';

const xspf = (tracks: readonly string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>Import</title>` +
  `<trackList>${tracks.join('')}</trackList></playlist>\n`;

/** 1 000 tracks whose title and artist no song of the catalog has. */
export const UNMATCHED_FILE = xspf(
  Array.from({ length: SONGS }, (_v, i) => `<track><title>No ${i}</title><creator>Nx ${i}</creator></track>`),
);
const ONE_TRACK_FILE = xspf(['<track><location>http://localhost/v3/song/7</location></track>']);

const importFile = (url: string, unmatched: 'fail' | 'skip') =>
  fetch(`${url}/v3/playlist/import?unmatched=${unmatched}`, {
    method: 'POST',
    headers: { ...auth('eve'), 'content-type': XSPF },
    body: UNMATCHED_FILE,
  });

/** 999 moves of the first song to the end: a rotation, every op over the whole list. */
const LONG_PATCH = JSON.stringify(
  Array.from({ length: SONGS - 1 }, () => ({ op: 'move', from: '/songs/0', path: `/songs/${SONGS - 1}` })),
);

/** The same songs in another order for each `seed`. */
function shuffled(seed: number): number[] {
  const ids = Array.from({ length: SONGS }, (_v, i) => 1 + (i % 240));
  let state = seed + 1;
  for (let i = ids.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    const j = state % (i + 1);
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  return ids;
}

/** Runs the phases on a service of its own; the service must be built (dist/). */
export async function measureHostileFiles(
  dialect: 'sqlite' | 'postgres',
  pgUrl: string,
  durationSeconds: number,
  logDir: string,
): Promise<HostileFilesResults> {
  return withHostileService('hostile-files', dialect, pgUrl, logDir, ['bob', 'eve'], async (url) => {
    for (let i = 0; i < 20; i++) await idOf(await post(url, 'bob', `mine ${i}`, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    const rotated = await idOf(await post(url, 'eve', 'rotated', shuffled(0)));
    const versioned = await idOf(await post(url, 'eve', 'versioned', shuffled(0)));
    for (let v = 1; v < VERSIONS; v++) {
      const response = await fetch(`${url}/v3/playlist/${versioned}`, {
        method: 'PATCH',
        headers: { ...auth('eve'), 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ songIds: shuffled(v) }),
      });
      if (response.status !== 200) throw new Error(`edit: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    }

    const phases: FilesPhase[] = [];
    const phase = async (
      description: string,
      connections: number,
      hostile: ((n: number) => Promise<Response>) | undefined,
    ) => {
      const stopSampling = sampleLoopDelay(url);
      const [lists, imports, health, load] = await Promise.all([
        victimLoad(url, ['/v3/playlist'], durationSeconds, 'bob', 50),
        victimLoad(url, ['/v3/playlist/import?name=one'], durationSeconds, 'bob', 5, ONE_TRACK_FILE, {
          contentType: XSPF,
        }),
        victimLoad(url, ['/healthz'], durationSeconds, 'bob', 20, undefined, { fresh: true }),
        hostile === undefined
          ? Promise.resolve({ heavyRps: 0, heavyStatuses: {} })
          : heavyLoad(connections, durationSeconds, hostile),
      ]);
      phases.push({
        description,
        lists,
        imports,
        health,
        loopDelay: await stopSampling(),
        hostileRps: load.heavyRps,
        hostileStatuses: load.heavyStatuses,
      });
    };
    await phase('quiet', 0, undefined);
    await phase(`import flood, ?unmatched=fail: ${IMPORT_CONNECTIONS} connections`, IMPORT_CONNECTIONS, () =>
      importFile(url, 'fail'),
    );
    await phase(`import flood, ?unmatched=skip: ${IMPORT_CONNECTIONS} connections`, IMPORT_CONNECTIONS, () =>
      importFile(url, 'skip'),
    );
    await phase(`long JSON Patches (${SONGS - 1} moves): ${CONNECTIONS} connections`, CONNECTIONS, () =>
      fetch(`${url}/v3/playlist/${rotated}`, {
        method: 'PATCH',
        headers: { ...auth('eve'), 'content-type': 'application/json-patch+json' },
        body: LONG_PATCH,
      }),
    );
    await phase(`diffs of two ${SONGS}-song versions: ${CONNECTIONS} connections`, CONNECTIONS, (n) => {
      const from = 1 + (n % VERSIONS);
      const to = 1 + ((n * 7 + 3) % VERSIONS);
      return fetch(`${url}/v3/playlist/${versioned}/diff?from=${from}&to=${to === from ? (to % VERSIONS) + 1 : to}`, {
        headers: auth('eve'),
      });
    });
    return { dialect, durationSeconds, phases };
  });
}

export function formatHostileFiles(results: HostileFilesResults): string {
  const lines = [
    `Hostile files (${results.dialect}): bob's list at 50/s and one-track import at 5/s, /healthz at 20/s on new ` +
      'connections, ms from when due',
    '| phase | list p50 | list p99 | import p50 | import p99 | /healthz p50 | /healthz p99 | /healthz max | bob failures | loop delay p50 / max | eve answers/s | eve statuses |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const p of results.phases) {
    lines.push(
      `| ${p.description} | ${p.lists.p50} | ${p.lists.p99} | ${p.imports.p50} | ${p.imports.p99} | ` +
        `${p.health.p50} | ${p.health.p99} | ${p.health.max} | ` +
        `${p.lists.failures + p.imports.failures + p.health.failures} | ${p.loopDelay.p50} / ${p.loopDelay.max} | ` +
        `${p.hostileRps} | ` +
        `${JSON.stringify(p.hostileStatuses)} |`,
    );
  }
  return lines.join('\n');
}

runStandalone('hostile-files.ts', measureHostileFiles, formatHostileFiles);
