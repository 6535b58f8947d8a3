import { timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/database.js';
import { HmacKey } from '../credentials/hmac.js';
import { ApiError } from '../http/errors.js';
import {
  feedHorizon,
  feedKey,
  memberEventsAfter,
  mergeSorted,
  playlistsAfter,
  revisionsAfter,
  type FeedChange,
  type FeedPosition,
  type FeedPositions,
  type FeedRow,
} from './changes.repository.js';

/** A token is refused this long before its revisions may be pruned: a write's time is taken before it commits. */
const PRUNE_MARGIN_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface ChangeEntry {
  readonly id: number;
  readonly version?: number;
  readonly change: FeedChange;
  readonly at: string;
}

export interface ChangesPage {
  readonly changes: ChangeEntry[];
  readonly next: string;
  readonly more: boolean;
}

/**
 * What a token says: whose feed, the position delivered up to in each of its logs, the last playlist id listed while
 * the first sync lists every playlist (undefined once it is done), and when it was issued (Unix ms).
 */
interface Token {
  readonly userId: number;
  readonly positions: FeedPositions;
  readonly listedUpTo: number | undefined;
  readonly issuedAt: number;
}

/** `user.xid.seq.memberXid.memberSeq.listedUpTo.issuedAt`. */
const TOKEN_FIELDS = /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
/** Before member events (API 1.4.0): `user.xid.seq.listedUpTo.issuedAt`; its member position is the start. */
const OLD_TOKEN_FIELDS = /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
const START: FeedPosition = { xid: 0, seq: 0 };
const MALFORMED = 'This token is not one the service gave: sync again from the start (call without since).';

/**
 * The change feed (section 11). Tokens are `base64url(fields).base64url(HMAC)`, signed with a key every instance
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

  async function sign(token: Token): Promise<string> {
    const { revisions, members } = token.positions;
    const fields = [
      token.userId,
      revisions.xid,
      revisions.seq,
      members.xid,
      members.seq,
      token.listedUpTo ?? '-',
      token.issuedAt,
    ].join('.');
    const mac = (await signer()).digest(fields);
    return `${Buffer.from(fields).toString('base64url')}.${Buffer.from(mac, 'base64').toString('base64url')}`;
  }

  async function verify(text: string, userId: number): Promise<Token> {
    const [body, mac, extra] = text.split('.');
    if (body === undefined || mac === undefined || extra !== undefined) throw ApiError.badRequest(MALFORMED);
    const fields = Buffer.from(body, 'base64url').toString('latin1');
    const expected = Buffer.from((await signer()).digest(fields), 'base64');
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw ApiError.badRequest(MALFORMED);
    const token = parseFields(fields);
    if (token === undefined) throw ApiError.badRequest(MALFORMED);
    // Another user's token is as good as a forged one.
    if (token.userId !== userId) throw ApiError.badRequest(MALFORMED);
    if (token.issuedAt < Date.now() - historyDays * DAY_MS + PRUNE_MARGIN_MS) {
      throw ApiError.gone(
        `This token is older than the ${historyDays} days changes are kept: sync again from the start (call without since).`,
      );
    }
    return token;
  }

  const entry = (row: { id: number; version: number; change: FeedChange; at: number }): ChangeEntry =>
    row.change === 'delete' || row.change === 'unshared'
      ? { id: row.id, change: row.change, at: new Date(row.at).toISOString() }
      : { id: row.id, version: row.version, change: row.change, at: new Date(row.at).toISOString() };

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
    /** The caller's changes after `since` (every playlist they have, without it), at most `limit`. */
    async changes(userId: number, since: string | undefined, limit: number): Promise<ChangesPage> {
      const now = Date.now();
      let token: Token;
      if (since === undefined) {
        // The horizon first: the list read after it shows at least every change before it.
        token = { userId, positions: await feedHorizon(q, db.dialect), listedUpTo: 0, issuedAt: now };
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
      return { changes: latestOnly(shown).map(entry), next, more };
    },
  };
}

/** The fields of a token, in the format of today or of API 1.4.0; undefined when they are neither. */
function parseFields(fields: string): Token | undefined {
  const match = TOKEN_FIELDS.exec(fields);
  if (match !== null) {
    return {
      userId: Number(match[1]),
      positions: {
        revisions: { xid: Number(match[2]), seq: Number(match[3]) },
        members: { xid: Number(match[4]), seq: Number(match[5]) },
      },
      listedUpTo: match[6] === '-' ? undefined : Number(match[6]),
      issuedAt: Number(match[7]),
    };
  }
  const old = OLD_TOKEN_FIELDS.exec(fields);
  if (old === null) return undefined;
  return {
    userId: Number(old[1]),
    positions: { revisions: { xid: Number(old[2]), seq: Number(old[3]) }, members: START },
    listedUpTo: old[4] === '-' ? undefined : Number(old[4]),
    issuedAt: Number(old[5]),
  };
}

export type ChangeFeed = ReturnType<typeof changeFeed>;
