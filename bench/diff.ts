/**
 * What a diff of two versions costs at the longest playlist (100 000 songs, the largest MIXTAPE_SONGS_MAX) and at
 * the default 1 000, in process: the cases that make the search work hardest, up to each of its cut-offs, against
 * two baselines in the same run on the same lists: copying the second version's ids, and JSON.stringify of its
 * document (`{"name", "songs": [{"id"}]}`), the least a route answering that version would do.
 *
 * Each case is run --warmup times first, uncounted, so that the figures are of compiled code.
 *
 *   npm run bench:diff [-- --runs 50 --warmup 10]
 */
import { parseArgs } from 'node:util';
import { DIFF_BOUNDS, diffPlaylists, type PlaylistVersion } from '../src/history/diff.js';
import { Random } from './random.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '50' }, warmup: { type: 'string', default: '10' } },
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);

interface Case {
  readonly name: string;
  readonly from: readonly number[];
  readonly to: readonly number[];
}

const distinct = (count: number, first = 1): number[] => Array.from({ length: count }, (_, i) => first + i);

/** `count` songs changed for others at evenly spaced places: songs removed plus added is twice `count`. */
function changedEvery(songs: readonly number[], count: number): number[] {
  const step = Math.floor(songs.length / count);
  return songs.map((id, i) => (i % step === step - 1 && i / step < count ? id + 1_000_000 : id));
}

/** The same song everywhere but at `count` random places, different in each version: long equal runs on every diagonal. */
function sparse(length: number, count: number, random: Random): number[] {
  const songs = Array<number>(length).fill(1);
  for (let i = 0; i < count; i += 1) songs[random.int(length)] = 2;
  return songs;
}

function cases(length: number): Case[] {
  const random = new Random(30);
  const songs = distinct(length);
  const within = Math.floor((DIFF_BOUNDS.distance - 2) / 2);
  return [
    { name: 'one song inserted in the middle', from: songs, to: songs.toSpliced(length / 2, 0, 0) },
    {
      name: `${within} songs changed, spread out (distance ${2 * within})`,
      from: songs,
      to: changedEvery(songs, within),
    },
    { name: 'every song changed (distance cut-off)', from: songs, to: distinct(length, length + 1) },
    {
      name: `one song repeated, ${length / 500} others at random places in each`,
      from: sparse(length, length / 500, random),
      to: sparse(length, length / 500, random),
    },
    { name: 'reversed (distance cut-off)', from: songs, to: songs.toReversed() },
  ];
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Median and max of `task` in ms, its mean CPU time (the process's, collector included), and its last answer. */
function time<T>(task: () => T): { median: number; max: number; cpu: number; answer: T } {
  const elapsed: number[] = [];
  let answer = task();
  let cpu = 0;
  for (let run = -warmup; run < runs; run += 1) {
    const before = process.cpuUsage();
    const start = performance.now();
    answer = task();
    if (run >= 0) elapsed.push(performance.now() - start);
    const used = process.cpuUsage(before);
    if (run >= 0) cpu += (used.user + used.system) / 1000;
  }
  elapsed.sort((a, b) => a - b);
  return { median: percentile(elapsed, 50), max: elapsed.at(-1)!, cpu: cpu / runs, answer };
}

const ms = (value: number) => value.toFixed(3);

for (const length of [100_000, 1000]) {
  console.log(`\n${length} songs, ${runs} runs each (ms: median / max)`);
  for (const { name, from, to } of cases(length)) {
    const a: PlaylistVersion = { name: 'Mix', songs: from };
    const b: PlaylistVersion = { name: 'Mix', songs: to };
    const diff = time(() => diffPlaylists(a, b));
    const copy = time(() => to.slice());
    const json = time(() => JSON.stringify({ name: b.name, songs: to.map((id) => ({ id })) }));
    const operations = diff.answer;
    const whole = operations.some((operation) => operation.path === '/songs');
    console.log(
      `  ${name}: ${operations.length} operation${operations.length === 1 ? '' : 's'}` +
        `${whole ? ' (all songs replaced)' : ''}; diff ${ms(diff.median)} / ${ms(diff.max)} (CPU ${ms(diff.cpu)})` +
        ` | copy ${ms(copy.median)} | JSON ${ms(json.median)} / ${ms(json.max)} (CPU ${ms(json.cpu)})` +
        ` | ratio to copy ${(diff.median / copy.median).toFixed(1)}, to JSON ${(diff.median / json.median).toFixed(2)}` +
        ` (max ${(diff.max / json.max).toFixed(2)}, CPU ${(diff.cpu / json.cpu).toFixed(2)})`,
    );
  }
}
