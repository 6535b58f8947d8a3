import { describe, expect, it } from 'vitest';
import { credentialToken, readCredential } from './credential.js';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

describe('readCredential', () => {
  it('reads security with or without the Basic word, and Authorization', () => {
    for (const headers of [
      { security: `Basic ${b64('ann:pw')}` },
      { security: b64('ann:pw') },
      { authorization: `basic ${b64('ann:pw')}` },
    ]) {
      const result = readCredential(headers);
      expect(result).toMatchObject({ kind: 'ok', credential: { name: 'ann', password: 'pw' } });
    }
  });

  it('keeps colons in the password and reads UTF-8', () => {
    expect(readCredential({ security: b64('zoë:a:b:ç') })).toMatchObject({
      kind: 'ok',
      credential: { name: 'zoë', password: 'a:b:ç', source: 'security' },
    });
  });

  it('tells missing from malformed from too long', () => {
    expect(readCredential({}).kind).toBe('missing');
    expect(readCredential({ security: '' }).kind).toBe('missing');
    expect(readCredential({ authorization: 'Bearer x' }).kind).toBe('malformed');
    expect(readCredential({ security: 'Basic ***' }).kind).toBe('malformed');
    expect(readCredential({ security: b64('no colon') }).kind).toBe('malformed');
    expect(readCredential({ security: b64(':empty-name') }).kind).toBe('malformed');
    expect(readCredential({ security: Buffer.from([0x61, 0x3a, 0xc3]).toString('base64') }).kind).toBe('malformed');
    expect(readCredential({ security: b64(`${'n'.repeat(65)}:pw`) }).kind).toBe('too-long');
    expect(readCredential({ security: b64(`ann:${'p'.repeat(1025)}`) }).kind).toBe('too-long');
    expect(readCredential({ security: b64(`ann:${'p'.repeat(1024)}`) }).kind).toBe('ok');
  });
});

describe('credentialToken', () => {
  it('finds the token readCredential decodes, by the same rules, without decoding it', () => {
    const token = b64('ann:pw');
    for (const [headers, source] of [
      [{ security: ` Basic  ${token} ` }, 'security'],
      [{ security: token }, 'security'],
      [{ security: token, authorization: 'Basic other' }, 'security'],
      [{ authorization: `basic ${token}` }, 'authorization'],
    ] as const) {
      expect(credentialToken(headers)).toEqual({ kind: 'token', source, token });
      expect(readCredential(headers)).toMatchObject({ kind: 'ok', credential: { token, source } });
    }
    expect(credentialToken({}).kind).toBe('missing');
    expect(credentialToken({ authorization: token }).kind).toBe('malformed');
    expect(credentialToken({ security: 'Basic ***' })).toEqual({ kind: 'token', source: 'security', token: '***' });
  });
});
