import { Type } from '@sinclair/typebox';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { boundedWithShares } from '../concurrency/bounded.js';
import type { SearchSettings } from '../config.js';
import { ApiError } from '../http/errors.js';
import { normalisedLength, searchWords } from '../domain/search-text.js';

/**
 * What every search by words shares, whatever it reads (an owner's playlist documents, the song catalog): rows are
 * read in key order a slice at a time, each slice sized to take about SLICE_TARGET_MS, with the event loop let go
 * whenever the search has held it that long; a search stops after `timeoutMs` (503); one runs at a time per user and
 * `concurrency` at once in all.
 */

/**
 * The first slice reads an ordinary library of a hundred playlists at once; at worst it holds the event loop a few
 * milliseconds: 128 names that normalise to 1 200 characters of one repeated sequence against a 200-character word
 * take 2.3 ms (18 µs each with instr()), 128 playlists of 1 000 distinct songs (48 KB documents) 8 ms (62 µs each).
 */
export const SLICE_FIRST = 128;
const SLICE_MAX = 4096;
const SLICE_TARGET_MS = 2;

/** The next slice's size from how long this one took: toward the target, at most sixteen times larger or half. */
export function nextSliceSize(size: number, elapsedMs: number): number {
  const scaled = Math.floor((size * SLICE_TARGET_MS) / Math.max(elapsedMs, 0.01));
  return Math.max(1, Math.min(SLICE_MAX, size * 16, Math.max(Math.floor(size / 2), scaled)));
}

/** One slice: rows after a key, in key order, each with whether it matched. */
export type SliceReader = (after: number, size: number) => Promise<readonly { id: number; hit: number | boolean }[]>;

/**
 * The keys of every matching row, in key order, read a slice at a time with the event loop free in between; after
 * `timeoutMs` the search stops with 503, its message naming `what` it was reading.
 */
export async function matchInSlices(read: SliceReader, timeoutMs: number, what: string): Promise<number[]> {
  const deadline = performance.now() + timeoutMs;
  const ids: number[] = [];
  let after = 0;
  let size = SLICE_FIRST;
  let held = performance.now();
  for (;;) {
    const started = performance.now();
    const rows = await read(after, size);
    const finished = performance.now();
    for (const row of rows) if (Number(row.hit) === 1) ids.push(row.id);
    const last = rows[rows.length - 1];
    if (last === undefined || rows.length < size) return ids;
    if (finished > deadline) {
      throw ApiError.unavailable(
        `This search read ${what} for longer than ${timeoutMs / 1000} s and was stopped; try again shortly.`,
        1,
      );
    }
    after = last.id;
    size = nextSliceSize(size, finished - started);
    if (finished - held >= SLICE_TARGET_MS) {
      await nextTurn();
      held = performance.now();
    }
  }
}

/** Runs searches one at a time per user and `concurrency` at once in all; more answer 429 or 503. */
export function searchGate(settings: SearchSettings) {
  const busy = () => ApiError.unavailable('The service is busy with other searches; try again shortly.', 1);
  const oneAtATime = () =>
    ApiError.tooManyRequests(1, 'Your previous searches are still running; wait for their answers first.');
  return boundedWithShares(
    { limit: settings.concurrency, queue: 256, waitMs: settings.timeoutMs, refuse: busy },
    { limit: 1, queue: 1, refuse: oneAtATime },
  );
}

export type SearchGate = ReturnType<typeof searchGate>;

/**
 * The `search` parameter's length rule, both halves of it here: as sent, at most `max` characters (in the query
 * schema, so that no more is ever normalised), and once normalised at most `max` too (see `searchTerms`), since
 * characters such as ㌖ or ﬃ stand for several letters.
 */
export function searchParameter(max: number, description: string) {
  return Type.Optional(Type.String({ maxLength: max, description }));
}

/** The distinct normalised words of a `search` (none: no search); 400 when longer than `max` once normalised. */
export function searchTerms(search: string | undefined, max: number): string[] {
  const words = searchWords(search ?? '');
  if (words.length > 0) checkSearchLength(words, max);
  return words;
}

function checkSearchLength(words: readonly string[], max: number): void {
  const length = normalisedLength(words);
  if (length > max) {
    throw ApiError.badRequest(
      `search is ${length} characters long once normalised (characters such as ㌖ or ﬃ stand for several ` +
        `letters); it may be at most ${max}.`,
    );
  }
}
