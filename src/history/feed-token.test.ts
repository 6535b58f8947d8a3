import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HmacKey } from '../credentials/hmac.js';
import { openToken, parseTokenFields, signToken, tokenFields, type FeedToken } from './feed-token.js';

const token: FeedToken = {
  userId: 7,
  positions: {
    revisions: { xid: 812, seq: 40 },
    members: { xid: 809, seq: 3 },
    catalog: { xid: 790, seq: 2 },
    library: { xid: 805, seq: 11 },
  },
  listedUpTo: undefined,
  issuedAt: 1_764_000_000_000,
};
const START = { xid: 0, seq: 0 };
const key = new HmacKey(Buffer.from('the feed key of one installation'));

describe('the change feed token', () => {
  it('writes its fields in order, `-` for a finished first sync', () => {
    expect(tokenFields(token)).toBe('7.812.40.809.3.790.2.805.11.-.1764000000000');
    expect(tokenFields({ ...token, listedUpTo: 120 })).toBe('7.812.40.809.3.790.2.805.11.120.1764000000000');
  });

  it('reads back every token it writes', () => {
    const position = fc.record({ xid: fc.nat(), seq: fc.nat() });
    const tokens = fc.record({
      userId: fc.integer({ min: 1, max: 2 ** 31 }),
      positions: fc.record({ revisions: position, members: position, catalog: position, library: position }),
      listedUpTo: fc.option(fc.nat(), { nil: undefined }),
      issuedAt: fc.integer({ min: 0, max: 2 ** 50 }),
    });
    fc.assert(
      fc.property(tokens, (t) => {
        expect(parseTokenFields(tokenFields(t))).toEqual(t);
        expect(openToken(key, signToken(key, t))).toEqual(t);
      }),
    );
  });

  it('reads the fields of API 1.4.0, whose member and catalog positions are the start', () => {
    expect(parseTokenFields('7.812.40.-.1764000000000')).toEqual({
      ...token,
      positions: { revisions: { xid: 812, seq: 40 }, members: START, catalog: START, library: START },
    });
    expect(parseTokenFields('7.812.40.5.1764000000000')?.listedUpTo).toBe(5);
  });

  it('reads the fields of API 1.5.0 to 1.7.0, whose catalog position is the start', () => {
    expect(parseTokenFields('7.812.40.809.3.-.1764000000000')).toEqual({
      ...token,
      positions: { ...token.positions, catalog: START, library: START },
    });
    expect(parseTokenFields('7.812.40.809.3.9.1764000000000')?.listedUpTo).toBe(9);
  });

  it('reads the fields of API 1.8.0 and 1.9.0, whose library position is the start', () => {
    expect(parseTokenFields('7.812.40.809.3.790.2.-.1764000000000')).toEqual({
      ...token,
      positions: { ...token.positions, library: START },
    });
    expect(parseTokenFields('7.812.40.809.3.790.2.9.1764000000000')?.listedUpTo).toBe(9);
  });

  it('refuses fields of no format', () => {
    for (const fields of [
      '',
      '7.812.40.809.3.-',
      '7.812.40.809.3.-.1764000000000.1',
      '7.812.40.809.3.790.-.1764000000000',
      '7.812.40.809.3.790.2.-.1764000000000.1',
      '7.812.40.809.3.790.2.805.11.-.1764000000000.1',
      '7.812.40.809.-3.-.1764000000000',
      '7.812.40.809.3.x.1764000000000',
      '7.812.4e1.809.3.-.1764000000000',
      '12345678901234567.1.1.1.1.-.1',
      '1.123456789012345678901.1.1.1.-.1',
      ' 7.812.40.809.3.-.1764000000000',
    ]) {
      expect(parseTokenFields(fields), fields).toBeUndefined();
    }
  });

  it('opens only what this key signed, unaltered', () => {
    const signed = signToken(key, token);
    const [body, mac] = signed.split('.') as [string, string];
    expect(openToken(key, signed)).toEqual(token);
    expect(openToken(new HmacKey(Buffer.from('another installation')), signed)).toBeUndefined();
    const altered = Buffer.from(tokenFields({ ...token, userId: 8 })).toString('base64url');
    expect(openToken(key, `${altered}.${mac}`)).toBeUndefined();
    expect(openToken(key, `${body}.${mac.slice(1)}`)).toBeUndefined();
    expect(openToken(key, body)).toBeUndefined();
    expect(openToken(key, `${signed}.${mac}`)).toBeUndefined();
    expect(openToken(key, '')).toBeUndefined();
  });
});
