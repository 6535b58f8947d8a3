import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HmacKey } from './hmac.js';

describe('HmacKey', () => {
  it('computes HMAC-SHA256 exactly as node:crypto does, for short, long and non-ASCII keys and texts', () => {
    // Texts longer than the key's own buffer holds, then shorter ones again: nothing of one digest stays in the next.
    const texts = ['', 'alice:secret', 'żółw:пароль🎵', 'x'.repeat(1000), '€'.repeat(1024), '🎵'.repeat(513), 'a'];
    for (const keyLength of [0, 1, 32, 64, 65, 200]) {
      const key = randomBytes(keyLength);
      const hmac = new HmacKey(key);
      for (const text of [...texts, ...[...texts].reverse()]) {
        expect(hmac.digest(text)).toBe(createHmac('sha256', key).update(text, 'utf8').digest('base64'));
      }
    }
  });
});
