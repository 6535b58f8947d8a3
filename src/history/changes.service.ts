import { timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/database.js';
import { HmacKey } from '../credentials/hmac.js';
import { ApiError } from '../http/errors.js';
import { feedHorizon, feedKey, playlistsAfter, revisionsAfter, type FeedPosition } from './changes.repository.js';
import type { ChangeKind } from './revision.repository.js';

/** A token is refused this long before its revisions may be pruned: a write's time is taken before it commits. */
const PRUNE_MARGIN_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface ChangeEntry {
  readonly id: number;
  readonly version?: number;
  readonly change: ChangeKind;
  readonly at: string;
}

export interface ChangesPage {
  readonly changes: ChangeEntry[];
  readonly next: string;
  readonly more: boolean;
}

/**
 * What a token says: whose feed, the feed position delivered up to, the last playlist id listed while the first
 * sync lists every playlist (undefined once it is done), and when it was issued (Unix ms).
 */
interface Token {
  readonly userId: number;
  readonly position: FeedPosition;
  readonly listedUpTo: number | undefined;
  readonly issuedAt: number;
}

const TOKEN_FIELDS = /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
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
    const fields = [token.userId, token.position.xid, token.position.seq, token.listedUpTo ?? '-', token.issuedAt].join(
      '.',
    );
    const mac = (await signer()).digest(fields);
    return `${Buffer.from(fields).toString('base64url')}.${Buffer.from(mac, 'base64').toString('base64url')}`;
  }

  async function verify(text: string, userId: number): Promise<Token> {
    const [body, mac, extra] = text.split('.');
    if (body === undefined || mac === undefined || extra !== undefined) throw ApiError.badRequest(MALFORMED);
    const fields = Buffer.from(body, 'base64url').toString('latin1');
    const expected = Buffer.from((await signer()).digest(fields), 'base64');
    const given = Buffer.from(mac, 'base64url');
    const match = TOKEN_FIELDS.exec(fields);
    if (given.length !== expected.length || !timingSafeEqual(given, expected) || match === null) {
      throw ApiError.badRequest(MALFORMED);
    }
    const token: Token = {
      userId: Number(match[1]),
      position: { xid: Number(match[2]), seq: Number(match[3]) },
      listedUpTo: match[4] === '-' ? undefined : Number(match[4]),
      issuedAt: Number(match[5]),
    };
    // Another user's token is as good as a forged one.
    if (token.userId !== userId) throw ApiError.badRequest(MALFORMED);
    if (token.issuedAt < Date.now() - historyDays * DAY_MS + PRUNE_MARGIN_MS) {
      throw ApiError.gone(
        `This token is older than the ${historyDays} days changes are kept: sync again from the start (call without since).`,
      );
    }
    return token;
  }

  const entry = (row: { id: number; version: number; change: ChangeKind; at: number }): ChangeEntry =>
    row.change === 'delete'
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
        token = { userId, position: await feedHorizon(q, db.dialect), listedUpTo: 0, issuedAt: now };
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
      const horizon = db.dialect === 'postgres' ? (await feedHorizon(q, db.dialect)).xid : undefined;
      const rows = await revisionsAfter(q, userId, token.position, horizon, limit + 1);
      const more = rows.length > limit;
      const shown = rows.slice(0, limit);
      let position = shown.at(-1)?.position ?? token.position;
      // Everything below the horizon was delivered: the next read starts there.
      if (!more && horizon !== undefined) position = later({ xid: horizon, seq: 0 }, position);
      const next = await sign({ userId, position, listedUpTo: undefined, issuedAt: now });
      return { changes: latestOnly(shown).map(entry), next, more };
    },
  };
}

export type ChangeFeed = ReturnType<typeof changeFeed>;
