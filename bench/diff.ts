/**
 * A diff of two versions at 100 000 and 1 000 songs, up to each cut-off, against copying the ids and JSON.stringify of
 * the version, in process.
 *
 *   npm run bench:diff [-- --runs 50 --warmup 10]
 */
import { parseArgs } from 'node:util';
import { DIFF_BOUNDS, diffPlaylists } from '../src/history/diff.js';
import { repeat } from './micro.js';
import { Random } from './random.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '50' }, warmup: { type: 'string', default: '10' } },
});
const time = <T>(task: () => T) => repeat(Number(values.runs), Number(values.warmup), task);
const distinct = (count: number, first = 1) => Array.from({ length: count }, (_, i) => first + i);

/** The same song everywhere but at `count` random places: long equal runs on every diagonal. */
function sparse(length: number, count: number, random: Random): number[] {
  const songs = Array<number>(length).fill(1);
  for (let i = 0; i < count; i += 1) songs[random.int(length)] = 2;
  return songs;
}

function cases(length: number): [string, number[], number[]][] {
  const random = new Random(30);
  const songs = distinct(length);
  const within = Math.floor((DIFF_BOUNDS.distance - 2) / 2);
  // `within` songs changed for others at evenly spaced places: removed plus added is twice that.
  const step = Math.floor(length / within);
  const changed = songs.map((id, i) => (i % step === step - 1 && i / step < within ? id + 1_000_000 : id));
  return [
    ['one song inserted in the middle', songs, songs.toSpliced(length / 2, 0, 0)],
    [`${within} songs changed, spread out (distance ${2 * within})`, songs, changed],
    ['every song changed (distance cut-off)', songs, distinct(length, length + 1)],
    [
      `one song repeated, ${length / 500} others at random places in each`,
      sparse(length, length / 500, random),
      sparse(length, length / 500, random),
    ],
    ['reversed (distance cut-off)', songs, songs.toReversed()],
  ];
}

const ms = (value: number) => value.toFixed(3);
for (const length of [100_000, 1000]) {
  console.log(`\n${length} songs, ${values.runs} runs each (ms: median / max)`);
  for (const [name, from, to] of cases(length)) {
    const diff = time(() => diffPlaylists({ name: 'Mix', songs: from }, { name: 'Mix', songs: to }));
    const copy = time(() => to.slice());
    const json = time(() => JSON.stringify({ name: 'Mix', songs: to.map((id) => ({ id })) }));
    const operations = diff.answer;
    const whole = operations.some((operation) => operation.path === '/songs') ? ' (all songs replaced)' : '';
    console.log(
      `  ${name}: ${operations.length} operation${operations.length === 1 ? '' : 's'}${whole}; ` +
        `diff ${ms(diff.median)} / ${ms(diff.max)} (CPU ${ms(diff.cpu)}) | copy ${ms(copy.median)} | ` +
        `JSON ${ms(json.median)} / ${ms(json.max)} (CPU ${ms(json.cpu)}) | ratio to copy ` +
        `${(diff.median / copy.median).toFixed(1)}, to JSON ${(diff.median / json.median).toFixed(2)} ` +
        `(max ${(diff.max / json.max).toFixed(2)}, CPU ${(diff.cpu / json.cpu).toFixed(2)})`,
    );
  }
}
