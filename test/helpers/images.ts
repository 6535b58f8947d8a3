import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { expect } from 'vitest';

/** Decoded pixels: `channels` bytes per pixel, row after row. */
export interface Pixels {
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly data: Buffer;
  readonly format: string;
}

/** Decodes a PNG or JPEG (with sharp) into RGB pixels and says which format it was. */
export async function decode(bytes: Buffer): Promise<Pixels> {
  const { format } = await sharp(bytes).metadata();
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, channels: info.channels, data, format };
}

/** The colour at a pixel as `[r, g, b]`. */
export function pixel(image: Pixels, x: number, y: number): [number, number, number] {
  const at = (Math.round(y) * image.width + Math.round(x)) * image.channels;
  return [image.data[at]!, image.data[at + 1]!, image.data[at + 2]!];
}

export function hexToRgb(hex: string): [number, number, number] {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** Asserts that two colours differ by at most `tolerance` in every channel. */
export function expectColour(actual: [number, number, number], expected: string, tolerance: number, where = ''): void {
  const wanted = hexToRgb(expected);
  const worst = Math.max(...actual.map((c, i) => Math.abs(c - wanted[i]!)));
  expect(worst, `${where}: got rgb(${actual.join(', ')}), expected ${expected}`).toBeLessThanOrEqual(tolerance);
}

/** The sum of a counter's values (over all its labels) in the app's Prometheus metrics. */
async function counter(app: FastifyInstance, name: string): Promise<number> {
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  const counts = [...metrics.body.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'gm'))];
  return counts.reduce((sum, [, n]) => sum + Number(n), 0);
}

/** How many covers the app has drawn so far, from its Prometheus metrics. */
export function coverRenders(app: FastifyInstance): Promise<number> {
  return counter(app, 'mixtape_cover_renders_total');
}

/** How many covers the app has answered from its in-memory cache so far, from its Prometheus metrics. */
export function coverCacheHits(app: FastifyInstance): Promise<number> {
  return counter(app, 'mixtape_cover_cache_hits_total');
}
