/**
 * The longest JSON Patch (MAX_PATCH_OPERATIONS operations, each O(songs)) over the longest playlist, in process.
 *
 *   npx tsx bench/playlist-edits.ts [--runs 100] [--warmup 20]
 */
import { parseArgs } from 'node:util';
import { loadConfig, type Limits } from '../src/config.js';
import {
  MAX_PATCH_OPERATIONS as N,
  applyJsonPatch,
  type PlaylistDocument,
} from '../src/playlists/playlist-edit.operations.js';
import { repeat } from './micro.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '100' }, warmup: { type: 'string', default: '20' } },
});
const limits = loadConfig({}).limits;
const playlistOf = (count: number): PlaylistDocument => ({
  name: 'Bench',
  songs: Array.from({ length: count }, (_, i) => ({ id: (i % 500) + 1 })),
});
const times = (item: unknown) => Array<unknown>(N).fill(item);
const [move, add] = [
  { op: 'move', from: '/songs/0', path: '/songs/-' },
  { op: 'add', path: '/songs/0', value: { id: 7 } },
];
const copy = { op: 'copy', from: '/songs/0', path: '/songs/0' };
const full = playlistOf(limits.songsMax);
const [test, wide, longest] = [
  { op: 'test', path: '/songs', value: full.songs },
  { ...limits, songsMax: 100_000 },
  playlistOf(100_000),
];

const SCENARIOS: [string, Limits, PlaylistDocument, unknown[]][] = [
  [`${N} moves of the first song to the end, 1000 songs`, limits, full, times(move)],
  [`${N} adds at the front, 0 to 1000 songs`, limits, playlistOf(0), times(add)],
  [
    `${N} copies of the first song to the front, 0 to 1000 songs`,
    { ...limits, songsMax: 1001 },
    playlistOf(1),
    times(copy),
  ],
  [`${N} tests of all 1000 songs (a 9 MB body: past the 64 KiB limit)`, limits, full, times(test)],
  [
    `${N} moves of the first song to the end, 100 000 songs (the largest MIXTAPE_SONGS_MAX)`,
    wide,
    longest,
    times(move),
  ],
];

for (const [name, limit, playlist, patch] of SCENARIOS) {
  const text = JSON.stringify(patch);
  let parsed: unknown;
  const r = repeat(
    Number(values.runs),
    Number(values.warmup),
    () => applyJsonPatch(playlist, parsed, limit),
    () => (parsed = JSON.parse(text)),
  );
  console.log(
    `${name} (${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB): median ${r.median.toFixed(2)} ms, ` +
      `p90 ${r.p90.toFixed(2)} ms, max ${r.max.toFixed(2)} ms over ${values.runs} runs`,
  );
}
