import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

/** Headers every answer carries (X-Request-Id), and compression of large answers when the client asks for it. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describeEachDatabase('answer headers on %s', (t) => {
  let security: string;
  let long: PlaylistBody;
  let short: PlaylistBody;
  beforeAll(async () => {
    security = await t.addUser();
    const songIds = Array.from({ length: 200 }, (_v, i) => (i % 240) + 1);
    long = await createPlaylist(t.app, security, 'A long one', songIds);
    short = await createPlaylist(t.app, security, 'Short', [1]);
  });

  it('echoes an acceptable X-Request-Id and makes a new one otherwise, on answers and errors alike', async () => {
    const given = 'client-42.a:b@c/d+e=f';
    const echoed = await t.app.inject({ url: '/v3/playlist', headers: { security, 'x-request-id': given } });
    expect(echoed.statusCode).toBe(200);
    expect(echoed.headers['x-request-id']).toBe(given);

    const refused = ['', 'has space', 'x'.repeat(129), 'new\u00e9line', 'semi;colon'];
    const ids = new Set<string>();
    for (const value of refused) {
      const answer = await t.app.inject({ url: '/v3/playlist', headers: { security, 'x-request-id': value } });
      expect(answer.statusCode, value).toBe(200);
      expect(answer.headers['x-request-id'], value).toMatch(UUID);
      ids.add(String(answer.headers['x-request-id']));
    }
    expect(ids.size).toBe(refused.length);

    const errors = [
      await t.app.inject({ url: '/v3/playlist', headers: { 'x-request-id': given } }),
      await t.app.inject({ url: '/v3/playlist/987654321', headers: { security, 'x-request-id': given } }),
      await t.app.inject({ url: '/v3/%E0%A4%A', headers: { 'x-request-id': given } }),
      await t.app.inject({ method: 'PUT', url: '/v3/playlist', headers: { 'x-request-id': given } }),
    ];
    expect(errors.map((e) => e.statusCode)).toEqual([401, 404, 400, 405]);
    for (const answer of errors) {
      expectError(answer, answer.statusCode);
      expect(answer.headers['x-request-id']).toBe(given);
    }
    const probe = await t.app.inject({ url: '/healthz' });
    expect(probe.headers['x-request-id']).toMatch(UUID);
  });

  it('compresses a large answer with the encoding the client prefers, and leaves small ones alone', async () => {
    const plain = await t.app.inject({ url: `/v3/playlist/${long.id}`, headers: { security } });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.rawPayload.length).toBeGreaterThan(2048);
    const strong = String(plain.headers.etag);
    expect(strong).toMatch(/^"/);

    for (const [accept, encoding, decode] of [
      ['gzip', 'gzip', gunzipSync],
      ['gzip, deflate, br', 'br', brotliDecompressSync],
      ['br;q=0.1, gzip', 'gzip', gunzipSync],
    ] as const) {
      const answer = await t.app.inject({
        url: `/v3/playlist/${long.id}`,
        headers: { security, 'accept-encoding': accept },
      });
      expect(answer.statusCode, accept).toBe(200);
      expect(answer.headers['content-encoding'], accept).toBe(encoding);
      expect(String(answer.headers.vary).toLowerCase(), accept).toContain('accept-encoding');
      expect(answer.rawPayload.length, accept).toBeLessThan(plain.rawPayload.length / 2);
      expect(decode(answer.rawPayload).equals(plain.rawPayload), accept).toBe(true);
      // Other bytes, so another strong validator, naming its coding; each revalidates.
      expect(answer.headers.etag, accept).toBe(`${strong.slice(0, -1)}-${encoding}"`);
      const again = await t.app.inject({
        url: `/v3/playlist/${long.id}`,
        headers: { security, 'accept-encoding': accept, 'if-none-match': String(answer.headers.etag) },
      });
      expect(again.statusCode, accept).toBe(304);
    }

    const page = await t.app.inject({
      url: '/v3/playlist?limit=100',
      headers: { security, 'accept-encoding': 'gzip' },
    });
    expect(page.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(page.rawPayload).toString('utf8'))).toHaveLength(2);

    const small = await t.app.inject({
      url: `/v3/playlist/${short.id}`,
      headers: { security, 'accept-encoding': 'gzip' },
    });
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.json<PlaylistBody>()).toEqual(short);
    expect(small.headers.etag).toMatch(/^"/);
  });

  it('still refuses a compressed request body with 415', async () => {
    const answer = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: Buffer.from('not really gzip'),
    });
    expectError(answer, 415);
  });
});
