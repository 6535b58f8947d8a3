import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';
import { expectError } from '../helpers/requests.js';

/**
 * Cross-site request forgery: a page on another site can make the browser send a POST with the credentials it
 * remembers for this service (`Authorization: Basic`, after a 401) and, without a preflight, a body of only three
 * types. Every route that takes a body refuses those types unless the credential came in the `security` header.
 */

const EVIL = 'https://evil.example';
const M3U8 = '#EXTM3U\n#PLAYLIST:From a file\nhttp://music.example/v3/song/1\n';
const JSON_BODY = '{"name":"From JSON","songIds":[1]}';

/** The body types a form or a `no-cors` fetch can send, as browsers write them. */
const CROSS_SITE_TYPES = [
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----formdata',
];

/** Each route that takes a body, and a body it would take from the security header as `text/plain`. */
const ROUTES = [
  { url: '/v3/playlist/import?name=CSRF-made', body: M3U8 },
  { url: '/v3/playlists/import?name=CSRF-made', body: M3U8 },
  { url: '/v3/playlist', body: JSON_BODY },
  { url: '/v3/playlists', body: JSON_BODY },
];

for (const dialect of DIALECTS) {
  describe(`cross-site request forgery (${dialect})`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(dialect);
    });
    afterAll(async () => {
      await t.close();
    });

    const post = (url: string, headers: Record<string, string>, payload: string) =>
      t.app.inject({ method: 'POST', url, headers: { origin: EVIL, ...headers }, payload });
    const count = async (security: string) =>
      Number((await t.app.inject({ url: '/v3/playlist', headers: { security } })).headers['x-total-count']);

    it('refuses every body type a page on another site can send with Authorization: 415, nothing created', async () => {
      const credential = await t.addUser();
      for (const { url, body } of ROUTES) {
        for (const type of CROSS_SITE_TYPES) {
          const answer = await post(url, { authorization: credential, 'content-type': type }, body);
          const error = expectError(answer, 415);
          expect(error.errormsg, `${url} ${type}`).toMatch(/security header/);
        }
      }
      expect(await count(credential)).toBe(0);
    });

    it('takes the same bodies as text/plain with the security header, and playlist types with Authorization', async () => {
      const credential = await t.addUser();
      for (const { url, body } of ROUTES) {
        const answer = await post(url, { security: credential, 'content-type': 'text/plain' }, body);
        expect(answer.statusCode, `${url}: ${answer.body}`).toBe(200);
      }
      // Types a page can send only after a preflight, which the service does not allow to another site.
      for (const type of ['audio/x-mpegurl', 'audio/mpegurl', 'application/vnd.apple.mpegurl']) {
        const answer = await post('/v3/playlist/import', { authorization: credential, 'content-type': type }, M3U8);
        expect(answer.statusCode, `${type}: ${answer.body}`).toBe(200);
      }
      const json = await post(
        '/v3/playlist',
        { authorization: credential, 'content-type': 'application/json' },
        JSON_BODY,
      );
      expect(json.statusCode, json.body).toBe(200);
      expect(await count(credential)).toBe(ROUTES.length + 4);
    });
  });
}
