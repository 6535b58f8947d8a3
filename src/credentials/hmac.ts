import { hash } from 'node:crypto';

const BLOCK = 64;

/**
 * HMAC-SHA256 (RFC 2104) with a fixed key, from two one-shot hashes over the padded key prepared once. Every
 * authenticated request computes one, to look its credential up in the cache; `createHmac` builds a keyed object
 * each time and costs about twice as much.
 */
export class HmacKey {
  readonly #inner: Buffer;
  readonly #outer: Buffer;

  constructor(key: Buffer) {
    const block = Buffer.alloc(BLOCK);
    (key.length > BLOCK ? hash('sha256', key, 'buffer') : key).copy(block);
    this.#inner = Buffer.from(block.map((b) => b ^ 0x36));
    this.#outer = Buffer.from(block.map((b) => b ^ 0x5c));
  }

  /** The HMAC of the text (as UTF-8), in base64. */
  digest(text: string): string {
    const inner = hash('sha256', Buffer.concat([this.#inner, Buffer.from(text, 'utf8')]), 'buffer');
    return hash('sha256', Buffer.concat([this.#outer, inner]), 'base64');
  }
}
