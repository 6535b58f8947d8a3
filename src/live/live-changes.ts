import type { ChangeFeed, ChangesPage, FeedTypes } from '../history/changes.service.js';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { noneMatchTag } from '../http/conditional.js';
import { streamChanges, type StreamSettings } from './stream.js';
import { waitForChange } from './waiting.js';
import type { LiveNotifier, Wakeups } from './wakeups.js';

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
