import { LRUCache } from 'lru-cache';
import { compressed, type ContentCoding } from '../http/compression.js';

/** Memory an entry takes beyond its bytes (the objects, the key, the cache's own bookkeeping). */
const ENTRY_OVERHEAD = 200;

/** A tree's answer at one version: its JSON text, and the same in the codings it was asked in. */
export interface TreeAnswer {
  readonly userId: number;
  readonly version: number;
  readonly body: Buffer;
  readonly encoded: ReadonlyMap<ContentCoding, Buffer>;
}

const sizeOf = (answer: TreeAnswer) => {
  let bytes = answer.body.length + ENTRY_OVERHEAD;
  for (const body of answer.encoded.values()) bytes += body.length;
  return bytes;
};

/**
 * The answers of users' trees, kept in memory at their version (`MIXTAPE_LIBRARY_CACHE_MB`), each user's newest one
 * only, bounded by bytes. The version says exactly when a tree changes (every write that changes what it shows
 * counts it up in its transaction, library.repository.ts, `libraryChanged`), so an answer is served only for the
 * version the caller has just read from the database: a tree changed on another instance, or by the command line,
 * is read again. A version is never read again once newer: an older answer is never kept over a newer one.
 */
export class LibraryAnswers {
  readonly #entries: LRUCache<number, TreeAnswer> | undefined;

  constructor(maxBytes: number) {
    this.#entries =
      maxBytes > 0
        ? new LRUCache({
            maxSize: maxBytes,
            sizeCalculation: sizeOf,
            // A tree larger than a quarter of the memory is served, not kept: it would push out the others.
            maxEntrySize: Math.max(1, Math.floor(maxBytes / 4)),
          })
        : undefined;
  }

  /** The user's answer at this version, if kept. */
  kept(userId: number, version: number): TreeAnswer | undefined {
    const entry = this.#entries?.peek(userId);
    if (entry?.version !== version) return undefined;
    // Only an entry served makes it recent.
    return this.#entries?.get(userId);
  }

  /** Keeps the user's answer at `version`, unless a newer one is kept; the answer. */
  keep(userId: number, version: number, body: Buffer): TreeAnswer {
    const answer: TreeAnswer = { userId, version, body, encoded: new Map() };
    this.#replace(answer);
    return answer;
  }

  /** The answer in `coding`: kept, or compressed now off the event loop and kept with it. */
  async encoded(answer: TreeAnswer, coding: ContentCoding): Promise<Buffer> {
    const found = answer.encoded.get(coding);
    if (found !== undefined) return found;
    const body = await compressed(answer.body, coding);
    const current = this.#entries?.peek(answer.userId);
    if (current?.version === answer.version) {
      this.#replace({ ...current, encoded: new Map([...current.encoded, [coding, body]]) });
    }
    return body;
  }

  #replace(answer: TreeAnswer): void {
    const current = this.#entries?.peek(answer.userId);
    if (current !== undefined && current.version > answer.version) return;
    this.#entries?.set(answer.userId, answer);
  }
}
