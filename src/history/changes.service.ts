import type { Db } from '../db/database.js';
import { HmacKey } from '../credentials/hmac.js';
import { ApiError } from '../http/errors.js';
import { rfc3339 } from '../http/times.js';
import {
  feedHorizon,
  feedKey,
  memberEventsAfter,
  mergeSorted,
  playlistsAfter,
  revisionsAfter,
  type FeedPosition,
  userNames,
  type FeedRow,
} from './changes.repository.js';
import { openToken, signToken, type FeedToken } from './feed-token.js';
import type { FeedChange } from './change-kinds.js';

/** A token is refused this long before its revisions may be pruned: a write's time is taken before it commits. */
const PRUNE_MARGIN_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface ChangeEntry {
  readonly id: number;
  readonly version?: number;
  readonly change: FeedChange;
  readonly at: string;
  /** A change of a playlist (not of a membership, nor the list of what the caller has): who made it (1.8.0). */
  readonly by?: string;
}

export interface ChangesPage {
  readonly changes: ChangeEntry[];
  readonly next: string;
  readonly more: boolean;
}

const MALFORMED = 'This token is not one the service gave: sync again from the start (call without since).';

/**
 * The change feed (README.md, History). Tokens are `base64url(fields).base64url(HMAC)`, signed with a key every instance
 * reads from the database, so any instance takes any instance's token and none can be forged or altered.
 */
export function changeFeed(db: Db, historyDays: number) {
  const q = db.kysely;
  let key: Promise<HmacKey> | undefined;
  const signer = () => {
    key ??= feedKey(q).then((k) => new HmacKey(Buffer.from(k, 'base64')));
    key.catch(() => {
      key = undefined;
    });
    return key;
  };

  const sign = async (token: FeedToken): Promise<string> => signToken(await signer(), token);

  async function verify(text: string, userId: number): Promise<FeedToken> {
    const token = openToken(await signer(), text);
    // Another user's token is as good as a forged one.
    if (token?.userId !== userId) throw ApiError.badRequest(MALFORMED);
    if (token.issuedAt < Date.now() - historyDays * DAY_MS + PRUNE_MARGIN_MS) {
      throw ApiError.gone(
        `This token is older than the ${historyDays} days changes are kept: sync again from the start (call without since).`,
      );
    }
    return token;
  }

  const entry = (row: { id: number; version: number; change: FeedChange; at: number }): ChangeEntry =>
    row.change === 'delete' || row.change === 'unshared'
      ? { id: row.id, change: row.change, at: rfc3339(row.at) }
      : { id: row.id, version: row.version, change: row.change, at: rfc3339(row.at) };

  /**
   * Several revisions of one playlist that a page read come as one entry, its latest, where that latest stands. Only
   * what this page read: the token still moves past every row of it, so neither the horizon nor paging changes.
   */
  const latestOnly = <T extends { id: number }>(rows: readonly T[]): T[] => {
    const last = new Map(rows.map((row, i) => [row.id, i]));
    return rows.filter((row, i) => last.get(row.id) === i);
  };

  const later = (a: FeedPosition, b: FeedPosition) => (a.xid > b.xid || (a.xid === b.xid && a.seq > b.seq) ? a : b);

  return {
    /**
     * The caller's changes after `since` (every playlist they have, without it; from the current point for `now`), at
     * most `limit`.
     */
    async changes(userId: number, since: string | undefined, limit: number): Promise<ChangesPage> {
      const now = Date.now();
      let token: FeedToken;
      if (since === undefined) {
        // The horizon first: the list read after it shows at least every change before it.
        token = { userId, positions: await feedHorizon(q, db.dialect), listedUpTo: 0, issuedAt: now };
      } else if (since === 'now') {
        // From the horizon, without the list of what the caller has.
        token = { userId, positions: await feedHorizon(q, db.dialect), listedUpTo: undefined, issuedAt: now };
      } else {
        token = await verify(since, userId);
      }
      if (token.listedUpTo !== undefined) {
        const rows = await playlistsAfter(q, userId, token.listedUpTo, limit + 1);
        const more = rows.length > limit;
        const shown = rows.slice(0, limit);
        const listedUpTo = more ? shown.at(-1)!.id : undefined;
        const next = await sign({ ...token, listedUpTo, issuedAt: now });
        return { changes: shown.map(entry), next, more };
      }
      const horizon = db.dialect === 'postgres' ? (await feedHorizon(q, db.dialect)).revisions.xid : undefined;
      const { revisions, members } = token.positions;
      const revisionRows = await revisionsAfter(q, db.dialect, userId, revisions, horizon, limit + 1);
      const memberRows = await memberEventsAfter(q, userId, members, horizon, limit + 1);
      // One order for both logs: by transaction, then by time (their sequences number each log apart).
      const tagged = (rows: FeedRow[], log: 'revisions' | 'members') => rows.map((row) => ({ ...row, log }));
      const shown = mergeSorted(
        tagged(revisionRows, 'revisions'),
        tagged(memberRows, 'members'),
        (a, b) => a.position.xid - b.position.xid || a.at - b.at,
        limit,
      );
      const more = revisionRows.length + memberRows.length > limit;
      /** Each log moves past what this page delivered of it; one it delivered all of, up to the horizon. */
      const moved = (log: 'revisions' | 'members', read: readonly FeedRow[], from: FeedPosition) => {
        const delivered = shown.filter((row) => row.log === log);
        const position = delivered.at(-1)?.position ?? from;
        // Everything of this log below the horizon was delivered: the next read starts there.
        const exhausted = delivered.length === read.length && read.length <= limit;
        return exhausted && horizon !== undefined ? later({ xid: horizon, seq: 0 }, position) : position;
      };
      const positions = {
        revisions: moved('revisions', revisionRows, revisions),
        members: moved('members', memberRows, members),
      };
      const next = await sign({ userId, positions, listedUpTo: undefined, issuedAt: now });
      const latest = latestOnly(shown);
      const names = await userNames(q, [
        ...new Set(latest.flatMap((row) => (row.byId === undefined ? [] : [row.byId]))),
      ]);
      const changes = latest.map((row) => {
        const by = row.byId === undefined ? undefined : names.get(row.byId);
        return by === undefined ? entry(row) : { ...entry(row), by };
      });
      return { changes, next, more };
    },
  };
}

export type ChangeFeed = ReturnType<typeof changeFeed>;
