/**
 * What the longest JSON Patch costs over the longest playlist: MAX_PATCH_OPERATIONS operations, each as dear as one
 * can be (O(songs)), applied in process, the time per whole patch. The patch is read from its JSON text each time,
 * as a request's body would be, but JSON.parse itself is not counted (the server has done it before).
 *
 * Each scenario is run --warmup times first, uncounted, so that the figures are of compiled code.
 *
 *   npx tsx bench/playlist-edits.ts [--runs 100] [--warmup 20]
 */
import { parseArgs } from 'node:util';
import { loadConfig, type Limits } from '../src/config.js';
import {
  MAX_PATCH_OPERATIONS,
  applyJsonPatch,
  type PlaylistDocument,
} from '../src/playlists/playlist-edit.operations.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '100' }, warmup: { type: 'string', default: '20' } },
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const defaults = loadConfig({}).limits;

interface Scenario {
  readonly name: string;
  readonly limits: Limits;
  readonly playlist: PlaylistDocument;
  readonly patch: unknown[];
}

const playlistOf = (count: number): PlaylistDocument => ({
  name: 'Bench',
  songs: Array.from({ length: count }, (_, i) => ({ id: (i % 500) + 1 })),
});
const times = <T>(count: number, item: T): T[] => Array<T>(count).fill(item);

function scenarios(): Scenario[] {
  const n = MAX_PATCH_OPERATIONS;
  const move = { op: 'move', from: '/songs/0', path: '/songs/-' };
  const wide = { ...defaults, songsMax: 100_000 };
  const full = playlistOf(defaults.songsMax);
  return [
    {
      name: `${n} moves of the first song to the end, 1000 songs`,
      limits: defaults,
      playlist: full,
      patch: times(n, move),
    },
    {
      name: `${n} adds at the front, 0 to 1000 songs`,
      limits: defaults,
      playlist: playlistOf(0),
      patch: times(n, { op: 'add', path: '/songs/0', value: { id: 7 } }),
    },
    {
      name: `${n} copies of the first song to the front, 0 to 1000 songs`,
      limits: { ...defaults, songsMax: 1001 },
      playlist: playlistOf(1),
      patch: times(n, { op: 'copy', from: '/songs/0', path: '/songs/0' }),
    },
    {
      name: `${n} tests of all 1000 songs (a 9 MB body: past the 64 KiB limit)`,
      limits: defaults,
      playlist: full,
      patch: times(n, { op: 'test', path: '/songs', value: full.songs }),
    },
    {
      name: `${n} moves of the first song to the end, 100 000 songs (the largest MIXTAPE_SONGS_MAX)`,
      limits: wide,
      playlist: playlistOf(wide.songsMax),
      patch: times(n, move),
    },
  ];
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

for (const scenario of scenarios()) {
  const text = JSON.stringify(scenario.patch);
  const elapsed: number[] = [];
  for (let run = -warmup; run < runs; run += 1) {
    const patch: unknown = JSON.parse(text);
    const start = performance.now();
    applyJsonPatch(scenario.playlist, patch, scenario.limits);
    if (run >= 0) elapsed.push(performance.now() - start);
  }
  elapsed.sort((a, b) => a - b);
  const kib = (Buffer.byteLength(text) / 1024).toFixed(0);
  console.log(
    `${scenario.name} (${kib} KiB): median ${percentile(elapsed, 50).toFixed(2)} ms, ` +
      `p90 ${percentile(elapsed, 90).toFixed(2)} ms, max ${elapsed.at(-1)!.toFixed(2)} ms over ${runs} runs`,
  );
}
