import type { ChangeFeed, ChangesPage, FeedTypes } from '../history/changes.service.js';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { noneMatchTag } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import { preferredWait } from '../http/prefer.js';
import type { LiveNotifier } from './notifier.js';
import { streamChanges, type StreamSettings } from './stream.js';
import { SETTLE_READS, settlePause, type Wakeups } from './wakeups.js';

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
 * The change feed that waits (`GET /v3/changes?wait=S`, docs/api.md): when the caller's feed has nothing after their
 * token, the request waits, holding no database connection, until a change it would list commits on any instance
 * (then it answers at once) or `S` seconds pass (then an empty page and a `next` to wait from). The feed decides what
 * is answered; a wake-up only says when to read it again.
 */
export function liveChanges(feed: ChangeFeed, wakeups: Wakeups, notifier: LiveNotifier, settings: StreamSettings) {
  return {
    /** The caller's change feed as server-sent events, from `since` (stream.ts). */
    stream(reply: FastifyReply, userId: number, since: string | undefined, types: FeedTypes): Promise<void> {
      return streamChanges(reply, { feed, wakeups, notifier, settings }, userId, since, types);
    },

    async changes(
      userId: number,
      since: string | undefined,
      limit: number,
      types: FeedTypes,
      waitSeconds: number | undefined,
      connection?: ServerResponse,
    ): Promise<ChangesPage> {
      const read = () => feed.changes(userId, since, limit, types);
      if (waitSeconds === undefined) return read();
      const listed = (page: ChangesPage) => page.changes.length > 0;
      return waitForChange(wakeups, notifier, userId, waitSeconds, read, listed, connection);
    },

    /**
     * A conditional read that waits (`Prefer: wait=S` with `If-None-Match`, RFC 7240): while its answer still matches
     * `If-None-Match`, waits up to `seconds` for a change of the user's, and answers the read after it.
     */
    untilChanged<T extends { readonly etag: string }>(
      userId: number,
      seconds: number,
      noneMatch: string,
      read: () => Promise<T>,
      connection?: ServerResponse,
    ): Promise<T> {
      const changed = (answer: T) => noneMatchTag(noneMatch, answer.etag) === undefined;
      return waitForChange(wakeups, notifier, userId, seconds, read, changed, connection);
    },
  };
}

/**
 * A route's read, as `Prefer: wait` asks: with `If-None-Match` and a `wait` preference, it waits for the answer to
 * change (`untilChanged`) and says `Preference-Applied: wait=S`; otherwise it reads at once.
 */
export function readWaiting<T extends { readonly etag: string }>(
  request: FastifyRequest,
  reply: FastifyReply,
  live: LiveChanges,
  read: () => Promise<T>,
): Promise<T> {
  const wait = preferredWait(request.headers.prefer);
  const noneMatch = request.headers['if-none-match'];
  if (wait === undefined || noneMatch === undefined) return read();
  reply.header('preference-applied', `wait=${wait}`);
  return live.untilChanged(request.caller.userId, wait, noneMatch, read, reply.raw);
}

export type LiveChanges = ReturnType<typeof liveChanges>;
