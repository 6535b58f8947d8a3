import { hash } from 'node:crypto';

const BLOCK = 64;
/** The longest text (in UTF-16 units, up to 3 UTF-8 bytes each) hashed in the key's own buffer, not a new one. */
const SCRATCH_UNITS = 1024;

/**
 * HMAC-SHA256 (RFC 2104) with a fixed key, from two one-shot hashes over the padded key prepared once. Every
 * authenticated request computes one, to look its credential up in the cache; `createHmac` builds a keyed object
 * each time and costs several times as much.
 *
 * The text is written after the inner pad in a buffer kept for it, and the inner digest after the outer pad in
 * another, so that a digest allocates no buffer; the inner digest comes out as `binary` (latin1, one character a byte), since
 * `hash` returns a buffer several times slower than a string. Each call fills both buffers and hashes them before
 * it returns: nothing else can run in between.
 */
export class HmacKey {
  /** The inner pad, then room for the text. */
  readonly #inner = Buffer.alloc(BLOCK + 3 * SCRATCH_UNITS);
  /** The outer pad, then the inner digest. */
  readonly #outer = Buffer.alloc(BLOCK + 32);

  constructor(key: Buffer) {
    const block = Buffer.alloc(BLOCK);
    (key.length > BLOCK ? hash('sha256', key, 'buffer') : key).copy(block);
    for (let i = 0; i < BLOCK; i++) {
      this.#inner[i] = block[i]! ^ 0x36;
      this.#outer[i] = block[i]! ^ 0x5c;
    }
  }

  /** The HMAC of the text (as UTF-8), in base64. */
  digest(text: string): string {
    const inner =
      text.length <= SCRATCH_UNITS
        ? this.#inner.subarray(0, BLOCK + this.#inner.write(text, BLOCK, 'utf8'))
        : Buffer.concat([this.#inner.subarray(0, BLOCK), Buffer.from(text, 'utf8')]);
    this.#outer.write(hash('sha256', inner, 'binary'), BLOCK, 'binary');
    return hash('sha256', this.#outer, 'base64');
  }
}
