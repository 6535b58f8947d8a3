import { gzipSync } from 'node:zlib';
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

/**
 * A bad query parameter, id or body is a 400. Ids, `limit`, `offset` and `size` are plain
 * decimal integers (no hex, fraction, exponent, sign or space); a body is UTF-8; a compressed body is a 415.
 */
describeEachDatabase('strict input on %s', (t) => {
  let security: string;
  let playlist: PlaylistBody;

  beforeAll(async () => {
    security = await t.addUser();
    for (let i = 0; i < 11; i++) playlist = await createPlaylist(t.app, security, `Strict ${i}`, [i + 1]);
  });

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { security } });

  it('takes only plain decimal ids in the path', async () => {
    const id = playlist.id;
    expect((await get(`/v3/playlist/${id}`)).statusCode).toBe(200);
    const loose = [`0x${id.toString(16)}`, `${id}.0`, `%20${id}`, `${id}%20`, `+${id}`, `${id}e0`, `${id / 10}e1`];
    for (const form of loose) {
      for (const url of [`/v3/playlist/${form}`, `/v3/playlists/${form}`, `/v3/playlist/${form}/image`]) {
        expect(expectError(await get(url), 400).errormsg, url).toBe(
          'The "playlist-id" in the path must be an integer.',
        );
      }
      const deleted = await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${form}`, headers: { security } });
      expect(expectError(deleted, 400).errormsg).toMatch(/"playlist-id" in the path must be an integer/);
      expectError(await get(`/v3/song/${form}`), 400);
    }
    // Nothing was deleted by a loose id.
    expect((await get(`/v3/playlist/${id}`)).statusCode).toBe(200);
    expect((await get('/v3/song/0x1')).statusCode).toBe(400);
    expect((await get('/v3/song/1')).statusCode).toBe(200);
  });

  it('takes only plain decimal limit, offset and size', async () => {
    for (const path of ['/v3/playlist', '/v3/playlists', '/v3/song']) {
      expect((await get(`${path}?limit=5&offset=1`)).statusCode).toBe(200);
      for (const value of ['1e1', '0x5', '5.0', '%205', '5%20', '+5', '', '1_0', '%EF%BC%95']) {
        expect(expectError(await get(`${path}?limit=${value}`), 400).errormsg, `${path} limit=${value}`).toBe(
          'The "limit" query parameter must be an integer.',
        );
        expect(expectError(await get(`${path}?offset=${value}`), 400).errormsg, `${path} offset=${value}`).toBe(
          'The "offset" query parameter must be an integer.',
        );
      }
    }
    // A plain integer outside its range still answers with the range.
    expect(expectError(await get('/v3/playlist?limit=-1'), 400).errormsg).toMatch(/at least 1/);
    const image = `/v3/playlist/${playlist.id}/image`;
    expect((await get(`${image}?size=64`)).statusCode).toBe(200);
    for (const value of ['0x40', '64.0', '6.4e1', '%2064']) {
      expect(expectError(await get(`${image}?size=${value}`), 400).errormsg).toBe(
        'The "size" query parameter must be an integer.',
      );
    }
  });

  it('refuses a body that is not UTF-8 and stores valid UTF-8 exactly', async () => {
    const before = Number((await get('/v3/playlist?limit=1')).headers['x-total-count']);
    const invalid = [Buffer.from([0xff, 0xfe]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80])];
    for (const bytes of invalid) {
      const body = Buffer.concat([Buffer.from('{"name":"bad '), bytes, Buffer.from('","songIds":[1]}')]);
      for (const contentType of [
        'application/json',
        'application/json; charset=utf-8',
        'application/vnd.mixtape+json',
        'text/plain',
        'application/x-www-form-urlencoded',
      ]) {
        const response = await t.app.inject({
          method: 'POST',
          url: '/v3/playlist',
          headers: { security, 'content-type': contentType },
          payload: body,
        });
        expect(expectError(response, 400).errormsg, contentType).toBe('The request body is not valid UTF-8.');
      }
    }
    expect(Number((await get('/v3/playlist?limit=1')).headers['x-total-count'])).toBe(before);

    const name = 'Grüße 😀 שלום';
    const created = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json' },
      payload: Buffer.from(JSON.stringify({ name, songIds: [1] }), 'utf8'),
    });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json<PlaylistBody>().name).toBe(name);
  });

  it('still refuses prototype poisoning and malformed JSON', async () => {
    for (const payload of ['{"name":"x","songIds":[],"__proto__":{"polluted":1}}', '{"name":', '[1,']) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security, 'content-type': 'application/json' },
        payload,
      });
      expectError(response, 400);
    }
  });

  it('answers a compressed body 415 and takes identity', async () => {
    const json = JSON.stringify({ name: 'Compressed', songIds: [1] });
    for (const [encoding, payload] of [
      ['gzip', gzipSync(json)],
      ['gzip', Buffer.from(json)],
      ['deflate', Buffer.from(json)],
      ['br', Buffer.from(json)],
      ['identity, gzip', Buffer.from(json)],
    ] as const) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security, 'content-type': 'application/json', 'content-encoding': encoding },
        payload,
      });
      expect(expectError(response, 415).errormsg).toMatch(/Content-Encoding/);
      expect(response.headers['accept-encoding']).toBe('identity');
    }
    const plain = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: json,
    });
    expect(plain.statusCode, plain.body).toBe(200);
  });

  it('takes a DELETE with Content-Type: application/json and an empty body, and refuses an empty POST', async () => {
    const doomed = await createPlaylist(t.app, security, 'Doomed', [1]);
    const deleted = await t.app.inject({
      method: 'DELETE',
      url: `/v3/playlist/${doomed.id}`,
      headers: { security, 'content-type': 'application/json', 'content-length': '0' },
      payload: '',
    });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.body).toBe('');
    expect((await get(`/v3/playlist/${doomed.id}`)).statusCode).toBe(410);

    const empty = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json', 'content-length': '0' },
      payload: '',
    });
    expect(expectError(empty, 400).errormsg).toBe('The request body is empty; it must be a JSON object.');
  });

  it('says that an empty or absent body is empty on every route that reads one, whatever its type', async () => {
    const target = await createPlaylist(t.app, security, 'Bodies', [1]);
    const url = `/v3/playlist/${target.id}`;
    const routes = [
      ['POST', '/v3/playlist', 'application/json'],
      ['PUT', url, 'application/json'],
      ['PATCH', url, 'application/merge-patch+json'],
      ['POST', `${url}/songs`, 'application/json'],
      ['POST', `${url}/restore`, 'application/json'],
      ['PUT', `${url}/members/nobody`, 'application/json'],
    ] as const;
    const object = 'The request body is empty; it must be a JSON object.';
    for (const [method, path, type] of routes) {
      for (const sent of [type, 'application/x-www-form-urlencoded', 'text/plain']) {
        const response = await t.app.inject({
          method,
          url: path,
          headers: { security, 'content-type': sent },
          payload: '',
        });
        expect(expectError(response, 400).errormsg, `${method} ${path} as ${sent}`).toBe(object);
      }
      const absent = await t.app.inject({ method, url: path, headers: { security } });
      expect(expectError(absent, 400).errormsg, `${method} ${path} without a body`).toBe(object);
    }
    const patch = await t.app.inject({
      method: 'PATCH',
      url,
      headers: { security, 'content-type': 'application/json-patch+json' },
      payload: '',
    });
    expect(expectError(patch, 400).errormsg).toBe(
      'The request body is empty; it must be a JSON Patch document (an array of operations).',
    );
    // JSON null is a body, and is told apart from none.
    const nothing = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json' },
      payload: 'null',
    });
    expect(expectError(nothing, 400).errormsg).toBe('The request body is null; it must be a JSON object.');
    // Nothing was changed by any of them.
    const after = await t.app.inject({ method: 'GET', url, headers: { security } });
    expect(after.json<PlaylistBody>()).toMatchObject({ name: 'Bodies', songs: [{ id: 1 }] });
  });
});
