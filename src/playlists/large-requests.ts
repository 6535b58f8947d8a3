import { boundedWithShares } from '../concurrency/bounded.js';
import { ApiError } from '../http/errors.js';

/**
 * A playlist write that touches more songs than this (a create's songs; an edit's, the playlist's and those sent)
 * takes milliseconds of the event loop to check, index and write, so such writes wait for a place among the large
 * requests.
 */
export const LONG_PLAYLIST = 100;

/**
 * A bound on large requests: `limit` run at once and 256 more wait up to ten seconds, then 503. One user holds one
 * place among everyone's; the rest of their burst (up to 32) waits apart, then 429 with `yours`, so that one user's
 * burst makes that user's requests slow, not everyone's.
 */
export function largeRequests(limit: number, yours: string) {
  return boundedWithShares(
    {
      limit,
      queue: 256,
      waitMs: 10_000,
      refuse: () => ApiError.unavailable('The service is busy with other large requests; try again shortly.', 1),
    },
    { limit: 1, queue: 32, refuse: () => ApiError.tooManyRequests(1, yours) },
  );
}

/** Runs a large request of the user's (a key) within its bound. */
export type LargeRequests = ReturnType<typeof largeRequests>;
