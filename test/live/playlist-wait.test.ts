import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, sendAs } from '../helpers/requests.js';

describeEachDatabase('a conditional GET that waits for the playlist to change (Prefer: wait), on %s', (t) => {
  const get = async (security: string, url: string, headers: Record<string, string> = {}) => {
    const started = Date.now();
    const answer = await sendAs(t.app, 'GET', url, security, undefined, headers);
    return { answer, ms: Date.now() - started };
  };

  for (const form of ['', '/entries']) {
    it(`answers GET …${form || ' (JSON)'} at once when the playlist changes while its tag still matched`, async () => {
      const alice = await t.addUser();
      const mine = await createPlaylist(t.app, alice, 'Watched', [1]);
      const url = `/v3/playlist/${mine.id}${form}`;
      const first = await get(alice, url);
      const etag = first.answer.headers.etag as string;
      const waiting = get(alice, url, { 'if-none-match': etag, prefer: 'wait=20' });
      await sleep(400);
      const renamed = await sendAs(t.app, 'PATCH', `/v3/playlist/${mine.id}`, alice, { name: 'Watched, renamed' });
      expect(renamed.statusCode, renamed.body).toBe(200);
      const { answer, ms } = await waiting;
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json<{ name: string }>().name).toBe('Watched, renamed');
      expect(answer.headers['preference-applied']).toBe('wait=20');
      expect(answer.headers.etag).not.toBe(etag);
      expect(ms).toBeGreaterThanOrEqual(300);
      expect(ms).toBeLessThan(10_000);
    });
  }

  it('answers 304 after the wait when nothing changed, and at once without If-None-Match or a wait it reads', async () => {
    const alice = await t.addUser();
    const mine = await createPlaylist(t.app, alice, 'Quiet', [1]);
    const url = `/v3/playlist/${mine.id}`;
    const etag = (await get(alice, url)).answer.headers.etag as string;

    const waited = await get(alice, url, { 'if-none-match': etag, prefer: 'wait=1' });
    expect(waited.answer.statusCode).toBe(304);
    expect(waited.answer.headers['preference-applied']).toBe('wait=1');
    expect(waited.ms).toBeGreaterThanOrEqual(900);

    // A preference it does not understand is ignored (RFC 7240): answered at once.
    for (const prefer of ['wait=soon', 'wait=0', 'return=minimal']) {
      const at = await get(alice, url, { 'if-none-match': etag, prefer });
      expect(at.answer.statusCode).toBe(304);
      expect(at.answer.headers['preference-applied']).toBeUndefined();
      expect(at.ms).toBeLessThan(900);
    }
    const plain = await get(alice, url, { prefer: 'wait=5' });
    expect(plain.answer.statusCode).toBe(200);
    expect(plain.answer.headers['preference-applied']).toBeUndefined();
    expect(plain.ms).toBeLessThan(900);
  });
});
