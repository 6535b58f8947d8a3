/**
 * Covers drawn in process, nothing cached, by format and size, one and two at a time, against sharp writing a flat
 * square of the same, and the event loop's delay meanwhile.
 *
 *   npm run bench:covers -- [--seconds 3] [--sizes 64,600,1200] [--out bench/results]
 */
import { cpus, totalmem } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import sharp from 'sharp';
import { CoverRenderer, type CoverFormat } from '../src/covers/renderer.js';
import { writeJson } from './results.js';
import { timed } from './micro.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '64,600,1200' },
    out: { type: 'string', default: 'bench/results' },
  },
});
const seconds = Number(values.seconds);
const ARTISTS = ['Nina Simone', 'Miles Davis', 'Björk', 'Radiohead', 'Fela Kuti', 'Fairuz', 'Caetano Veloso'];

function flatSquare(size: number, format: CoverFormat, n: number): Promise<Buffer> {
  const colour = (n % 0xffffff).toString(16).padStart(6, '0');
  if (format === 'svg')
    return Promise.resolve(
      Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">
<rect width="${size}" height="${size}" fill="#${colour}"/></svg>`),
    );
  const image = sharp({
    create: { width: size, height: size, channels: 3, background: { r: n % 256, g: 80, b: 120 } },
  });
  return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 85 }).toBuffer();
}

const rows = [];
for (const format of ['png', 'jpeg', 'svg'] as const) {
  for (const size of values.sizes.split(',').map(Number)) {
    for (const concurrency of [1, 2]) {
      const renderer = new CoverRenderer({ cacheBytes: 0, renders: concurrency, queue: 1000 }, new Registry());
      const cover = async (n: number) => {
        const artists = [0, 1, 2, 3].map((i) => ARTISTS[(n + i) % ARTISTS.length]!);
        const input = { name: `Late night drive ${n}`, songCount: 10 + (n % 90), artists };
        return renderer.image(input, size, format, await renderer.etag(input, size, format));
      };
      await timed(seconds, concurrency, cover); // warm-up: fonts read, code optimised
      const baseline = await timed(seconds, concurrency, (n) => flatSquare(size, format, n));
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const drawn = await timed(seconds, concurrency, cover);
      loop.disable();
      // No samples: the loop never came up for air, the whole drawing ran on it (SVG).
      const delay = loop.count === 0 ? null : loop.percentile(99) / 1e6;
      const ratio = drawn.perSecond / baseline.perSecond;
      const row = { format, size, concurrency, cover: drawn, baseline, ratio, eventLoopDelayP99Ms: delay };
      rows.push(row);
      console.log(
        `${format.padEnd(4)} ${String(size).padStart(4)}px x${concurrency}: ${drawn.perSecond.toFixed(0).padStart(5)}/s, ` +
          `${drawn.meanMs.toFixed(2)} ms each (p99 ${drawn.p99Ms.toFixed(2)}); baseline ${baseline.perSecond.toFixed(0)}/s; ` +
          `ratio ${row.ratio.toFixed(3)}; event loop p99 delay ${delay === null ? 'n/a (drawn on the loop)' : `${delay.toFixed(2)} ms`}`,
      );
    }
  }
}

const date = new Date().toISOString();
const [cpu, cores, memoryGiB] = [cpus()[0]?.model, cpus().length, Math.round(totalmem() / 2 ** 30)];
const machine = { cpu, cores, memoryGiB, node: process.version };
const command = `npm run bench:covers -- ${process.argv.slice(2).join(' ')}`.trim();
const file = `${values.out}/covers-${date.slice(0, 10)}.json`;
writeJson(file, { date, command, machine, sharp: sharp.versions, seconds, rows });
console.log(`wrote ${file}`);
