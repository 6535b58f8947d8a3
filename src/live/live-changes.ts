import { setTimeout as sleep } from 'node:timers/promises';
import type { ChangeFeed, ChangesPage } from '../history/changes.service.js';
import { ApiError } from '../http/errors.js';
import type { LiveNotifier } from './notifier.js';
import type { Wakeups } from './wakeups.js';

/**
 * After a wake-up whose change the feed does not list yet (on PostgreSQL a change is listed once every transaction
 * begun before it has ended), the feed is read again after these pauses before waiting again.
 */
const SETTLE_MS = [50, 150, 400] as const;

/**
 * The change feed that waits (`GET /v3/changes?wait=S`, docs/api.md): when the caller's feed has nothing after their
 * token, the request waits, holding no database connection, until a change it would list commits on any instance
 * (then it answers at once) or `S` seconds pass (then an empty page and a `next` to wait from). The feed decides what
 * is answered; a wake-up only says when to read it again.
 */
export function liveChanges(feed: ChangeFeed, wakeups: Wakeups, notifier: LiveNotifier) {
  return {
    async changes(
      userId: number,
      since: string | undefined,
      limit: number,
      waitSeconds: number | undefined,
    ): Promise<ChangesPage> {
      if (waitSeconds === undefined) return feed.changes(userId, since, limit);
      const deadline = Date.now() + waitSeconds * 1000;
      // Heard before the read, so that a commit between the read and the wait still wakes it.
      const ear = wakeups.subscribe(userId);
      try {
        try {
          await notifier.watch();
        } catch {
          // Not hearing other instances for now: this instance's own writes and the deadline still answer it.
        }
        if (ear.closing) throw ApiError.unavailable('The service is stopping; ask again in a moment.', 1);
        let page = await feed.changes(userId, since, limit);
        while (page.changes.length === 0) {
          const left = deadline - Date.now();
          if (left <= 0) break;
          // Past its time, at shutdown, or to make room for its user's newer wait: answered with what it has.
          if ((await ear.next(left)) !== 'woken') break;
          page = await feed.changes(userId, since, limit);
          for (const pause of SETTLE_MS) {
            if (page.changes.length > 0 || Date.now() + pause >= deadline) break;
            await sleep(pause);
            if (ear.closing) break;
            page = await feed.changes(userId, since, limit);
          }
        }
        return page;
      } finally {
        ear.done();
      }
    },
  };
}

export type LiveChanges = ReturnType<typeof liveChanges>;
