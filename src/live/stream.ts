import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply } from 'fastify';
import type { ChangeFeed, ChangesPage, FeedTypes } from '../history/changes.service.js';
import { SETTLE_READS, settlePause, type LiveNotifier, type Wakeups } from './wakeups.js';

/** A comment line this often keeps a quiet stream open through proxies and tells a client it is alive. */
const PING_MS = 15_000;

/** Changes in one event at most (the feed's page). */
const EVENT_CHANGES = 100;

/** How long a write to a client that reads nothing may wait before the stream is ended. */
const DRAIN_MS = 30_000;

export interface StreamSettings {
  /** A stream ends after this long with a last event, so that clients reconnect (`MIXTAPE_STREAM_MAX_SECONDS`). */
  readonly maxSeconds: number;
}

/** One event of the stream: its `id` is the feed's `next`, which `Last-Event-ID` resumes from. */
function event(name: string, page: ChangesPage): string {
  return `event: ${name}\nid: ${page.next}\ndata: ${JSON.stringify(page)}\n\n`;
}

/**
 * `GET /v3/changes/stream` (docs/api.md): the caller's change feed as server-sent events, each written as it is
 * known. The stream reads the feed first (a bad token is an error answer, as the feed's), then holds the connection:
 * an event `changes` for each page the feed has after the last one's token, a `: ping` comment every PING_MS, and
 * after `maxSeconds` a last event `end` carrying the token to resume from. Between two reads it waits, holding no
 * database connection, for a wake-up of its user (wakeups.ts); at shutdown, when its user opens more waits than
 * allowed, or when the client leaves, it ends. Nothing is lost or repeated across a reconnection with
 * `Last-Event-ID`, since each event's id is the token after exactly what it carried.
 */
export async function streamChanges(
  reply: FastifyReply,
  deps: {
    readonly feed: ChangeFeed;
    readonly wakeups: Wakeups;
    readonly notifier: LiveNotifier;
    readonly settings: StreamSettings;
  },
  userId: number,
  since: string | undefined,
  types: FeedTypes,
): Promise<void> {
  const { feed, wakeups, notifier, settings } = deps;
  const read = (after: string | undefined) => feed.changes(userId, after, EVENT_CHANGES, types);
  const ear = wakeups.subscribe(userId);
  let page: ChangesPage;
  try {
    try {
      await notifier.watch();
    } catch {
      // Not hearing other instances for now: this instance's own writes and the pings still go out.
    }
    page = await read(since);
  } catch (error) {
    ear.done();
    throw error;
  }
  // From here the connection is this function's: no hook compresses or buffers what it writes.
  reply.hijack();
  const res = reply.raw;
  // Whether the client is still there (set by the socket's close).
  const client = { open: true };
  res.on('close', () => {
    client.open = false;
    ear.fire('closing');
  });
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  const write = async (text: string) => {
    if (!client.open) return;
    if (!res.write(text)) {
      const drained = await Promise.race([once(res, 'drain').then(() => true), sleep(DRAIN_MS).then(() => false)]);
      if (!drained) res.destroy();
    }
  };
  const deadline = Date.now() + settings.maxSeconds * 1000;
  // Reads again since the last wake-up whose change was not listed yet (see wakeups.ts `SETTLE_MS`).
  let again: number | undefined;
  // Whether a wake-up's change was still not listed after its reads again (PostgreSQL).
  let held = false;
  // The token the end event carries: the last event's (a read that lists nothing, after a wake-up for a change of
  // another kind, moves no position the client needs, and the end then says the same as the event before it).
  let resume = page.next;
  try {
    if (page.changes.length > 0 || since === undefined) await write(event('changes', page));
    else await write(': ready\n\n');
    while (client.open) {
      if (page.more) {
        page = await read(page.next);
        resume = page.next;
        await write(event('changes', page));
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      // Waiting for a wake-up (a ping when quiet), or reading again after one whose change was not listed yet.
      const settling = again !== undefined;
      const pinging = !settling && left > PING_MS;
      const reason = await ear.next(settling ? Math.min(left, settlePause(again!)) : pinging ? PING_MS : left);
      if (reason === 'closing' || reason === 'displaced') break;
      if (reason === 'timeout' && !settling) {
        if (pinging) await write(': ping\n\n');
        // A change still held back after its reads again is looked for at each ping.
        if (!held) continue;
      }
      const next = await read(page.next);
      page = next;
      if (next.changes.length > 0) {
        resume = next.next;
        await write(event('changes', next));
      }
      // As waiting.ts `waitForChange`: only where the feed may hold a change back, and at most SETTLE_READS times.
      const woken = reason === 'woken';
      again =
        !notifier.holdsBack || next.changes.length > 0
          ? undefined
          : woken
            ? 0
            : again === undefined
              ? undefined
              : again + 1;
      held = next.changes.length === 0 && (held || (again !== undefined && again >= SETTLE_READS));
      if (again !== undefined && again >= SETTLE_READS) again = undefined;
    }
  } catch (error) {
    // A read that failed ends the stream as its time does; the client reconnects from the last event it got.
    reply.log.warn({ err: error }, 'reading the change feed for a stream failed; the stream ends');
  }
  try {
    // A last event with the token to resume from; the client reconnects with it as Last-Event-ID.
    await write(`event: end\nid: ${resume}\ndata: {}\n\n`);
  } catch {
    // The client is gone.
  } finally {
    ear.done();
    res.end();
  }
}
