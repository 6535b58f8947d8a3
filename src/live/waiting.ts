/**
 * Reads that wait for a change of their user's: the change feed's (live-changes.ts, `?wait=`) and every route's
 * conditional read with `Prefer: wait` (readWaiting: the routes take it from here, a floor below the features).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';
import { preferredWait } from '../http/conditional.js';
import { SETTLE_READS, settlePause, type LiveNotifier, type Wakeups } from './wakeups.js';

/**
 * Waits, holding nothing but memory, for `userId`'s next change on any instance (the changes of their playlists, those
 * shared with them, their memberships), until `done` says what the caller waits for has come or `seconds` pass; reads
 * with `read` first (subscribed before it, so that a commit between the read and the wait still wakes it) and again
 * after each wake-up. Answers the last read. At shutdown, or to make room for the user's newer wait, it answers what
 * it has at once; a wait asked for while the service stops is 503.
 */
export async function waitForChange<T>(
  wakeups: Wakeups,
  notifier: LiveNotifier,
  userId: number,
  seconds: number,
  read: () => Promise<T>,
  done: (read: T) => boolean,
  connection?: ServerResponse,
): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  const ear = wakeups.subscribe(userId);
  // A client that leaves stops the wait at once, so it no longer holds one of its user's places.
  const gone = () => {
    ear.fire('closing');
  };
  connection?.once('close', gone);
  try {
    try {
      await notifier.watch();
    } catch {
      // Not hearing other instances for now: this instance's own writes and the deadline still answer it.
    }
    if (ear.closing) throw ApiError.unavailable('The service is stopping; ask again in a moment.', 1);
    let last = await read();
    // Reads again since the last wake-up (none yet: only a wake-up ends the wait early).
    let again: number | undefined;
    while (!done(last)) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const reason = await ear.next(again === undefined ? left : Math.min(left, settlePause(again)));
      if (reason === 'closing' || reason === 'displaced') break;
      if (reason === 'timeout' && again === undefined) break;
      last = await read();
      // Only where the feed may hold a committed change back (PostgreSQL), and at most SETTLE_READS times: a wake-up
      // whose change this request already has (one told twice) must not keep it reading.
      // A look again (`recheck`) reads once: no change is known to be held back.
      again =
        !notifier.holdsBack || done(last)
          ? undefined
          : reason === 'woken'
            ? 0
            : again === undefined
              ? undefined
              : again + 1;
      if (again !== undefined && again >= SETTLE_READS) again = undefined;
    }
    return last;
  } finally {
    connection?.off('close', gone);
    ear.done();
  }
}

/**
 * What a route's read that waits needs of live changes (live-changes.ts makes it, for every route): a conditional
 * read that waits (`Prefer: wait=S` with `If-None-Match`, RFC 7240) while its answer still matches `If-None-Match`,
 * up to `seconds`, for a change of the user's, and answers the read after it.
 */
export interface WaitingReads {
  untilChanged<T extends { readonly etag: string }>(
    userId: number,
    seconds: number,
    noneMatch: string,
    read: () => Promise<T>,
    connection?: ServerResponse,
  ): Promise<T>;
}

/**
 * A route's read, as `Prefer: wait` asks: with `If-None-Match` and a `wait` preference, it waits for the answer to
 * change (`untilChanged`) and says `Preference-Applied: wait=S`; otherwise it reads at once.
 */
export function readWaiting<T extends { readonly etag: string }>(
  request: FastifyRequest,
  reply: FastifyReply,
  live: WaitingReads,
  read: () => Promise<T>,
): Promise<T> {
  const wait = preferredWait(request.headers.prefer);
  const noneMatch = request.headers['if-none-match'];
  if (wait === undefined || noneMatch === undefined) return read();
  reply.header('preference-applied', `wait=${wait}`);
  return live.untilChanged(request.caller.userId, wait, noneMatch, read, reply.raw);
}
