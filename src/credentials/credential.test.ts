import { describe, expect, it } from 'vitest';
import { readCredential } from './credential.js';

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
