import { sql } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import type { Db } from '../db/database.js';
import { LIVE_CHANNEL as CHANNEL } from '../db/live-channel.js';

/*
 * The wake-ups of requests that wait for a change: `Wakeups`, this instance's waiting requests by user, and
 * `liveNotifier`, which wakes them after each commit of any process (PostgreSQL `NOTIFY`, SQLite's commit counter).
 */

/**
 * After a wake-up whose change the feed does not list yet (on PostgreSQL a change is listed once every transaction
 * begun before it, anywhere on the server, has ended), the feed is read again after each of these pauses, the last
 * one repeated, until it lists it or the wait ends; another wake-up starts them again.
 */
export const SETTLE_MS = [50, 150, 400, 1000] as const;

/** Reads again after one wake-up, at most (about 7 s), before waiting quietly again. */
export const SETTLE_READS = 10;

/** The pause before the `n`th read again after a wake-up (from 0). */
export const settlePause = (n: number): number => SETTLE_MS[Math.min(n, SETTLE_MS.length - 1)]!;

/** `wakeAll` wakes this many requests, then pauses this long before the next ones. */
const WAKE_ALL_AT_ONCE = 200;
const WAKE_ALL_PAUSE_MS = 20;

/**
 * Why a wait ended: `woken`, a change of its user committed; `recheck`, a change may have been missed (read once
 * more, nothing known to be coming); `timeout`; `closing`; `displaced` by its user's newer wait.
 */
export type WakeReason = 'woken' | 'recheck' | 'timeout' | 'closing' | 'displaced';

/** Which of two reasons kept until asked wins: an end over a change, a change over a look again. */
const RANK: Record<WakeReason, number> = { recheck: 0, woken: 1, timeout: 1, closing: 2, displaced: 2 };

/**
 * One waiting request's ear: made before the request reads what it waits on, so that a commit between that read and
 * the wait still wakes it.
 */
export class Subscription {
  readonly userId: number;
  #pending: WakeReason | undefined;
  #resolve: ((reason: WakeReason) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #onDone: (subscription: Subscription) => void;

  constructor(userId: number, onDone: (subscription: Subscription) => void) {
    this.userId = userId;
    this.#onDone = onDone;
  }

  /** Whether the service closes: it will not be woken, and should not read any more. */
  get closing(): boolean {
    return this.#pending === 'closing';
  }

  /** Tells it why it should stop waiting; kept until `next` asks when it is not waiting now. */
  fire(reason: WakeReason): void {
    if (this.#resolve !== undefined) {
      const resolve = this.#resolve;
      this.#resolve = undefined;
      clearTimeout(this.#timer);
      resolve(reason);
      return;
    }
    // A closing or a displacement outlasts a wake-up, which a later closing replaces.
    if (this.#pending === undefined || RANK[reason] > RANK[this.#pending]) this.#pending = reason;
  }

  /** Resolves at the next wake-up (at once when one came since the last call), or after `ms`. */
  next(ms: number): Promise<WakeReason> {
    const pending = this.#pending;
    if (pending !== undefined) {
      if (pending === 'woken' || pending === 'recheck') this.#pending = undefined;
      return Promise.resolve(pending);
    }
    return new Promise((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(
        () => {
          this.#resolve = undefined;
          resolve('timeout');
        },
        Math.max(0, ms),
      );
    });
  }

  /** The request no longer waits: it stops hearing. */
  done(): void {
    clearTimeout(this.#timer);
    this.#resolve = undefined;
    this.#onDone(this);
  }
}

/**
 * The requests of this instance that wait for a user's change (live changes, docs/api.md): a request subscribes for
 * its user, reads, and waits for `wake` of that user when the read found nothing. At most `perUser` wait for one user
 * at once: the next one is taken and that user's oldest is told `displaced` (answered with what it has), so a client
 * that lost its requests never locks its user out. A waiting request holds nothing but this.
 */
export class Wakeups {
  readonly #perUser: number;
  readonly #byUser = new Map<number, Subscription[]>();
  #count = 0;
  #closing = false;

  constructor(perUser: number) {
    this.#perUser = perUser;
  }

  /** How many requests wait. */
  get count(): number {
    return this.#count;
  }

  subscribe(userId: number): Subscription {
    const subscription = new Subscription(userId, (done) => {
      this.#remove(done);
    });
    if (this.#closing) {
      subscription.fire('closing');
      return subscription;
    }
    const mine = this.#byUser.get(userId) ?? [];
    mine.push(subscription);
    this.#byUser.set(userId, mine);
    this.#count += 1;
    while (mine.length > this.#perUser) {
      const oldest = mine.shift()!;
      this.#count -= 1;
      oldest.fire('displaced');
    }
    return subscription;
  }

  /** Wakes every request that waits for one of these users. */
  wake(userIds: Iterable<number>): void {
    for (const userId of new Set(userIds)) {
      for (const subscription of this.#byUser.get(userId) ?? []) subscription.fire('woken');
    }
  }

  /**
   * Wakes every request (each reads again): after a wake-up may have been missed. A few hundred at a time, the event
   * loop served between two, so that ten thousand streams do not read the feed at once.
   */
  wakeAll(): void {
    const all = [...this.#byUser.values()].flat();
    const wake = (from: number) => {
      for (const subscription of all.slice(from, from + WAKE_ALL_AT_ONCE)) subscription.fire('recheck');
      if (from + WAKE_ALL_AT_ONCE >= all.length) return;
      setTimeout(() => {
        wake(from + WAKE_ALL_AT_ONCE);
      }, WAKE_ALL_PAUSE_MS).unref();
    };
    wake(0);
  }

  /** At shutdown: every request that waits is answered now, and none waits from now on. */
  close(): void {
    this.#closing = true;
    for (const mine of this.#byUser.values()) for (const subscription of mine) subscription.fire('closing');
  }

  #remove(subscription: Subscription): void {
    const mine = this.#byUser.get(subscription.userId);
    const at = mine?.indexOf(subscription) ?? -1;
    if (at < 0) return;
    mine!.splice(at, 1);
    this.#count -= 1;
    if (mine!.length === 0) this.#byUser.delete(subscription.userId);
  }
}

/** SQLite: how often another process's commits are looked for while a request waits. */
const SQLITE_LOOK_MS = 250;

/** PostgreSQL: the wait before listening again after the connection dropped, doubled up to the most. */
const RELISTEN_MS = 250;
const RELISTEN_MAX_MS = 5_000;

/** A NOTIFY's payload is below 8 000 bytes: past this, it wakes everyone instead of naming playlists. */
const PAYLOAD_MAX = 7_000;

export interface LiveNotifier {
  /**
   * After a commit that changed these playlists (or who may read them): wakes, on every instance, the requests
   * waiting for their owners, their members and `others` (a member just removed).
   */
  publish(playlistIds: readonly number[], others?: readonly number[]): Promise<void>;
  /** Before a request waits: from now on, other processes' commits wake it too. */
  watch(): Promise<void> | undefined;
  /**
   * Whether the change feed may list a committed change only a while after its wake-up (PostgreSQL: once older
   * transactions on the server end), so that a woken request that found nothing reads again shortly.
   */
  readonly holdsBack: boolean;
  close(): Promise<void>;
}

/** The users whose change feed lists a change of these playlists: their owners (deleted or not) and members. */
async function usersOf(db: Db, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const q = db.kysely;
  const rows = await q
    .selectFrom('playlists')
    .select('owner_id as user_id')
    .where('id', 'in', ids)
    .union(q.selectFrom('deleted_playlists').select('owner_id as user_id').where('id', 'in', ids))
    .union(q.selectFrom('playlist_members').select('user_id').where('playlist_id', 'in', ids))
    .execute();
  return rows.map((row) => row.user_id);
}

/**
 * The wake-ups of requests waiting for changes (`Wakeups`, above), from every process that writes the database, as a signal
 * only: a woken request reads the change feed, which decides what it answers.
 *
 * - `publish`, after a commit: on SQLite, this instance's requests waiting for the users of those playlists wake at
 *   once; on PostgreSQL, a NOTIFY naming the playlists (one statement, no read) reaches every instance that LISTENs,
 *   this one too, on a connection of its own opened when a first request waits there. Each time it is (re)opened,
 *   every waiting request is woken to read again, so a wake-up sent while it was not listening is never lost.
 *   Only an instance with requests waiting reads whose those playlists are.
 * - SQLite: while a request waits, the database's commit counter is looked at every SQLITE_LOOK_MS; when another
 *   connection committed, the playlists its log names (`playlist_changes`) wake their users, the users whose tree of
 *   folders changed (`library_changes`) wake, and a new catalog version (another process's import) wakes everyone.
 */
export function liveNotifier(
  db: Db,
  config: DatabaseConfig,
  wakeups: Wakeups,
  report: (error: unknown, message: string) => void,
): LiveNotifier {
  let closed = false;

  // PostgreSQL: the listening connection.
  let client: pg.Client | undefined;
  let listening: Promise<void> | undefined;
  let relistenMs = RELISTEN_MS;
  let relisten: NodeJS.Timeout | undefined;

  function listen(): Promise<void> {
    listening ??= (async () => {
      const connection = new pg.Client({ connectionString: config.url });
      client = connection;
      const dropped = (error?: unknown) => {
        if (client !== connection) return;
        client = undefined;
        listening = undefined;
        connection.removeAllListeners();
        connection.on('error', () => {});
        void connection.end().catch(() => undefined);
        if (closed) return;
        if (error !== undefined) report(error, 'The connection that hears other instances’ changes dropped.');
        relisten = setTimeout(() => {
          void listen().catch(() => undefined);
        }, relistenMs);
        relisten.unref();
        relistenMs = Math.min(relistenMs * 2, RELISTEN_MAX_MS);
      };
      connection.on('error', dropped);
      connection.on('end', () => {
        dropped();
      });
      connection.on('notification', (message) => {
        if (message.channel !== CHANNEL || message.payload === undefined) return;
        let sent: { p?: number[]; o?: number[] };
        try {
          sent = JSON.parse(message.payload) as typeof sent;
        } catch {
          sent = {};
        }
        if (sent.p === undefined) wakeups.wakeAll();
        else void wakeFor(sent.p, sent.o ?? []);
      });
      try {
        await connection.connect();
        await connection.query(`LISTEN ${CHANNEL}`);
      } catch (error) {
        dropped(error);
        throw error;
      }
      relistenMs = RELISTEN_MS;
      // What was sent while not listening is read again by every request that waits.
      wakeups.wakeAll();
    })();
    return listening;
  }

  // PostgreSQL: what the next NOTIFY carries.
  let outgoing: { playlists: Set<number>; others: Set<number>; sent: Promise<void> | undefined } = {
    playlists: new Set(),
    others: new Set(),
    sent: undefined,
  };

  // SQLite: the look at other connections' commits.
  let look: NodeJS.Timeout | undefined;
  let seen: string | undefined;
  let lastChange: number | undefined;
  let lastCatalog: number | undefined;
  let lastLibrary: number | undefined;
  let looking = false;

  async function lookAtCommits(): Promise<void> {
    if (looking) return;
    looking = true;
    try {
      const now = db.dataVersion!();
      if (now === seen) return;
      seen = now;
      const q = db.kysely;
      const catalog = (await q.selectFrom('catalog_version').select('version').executeTakeFirstOrThrow()).version;
      if (lastChange === undefined) {
        const last = await q
          .selectFrom('playlist_changes')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .executeTakeFirst();
        lastChange = last?.seq ?? 0;
        lastCatalog = catalog;
        const library = await q
          .selectFrom('library_changes')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .executeTakeFirst();
        lastLibrary = Number(library?.seq ?? 0);
        // Those waiting read again: a commit just before this first look is in no log this process read.
        wakeups.wakeAll();
        return;
      }
      if (catalog !== lastCatalog) {
        // A catalog import (the command line's): every answer with those songs may read differently now.
        lastCatalog = catalog;
        wakeups.wakeAll();
      }
      // Trees of folders written since (the log keeps each user's latest change): their users read again.
      const trees = await q
        .selectFrom('library_changes')
        .select(['user_id', 'seq'])
        .where('seq', '>', lastLibrary ?? 0)
        .execute();
      if (trees.length > 0) {
        lastLibrary = Math.max(...trees.map((tree) => Number(tree.seq)));
        wakeups.wake(trees.map((tree) => tree.user_id));
      }
      const changes = await q
        .selectFrom('playlist_changes')
        .select(['seq', 'playlist_id'])
        .where('seq', '>', lastChange)
        .orderBy('seq')
        .limit(1000)
        .execute();
      if (changes.length === 0) return;
      lastChange = changes.at(-1)!.seq;
      if (changes.length === 1000) wakeups.wakeAll();
      else wakeups.wake(await usersOf(db, [...new Set(changes.map((change) => change.playlist_id))]));
    } catch (error) {
      report(error, 'Looking for other processes’ changes failed.');
    } finally {
      looking = false;
      if (wakeups.count === 0 && look !== undefined) {
        clearInterval(look);
        look = undefined;
      }
    }
  }

  /** Wakes this instance's requests waiting for the users of these playlists, and `others`. */
  async function wakeFor(playlistIds: readonly number[], others: readonly number[]): Promise<void> {
    if (wakeups.count === 0) return;
    try {
      wakeups.wake([...(await usersOf(db, playlistIds)), ...others]);
    } catch (error) {
      report(error, 'Finding whom a change wakes failed.');
      wakeups.wakeAll();
    }
  }

  return {
    holdsBack: db.dialect === 'postgres',

    async publish(playlistIds, others = []) {
      if (closed) return;
      if (db.dialect !== 'postgres') return wakeFor(playlistIds, others);
      // The commits of one turn of the event loop go in one NOTIFY.
      for (const id of playlistIds) outgoing.playlists.add(id);
      for (const id of others) outgoing.others.add(id);
      outgoing.sent ??= new Promise<void>((resolve, reject) => {
        setImmediate(() => {
          const { playlists, others: users } = outgoing;
          outgoing = { playlists: new Set(), others: new Set(), sent: undefined };
          const payload = JSON.stringify({ p: [...playlists], o: [...users] });
          sql`SELECT pg_notify(${CHANNEL}, ${payload.length <= PAYLOAD_MAX ? payload : '{}'})`
            .execute(db.kysely)
            .then(() => {
              resolve();
            }, reject);
        });
      });
      return outgoing.sent;
    },

    async close() {
      closed = true;
      clearTimeout(relisten);
      clearInterval(look);
      const connection = client;
      client = undefined;
      if (connection !== undefined) await connection.end().catch(() => undefined);
    },

    watch() {
      if (closed) return undefined;
      if (db.dialect === 'postgres') return listen();
      if (look === undefined) {
        void lookAtCommits();
        look = setInterval(() => {
          void lookAtCommits();
        }, SQLITE_LOOK_MS);
        look.unref();
      }
      return undefined;
    },
  };
}
