/**
 * The event loop's busy time to read a playlist file of 1 to 1 000 tracks inline, against one round trip to a pool of
 * one thread (its wall time and the loop's busy time), µs. On one core, as the service runs:
 *
 *   taskset -c 0 npx tsx bench/file-reading.ts
 */
import { WorkerPool } from '../src/workers/worker-pool.js';
import { readFile } from '../src/workers/tasks.js';
import type { FileFormat } from '../src/formats/formats.js';

const files = (tracks: number): Record<FileFormat, string> => {
  const list = Array.from({ length: tracks }, (_v, i) => ({ title: `Song ${i}`, artist: `Artist ${i}` }));
  return {
    xspf:
      '<?xml version="1.0" encoding="UTF-8"?>\n<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>t</title><trackList>' +
      list.map((t) => `<track><title>${t.title}</title><creator>${t.artist}</creator></track>`).join('') +
      '</trackList></playlist>\n',
    jspf: JSON.stringify({ playlist: { title: 't', track: list.map((t) => ({ title: t.title, creator: t.artist })) } }),
    m3u8: `#EXTM3U\n#PLAYLIST:t\n${list.map((t, i) => `#EXTINF:100,${t.artist} - ${t.title}\n${i}.mp3\n`).join('')}`,
  };
};

const { eventLoopUtilization } = performance;
/** Microseconds the main thread was busy since `since`. */
const busyMicros = (since: ReturnType<typeof eventLoopUtilization>) => eventLoopUtilization(since).active * 1000;

const pool = new WorkerPool({ threads: 1, queue: 1000 });
console.log('| tracks | format | bytes | inline: µs busy | pool: µs wall | pool: µs busy |');
console.log('|---|---|---|---|---|---|');
for (const tracks of [1, 10, 100, 1000]) {
  for (const [format, text] of Object.entries(files(tracks)) as [FileFormat, string][]) {
    const input = { format, text, tracks: 1000 };
    const rounds = Math.max(20, Math.floor(20_000 / tracks));
    for (let i = 0; i < rounds / 4; i++) readFile(input);
    for (let i = 0; i < 20; i++) await pool.run('readFile', input);
    let since = eventLoopUtilization();
    const inlineStarted = performance.now();
    for (let i = 0; i < rounds; i++) readFile(input);
    // A synchronous loop shows as busy only once the turn ends: its wall time is its busy time.
    const inline = ((performance.now() - inlineStarted) * 1000) / rounds;
    since = eventLoopUtilization();
    const started = performance.now();
    for (let i = 0; i < rounds; i++) await pool.run('readFile', input);
    const wall = ((performance.now() - started) * 1000) / rounds;
    const main = busyMicros(since) / rounds;
    console.log(
      `| ${tracks} | ${format} | ${Buffer.byteLength(text)} | ${inline.toFixed(0)} | ${wall.toFixed(0)} | ${main.toFixed(0)} |`,
    );
  }
}
await pool.close();
