/**
 * How fast covers are drawn, in process, with nothing cached: per image and per second, for each format and a few
 * sizes, one and two at a time. The baseline, measured in the same run, is the same encoder (sharp) writing a flat
 * square of the same size and format, so the ratio is the price of the drawing itself. It also records how long
 * the event loop stalled meanwhile, which is what JSON requests would feel.
 *
 *   npm run bench:covers -- [--seconds 3] [--sizes 64,600,1200] [--out bench/results]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import sharp from 'sharp';
import { CoverRenderer, type CoverFormat } from '../src/covers/renderer.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '64,600,1200' },
    out: { type: 'string', default: 'bench/results' },
  },
});
const seconds = Number(values.seconds);
const sizes = values.sizes.split(',').map(Number);
const FORMATS: CoverFormat[] = ['png', 'jpeg', 'svg'];
const CONCURRENCY = [1, 2];

const ARTISTS = ['Nina Simone', 'Miles Davis', 'Björk', 'Radiohead', 'Fela Kuti', 'Fairuz', 'Caetano Veloso'];

interface Figures {
  perSecond: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
}

/** Runs `task` with `concurrency` workers for `seconds`, each call with a new number; times every call. */
async function measure(concurrency: number, task: (n: number) => Promise<unknown>): Promise<Figures> {
  const times: number[] = [];
  let n = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await task(n++);
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return {
    perSecond: times.length / elapsed,
    meanMs: times.reduce((a, b) => a + b, 0) / times.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
  };
}

function flatSquare(size: number, format: CoverFormat, n: number): Promise<Buffer> {
  if (format === 'svg') {
    return Promise.resolve(
      Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">
<rect width="${size}" height="${size}" fill="#${(n % 0xffffff).toString(16).padStart(6, '0')}"/></svg>`),
    );
  }
  const image = sharp({
    create: { width: size, height: size, channels: 3, background: { r: n % 256, g: 80, b: 120 } },
  });
  return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 85 }).toBuffer();
}

const rows: Record<string, unknown>[] = [];
for (const format of FORMATS) {
  for (const size of sizes) {
    for (const concurrency of CONCURRENCY) {
      const renderer = new CoverRenderer({ cacheBytes: 0, renders: concurrency, queue: 1000 }, new Registry());
      const cover = (n: number) => {
        const input = {
          name: `Late night drive ${n}`,
          songCount: 10 + (n % 90),
          artists: [0, 1, 2, 3].map((i) => ARTISTS[(n + i) % ARTISTS.length]!),
        };
        return renderer.etag(input, size, format).then((etag) => renderer.image(input, size, format, etag));
      };
      await measure(concurrency, cover); // warm-up: fonts read, code optimised
      const baseline = await measure(concurrency, (n) => flatSquare(size, format, n));
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const drawn = await measure(concurrency, cover);
      loop.disable();
      const row = {
        format,
        size,
        concurrency,
        cover: drawn,
        baseline,
        ratio: drawn.perSecond / baseline.perSecond,
        // No samples means the loop never came up for air: the whole drawing ran on it (SVG).
        eventLoopDelayP99Ms: loop.count === 0 ? null : loop.percentile(99) / 1e6,
      };
      rows.push(row);
      console.log(
        `${format.padEnd(4)} ${String(size).padStart(4)}px x${concurrency}: ` +
          `${drawn.perSecond.toFixed(0).padStart(5)}/s, ${drawn.meanMs.toFixed(2)} ms each ` +
          `(p99 ${drawn.p99Ms.toFixed(2)}); baseline ${baseline.perSecond.toFixed(0)}/s; ` +
          `ratio ${row.ratio.toFixed(3)}; event loop p99 delay ${row.eventLoopDelayP99Ms === null ? 'n/a (drawn on the loop)' : `${row.eventLoopDelayP99Ms.toFixed(2)} ms`}`,
      );
    }
  }
}

const result = {
  date: new Date().toISOString(),
  command: `npm run bench:covers -- ${process.argv.slice(2).join(' ')}`.trim(),
  machine: {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  },
  sharp: sharp.versions,
  seconds,
  rows,
};
mkdirSync(values.out, { recursive: true });
const file = `${values.out}/covers-${result.date.slice(0, 10)}.json`;
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${file}`);
