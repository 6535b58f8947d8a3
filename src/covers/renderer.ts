import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { Counter, type Registry } from 'prom-client';
import type { ImageConfig } from '../config.js';
import { Bounded, boundedPerKey } from '../concurrency/bounded.js';
import { ApiError } from '../http/errors.js';
import type { CoverInput } from './design.js';

export type CoverFormat = 'png' | 'jpeg' | 'svg';

export const MEDIA_TYPES: Readonly<Record<CoverFormat, string>> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  svg: 'image/svg+xml',
};

/**
 * The drawing code and the image library, loaded on the first cover rather than at start: together they take
 * longer to load than the rest of the service.
 */
async function loadDrawing() {
  const [{ default: sharp }, { CoverDesigner, DESIGN_VERSION }] = await Promise.all([
    import('sharp'),
    import('./design.js'),
  ]);
  // Each render uses one libvips thread; how many run at once is this module's to decide, and it caches the
  // results itself, so libvips's own operation cache would only hold memory twice.
  sharp.concurrency(1);
  sharp.cache(false);
  return {
    sharp,
    designer: new CoverDesigner(),
    // The drawing and the encoders both decide the bytes, so the version of each is part of every ETag.
    version: `design ${DESIGN_VERSION}; sharp ${sharp.versions.sharp}; vips ${sharp.versions.vips}`,
  };
}
type Drawing = Awaited<ReturnType<typeof loadDrawing>>;

/**
 * Of everyone's drawings and places in the queue, one user holds at most this many; the rest of their burst (a page
 * of covers a browser asks for at once) waits apart, up to PER_USER_WAITING more, then 429. So one user's covers can
 * make theirs slow, never another user's refused.
 */
const PER_USER_DRAWING = 2;
const PER_USER_WAITING = 32;
/** The covers one user may have drawing and waiting at once; one more is a 429. */
export const COVERS_PER_USER = PER_USER_DRAWING + PER_USER_WAITING;

/**
 * Draws covers off the event loop (libvips's worker threads), a bounded number at a time, and keeps the results in
 * memory up to a byte budget. The ETag is computed from the inputs alone, so a revalidation never draws.
 *
 * What is kept, and what is being drawn, is the owner's: entries are keyed by owner and ETag, so that a user whose
 * playlist looks exactly like another user's (same name, same songs) never gets the other user's cover from memory.
 * Otherwise the time of the answer and the cache hit counter would tell them whether the other user has such a
 * playlist and has looked at its cover lately.
 */
export class CoverRenderer {
  #drawing: Promise<Drawing> | undefined;
  readonly #cache: LRUCache<string, Buffer> | null;
  readonly #inFlight = new Map<string, Promise<Buffer>>();
  readonly #slots: Bounded;
  readonly #perUser = boundedPerKey({
    limit: PER_USER_DRAWING,
    queue: PER_USER_WAITING,
    refuse: () => ApiError.tooManyRequests(1, 'Your previous covers are still being drawn; wait for them first.'),
  });
  readonly #renders: Counter<'format'>;
  readonly #cacheHits: Counter;

  constructor(config: ImageConfig, registry: Registry) {
    this.#slots = new Bounded({
      limit: config.renders,
      queue: config.queue,
      refuse: () => ApiError.unavailable('Too many covers are being drawn; try again in a moment.', 1),
    });
    this.#cache =
      config.cacheBytes > 0
        ? new LRUCache({ maxSize: config.cacheBytes, sizeCalculation: (image) => Math.max(1, image.length) })
        : null;
    this.#renders = new Counter({
      name: 'mixtape_cover_renders_total',
      help: 'Covers drawn, by format (revalidations and cache hits draw nothing)',
      labelNames: ['format'] as const,
      registers: [registry],
    });
    this.#cacheHits = new Counter({
      name: 'mixtape_cover_cache_hits_total',
      help: 'Covers answered from the in-memory cache',
      registers: [registry],
    });
  }

  /** A strong validator for exactly these inputs: it changes whenever the bytes could. */
  async etag(input: CoverInput, size: number, format: CoverFormat): Promise<string> {
    const { version } = await this.#load();
    const digest = createHash('sha256')
      .update(JSON.stringify([version, size, format, input.name, input.songCount, input.artists]))
      .digest('base64url');
    return `"${digest.slice(0, 27)}"`;
  }

  /**
   * The cover with this ETag (from `etag`), drawn for `ownerId`: from the owner's entries in the cache, or drawn now
   * and kept for the owner; 503 when every renderer is busy and the queue is full, 429 when the owner already has
   * PER_USER_DRAWING covers drawing or queued and PER_USER_WAITING more waiting. Without an owner it is drawn
   * afresh and neither kept nor shared.
   */
  async image(input: CoverInput, size: number, format: CoverFormat, etag: string, ownerId?: number): Promise<Buffer> {
    if (ownerId === undefined) return this.#drawWhenFree(input, size, format);
    const key = `${ownerId} ${etag}`;
    const cached = this.#cache?.get(key);
    if (cached !== undefined) {
      this.#cacheHits.inc();
      return cached;
    }
    // The same cover asked for by many of the owner's clients at once is drawn once.
    let pending = this.#inFlight.get(key);
    if (pending === undefined) {
      pending = this.#perUser(ownerId, () => this.#drawWhenFree(input, size, format)).finally(() =>
        this.#inFlight.delete(key),
      );
      this.#inFlight.set(key, pending);
    }
    const image = await pending;
    this.#cache?.set(key, image);
    return image;
  }

  #drawWhenFree(input: CoverInput, size: number, format: CoverFormat): Promise<Buffer> {
    return this.#slots.run(() => {
      this.#renders.inc({ format });
      return this.#draw(input, size, format);
    });
  }

  #load(): Promise<Drawing> {
    this.#drawing ??= loadDrawing();
    return this.#drawing;
  }

  async #draw(input: CoverInput, size: number, format: CoverFormat): Promise<Buffer> {
    const { sharp, designer } = await this.#load();
    const svg = Buffer.from(designer.svg(input, size));
    if (format === 'svg') return svg;
    const image = sharp(svg).removeAlpha();
    return format === 'png'
      ? image.png({ compressionLevel: 6, adaptiveFiltering: false }).toBuffer()
      : image.jpeg({ quality: 85, progressive: false, chromaSubsampling: '4:2:0' }).toBuffer();
  }
}
