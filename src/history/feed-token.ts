import { timingSafeEqual } from 'node:crypto';
import type { HmacKey } from '../credentials/hmac.js';
import type { FeedPosition, FeedPositions } from './changes.repository.js';

/**
 * What a change feed token says: whose feed, the position delivered up to in each of its logs, the last playlist id
 * listed while the first sync lists every playlist (undefined once it is done), and when it was issued (Unix ms).
 */
export interface FeedToken {
  readonly userId: number;
  readonly positions: FeedPositions;
  readonly listedUpTo: number | undefined;
  readonly issuedAt: number;
}

/** `user.xid.seq.memberXid.memberSeq.catalogXid.catalogSeq.libraryXid.librarySeq.listedUpTo.issuedAt` (1.10.0). */
const TOKEN_FIELDS =
  /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
/** Before library items (API 1.8.0 and 1.9.0): `user.xid.seq.memberXid.memberSeq.catalogXid.catalogSeq.listedUpTo.issuedAt`. */
const CATALOG_TOKEN_FIELDS =
  /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
/** Before catalog items (API 1.5.0 to 1.7.0): `user.xid.seq.memberXid.memberSeq.listedUpTo.issuedAt`. */
const MEMBER_TOKEN_FIELDS = /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
/** Before member events (API 1.4.0): `user.xid.seq.listedUpTo.issuedAt`. */
const OLD_TOKEN_FIELDS = /^(\d{1,16})\.(\d{1,20})\.(\d{1,20})\.(\d{1,16}|-)\.(\d{1,16})$/;
/**
 * The position of a log an older token did not know: its start (a catalog item delivered again is harmless, and the
 * library's log holds one row per user).
 */
const START: FeedPosition = { xid: 0, seq: 0 };

/** The token's fields, as `parseTokenFields` reads them. */
export function tokenFields(token: FeedToken): string {
  const { revisions, members, catalog, library } = token.positions;
  return [
    token.userId,
    revisions.xid,
    revisions.seq,
    members.xid,
    members.seq,
    catalog.xid,
    catalog.seq,
    library.xid,
    library.seq,
    token.listedUpTo ?? '-',
    token.issuedAt,
  ].join('.');
}

const listed = (field: string | undefined) => (field === '-' ? undefined : Number(field));

/** The fields of a token, in the format of today or of an earlier API version; undefined when they are none. */
export function parseTokenFields(fields: string): FeedToken | undefined {
  const match = TOKEN_FIELDS.exec(fields);
  if (match !== null) {
    return {
      userId: Number(match[1]),
      positions: {
        revisions: { xid: Number(match[2]), seq: Number(match[3]) },
        members: { xid: Number(match[4]), seq: Number(match[5]) },
        catalog: { xid: Number(match[6]), seq: Number(match[7]) },
        library: { xid: Number(match[8]), seq: Number(match[9]) },
      },
      listedUpTo: listed(match[10]),
      issuedAt: Number(match[11]),
    };
  }
  const catalog = CATALOG_TOKEN_FIELDS.exec(fields);
  if (catalog !== null) {
    return {
      userId: Number(catalog[1]),
      positions: {
        revisions: { xid: Number(catalog[2]), seq: Number(catalog[3]) },
        members: { xid: Number(catalog[4]), seq: Number(catalog[5]) },
        catalog: { xid: Number(catalog[6]), seq: Number(catalog[7]) },
        library: START,
      },
      listedUpTo: listed(catalog[8]),
      issuedAt: Number(catalog[9]),
    };
  }
  const member = MEMBER_TOKEN_FIELDS.exec(fields);
  if (member !== null) {
    return {
      userId: Number(member[1]),
      positions: {
        revisions: { xid: Number(member[2]), seq: Number(member[3]) },
        members: { xid: Number(member[4]), seq: Number(member[5]) },
        catalog: START,
        library: START,
      },
      listedUpTo: listed(member[6]),
      issuedAt: Number(member[7]),
    };
  }
  const old = OLD_TOKEN_FIELDS.exec(fields);
  if (old === null) return undefined;
  return {
    userId: Number(old[1]),
    positions: {
      revisions: { xid: Number(old[2]), seq: Number(old[3]) },
      members: START,
      catalog: START,
      library: START,
    },
    listedUpTo: listed(old[4]),
    issuedAt: Number(old[5]),
  };
}

/** The token as a client holds it: `base64url(fields).base64url(HMAC of the fields)`. */
export function signToken(key: HmacKey, token: FeedToken): string {
  const fields = tokenFields(token);
  const mac = key.digest(fields);
  return `${Buffer.from(fields).toString('base64url')}.${Buffer.from(mac, 'base64').toString('base64url')}`;
}

/** What a signed token says; undefined when it is malformed or its HMAC is not the key's (forged or altered). */
export function openToken(key: HmacKey, text: string): FeedToken | undefined {
  const [body, mac, extra] = text.split('.');
  if (body === undefined || mac === undefined || extra !== undefined) return undefined;
  const fields = Buffer.from(body, 'base64url').toString('latin1');
  const expected = Buffer.from(key.digest(fields), 'base64');
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return parseTokenFields(fields);
}
