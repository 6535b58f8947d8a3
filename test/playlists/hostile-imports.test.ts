import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError } from '../helpers/requests.js';

/**
 * Files made to make an import's matching slow: one location built of many song-URL-like pieces and ended by a line
 * break (XSPF), an escaped one (JSPF) or U+2028 (M3U8), at the import limit the test sets (256 KiB). Matching an
 * identifier costs at most its own length, so each import is refused at once and the event loop stays free for
 * everyone else.
 */

const IMPORT_LIMIT = 4 * 65_536;
const REPEATS = Math.floor((IMPORT_LIMIT - 512) / '/v3/song/1?'.length);
const hostile = '/v3/song/1?'.repeat(REPEATS);

const files = {
  xspf: [
    'application/xspf+xml',
    `<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>t</title><trackList><track>` +
      `<location>${hostile}\nx</location></track></trackList></playlist>`,
  ],
  jspf: [
    'application/jspf+json',
    JSON.stringify({ playlist: { title: 't', track: [{ location: [`${hostile}\nx`] }] } }),
  ],
  m3u8: ['audio/mpegurl', `#EXTM3U\n#PLAYLIST:t\n${hostile}\u2028x\n`],
} as const;

describeEachDatabase('hostile imports on %s', { MIXTAPE_IMPORT_LIMIT: String(IMPORT_LIMIT) }, (t) => {
  it('matches no location in time that grows faster than its length: the event loop stays free', async () => {
    const mallory = await t.addUser();
    const alice = await t.addUser();
    const { id } = await createPlaylist(t.app, alice, 'Mine', [1, 2]);

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    try {
      for (const [format, [type, body]] of Object.entries(files)) {
        expect(Buffer.byteLength(body), format).toBeLessThanOrEqual(IMPORT_LIMIT);
        const [refused, read] = await Promise.all([
          t.app.inject({
            method: 'POST',
            url: '/v3/playlist/import?unmatched=fail&name=x',
            headers: { security: mallory, 'content-type': type },
            payload: body,
          }),
          t.app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security: alice } }),
        ]);
        expect(expectError(refused, 422).errormsg, format).toContain('#1');
        expect(read.statusCode).toBe(200);
      }
    } finally {
      delay.disable();
    }
    // Before matching was bounded, each of these held the event loop for minutes; a generous bound for a busy machine.
    expect(delay.max / 1e6).toBeLessThan(1000);
  });
});
