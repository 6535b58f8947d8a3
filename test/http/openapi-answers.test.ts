import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { pruneHistory } from '../../src/history/pruning.js';
import { basic } from '../helpers/app.js';
import { describeEachDatabase, useTestApp } from '../helpers/each-database.js';
import {
  conforming,
  documentedOperations,
  operation,
  seen,
  type InjectRequest,
  type Method,
} from '../helpers/openapi-conformance.js';

// Real answers, through the whole app on both databases, checked against docs/openapi.json: every operation is
// called, and every status the document lists is seen here or named below with the reason it is not.

describeEachDatabase('answers that match the document (%s)', (t) => {
  let security: string;
  const songIds = [3, 1, 4, 1, 5];

  beforeAll(async () => {
    security = await t.addUser();
  });

  it('create, list, get and delete', async () => {
    const headers = { security };
    const created = await conforming(t, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers,
      payload: { name: 'Road trip', songIds },
    });
    expect(created.statusCode).toBe(200);
    const playlist = created.json<{ id: number; name: string; songs: { id: number }[] }>();
    expect(playlist.name).toBe('Road trip');
    expect(playlist.songs.map((s) => s.id)).toEqual(songIds);
    expect(created.headers.location).toBe(`/v3/playlist/${playlist.id}`);

    const other = await conforming(t, 'post', '/v3/playlists', {
      url: '/v3/playlists',
      headers,
      payload: { name: 'Empty', songIds: [] },
    });
    expect(other.statusCode).toBe(200);

    const page = await conforming(t, 'get', '/v3/playlist', { url: '/v3/playlist?limit=1&offset=0', headers });
    expect(page.statusCode).toBe(200);
    expect(page.json()).toEqual([playlist]);
    expect(page.headers['x-total-count']).toBe('2');
    expect(page.headers.link).toContain('rel="next"');

    const defaults = await conforming(t, 'get', '/v3/playlists', { url: '/v3/playlists', headers });
    expect(defaults.statusCode).toBe(200);
    expect(defaults.json<unknown[]>()).toHaveLength(2);

    const found = await conforming(t, 'get', '/v3/playlist', { url: '/v3/playlist?search=road', headers });
    expect(found.json()).toEqual([playlist]);

    const one = await conforming(t, 'get', '/v3/playlist/{playlist-id}', {
      url: `/v3/playlist/${playlist.id}`,
      headers,
    });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(playlist);

    const deleted = await conforming(t, 'delete', '/v3/playlist/{playlist-id}', {
      url: `/v3/playlist/${playlist.id}`,
      headers,
    });
    expect(deleted.statusCode).toBe(200);

    for (const method of ['get', 'delete'] as const) {
      const gone = await conforming(t, method, '/v3/playlists/{playlist-id}', {
        url: `/v3/playlists/${playlist.id}`,
        headers,
      });
      expect(gone.statusCode).toBe(410);
    }
  });

  it('playlist files: export in each format, import, and their failures', async () => {
    const headers = { security };
    const one = '/v3/playlist/{playlist-id}';
    const created = await conforming(t, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers,
      payload: { name: 'Files', songIds },
    });
    const url = `/v3/playlist/${created.json<{ id: number }>().id}`;
    const types = ['application/xspf+xml', 'application/jspf+json', 'audio/mpegurl', 'audio/x-mpegurl'];
    for (const accept of [...types, 'application/vnd.apple.mpegurl']) {
      const file = await conforming(t, 'get', one, { url, headers: { ...headers, accept } });
      expect(file.statusCode, accept).toBe(200);
      const etag = String(file.headers.etag);
      const again = await conforming(t, 'get', one, { url, headers: { ...headers, accept, 'if-none-match': etag } });
      expect(again.statusCode).toBe(304);
    }
    for (const format of ['xspf', 'jspf', 'm3u8', 'json']) {
      const file = await conforming(t, 'get', '/v3/playlists/{playlist-id}', {
        url: `/v3/playlists/${created.json<{ id: number }>().id}?format=${format}`,
        headers,
      });
      expect(file.headers['content-disposition']).toBe(`attachment; filename="Files.${format}"`);
    }
    expect((await conforming(t, 'get', one, { url: `${url}?format=wav`, headers })).statusCode).toBe(400);
    const refused = await conforming(t, 'get', one, { url, headers: { ...headers, accept: 'image/png' } });
    expect(refused.statusCode).toBe(406);

    const m3u8 = (await t.app.inject({ method: 'GET', url: `${url}?format=m3u8`, headers })).body;
    const upload = (type: string, payload: string, query = '') => ({
      url: `/v3/playlist/import${query}`,
      headers: { security, 'content-type': type },
      payload,
    });
    const imported = await conforming(t, 'post', '/v3/playlist/import', upload('audio/mpegurl', m3u8));
    expect(imported.statusCode).toBe(200);
    expect(imported.json<{ playlist: { songs: { id: number }[] } }>().playlist.songs.map((s) => s.id)).toEqual(songIds);
    const partly = `${m3u8}#EXTINF:1,Nobody - Nothing\nnowhere.mp3\n`;
    const report = await conforming(t, 'post', '/v3/playlists/import', { ...upload('text/plain', partly) });
    expect(report.json<{ unmatched: unknown[] }>().unmatched).toEqual([
      { position: 6, title: 'Nothing', artist: 'Nobody', identifier: 'nowhere.mp3' },
    ]);
    const status = async (request: InjectRequest) =>
      (await conforming(t, 'post', '/v3/playlist/import', request)).statusCode;
    expect(await status(upload('audio/mpegurl', partly, '?unmatched=fail'))).toBe(422);
    expect(await status(upload('application/xspf+xml', '<!DOCTYPE x><playlist/>'))).toBe(400);
    expect(await status(upload('application/json', '{}'))).toBe(415);
    expect(await status(upload('audio/mpegurl', `#EXTM3U\n#PLAYLIST:${'x'.repeat(t.config.limits.importBytes)}`))).toBe(
      413,
    );
    expect(await status({ ...upload('audio/mpegurl', m3u8), headers: { 'content-type': 'audio/mpegurl' } })).toBe(401);
  });

  it('failures', async () => {
    const headers = { security };
    const expectStatus = async (status: number, method: Method, path: string, request: InjectRequest) => {
      const response = await conforming(t, method, path, request);
      expect(response.statusCode, `${method} ${request.url}`).toBe(status);
      return response;
    };

    const anonymous = await expectStatus(401, 'get', '/v3/playlist', { url: '/v3/playlist' });
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic realm="mixtape"/);
    await expectStatus(401, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers: { authorization: basic('nobody', 'wrong') },
      payload: { name: 'x', songIds: [] },
    });

    await expectStatus(404, 'get', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/999999', headers });
    await expectStatus(404, 'delete', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/999999', headers });
    await expectStatus(400, 'get', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/abc', headers });
    await expectStatus(400, 'get', '/v3/playlist/{playlist-id}', { url: '/v3/playlist/0', headers });
    await expectStatus(400, 'get', '/v3/playlist', { url: '/v3/playlist?limit=101', headers });
    await expectStatus(400, 'get', '/v3/playlist', { url: '/v3/playlist?offset=-1', headers });
    await expectStatus(400, 'get', '/v3/playlist', { url: `/v3/playlist?search=${'a'.repeat(201)}`, headers });

    const post = (payload: object | string) => ({
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
    await expectStatus(400, 'post', '/v3/playlist', post({ name: '', songIds: [] }));
    await expectStatus(400, 'post', '/v3/playlist', post({ name: 'n'.repeat(201), songIds: [] }));
    await expectStatus(
      400,
      'post',
      '/v3/playlist',
      post({ name: 'x', songIds: Array<number>(t.config.limits.songsMax + 1).fill(1) }),
    );
    await expectStatus(400, 'post', '/v3/playlist', post({ name: 'x', songIds: [0] }));
    await expectStatus(400, 'post', '/v3/playlist', post({ songIds: [] }));
    await expectStatus(400, 'post', '/v3/playlist', post('{"name":'));
    const unknown = await expectStatus(422, 'post', '/v3/playlist', post({ name: 'x', songIds: [1, 987654] }));
    expect(unknown.json<{ errormsg: string }>().errormsg).toContain('987654');
    await expectStatus(415, 'post', '/v3/playlist', {
      url: '/v3/playlist',
      headers: { authorization: security, 'content-type': 'text/plain' },
      payload: '{"name":"x","songIds":[]}',
    });
    await expectStatus(413, 'post', '/v3/playlist', post({ name: 'x'.repeat(t.config.limits.bodyBytes), songIds: [] }));

    const songs = await expectStatus(200, 'get', '/v3/song', { url: '/v3/song?limit=3&search=', headers });
    expect(songs.json<unknown[]>()).toHaveLength(3);
    await expectStatus(200, 'get', '/v3/song/{song-id}', { url: '/v3/song/1', headers });
    await expectStatus(200, 'get', '/v3/songs', { url: '/v3/songs?limit=2', headers });
    await expectStatus(200, 'get', '/v3/songs/{song-id}', { url: '/v3/songs/2', headers });
    await expectStatus(404, 'get', '/v3/song/{song-id}', { url: '/v3/song/987654', headers });
    await expectStatus(400, 'get', '/v3/song/{song-id}', { url: '/v3/song/-1', headers });

    const image = '/v3/playlist/{playlist-id}/image';
    const mine = await expectStatus(200, 'post', '/v3/playlist', post({ name: 'Cover', songIds: [1, 2] }));
    const coverUrl = `/v3/playlist/${mine.json<{ id: number }>().id}/image`;
    const cover = await expectStatus(200, 'get', image, { url: coverUrl, headers });
    for (const accept of ['image/jpeg', 'image/svg+xml']) {
      await expectStatus(200, 'get', image, { url: coverUrl, headers: { ...headers, accept } });
    }
    const etag = String(cover.headers.etag);
    await expectStatus(304, 'get', image, { url: coverUrl, headers: { ...headers, 'if-none-match': etag } });
    await expectStatus(400, 'get', image, { url: `${coverUrl}?size=63`, headers });
    await expectStatus(401, 'get', image, { url: coverUrl });
    await expectStatus(404, 'get', image, { url: '/v3/playlist/999999/image', headers });
    const plural = coverUrl.replace('/v3/playlist/', '/v3/playlists/');
    await expectStatus(200, 'get', '/v3/playlists/{playlist-id}/image', { url: plural, headers });

    const list = await expectStatus(200, 'get', '/v3/playlist', { url: '/v3/playlist', headers });
    const unchanged = { ...headers, 'if-none-match': String(list.headers.etag) };
    await expectStatus(304, 'get', '/v3/playlist', { url: '/v3/playlist', headers: unchanged });
    await expectStatus(400, 'get', '/v3/song', { url: '/v3/song?limit=0', headers });
    await expectStatus(401, 'get', '/v3/song/{song-id}', { url: '/v3/song/1' });
    const one = '/v3/playlist/{playlist-id}';
    const doomed = await expectStatus(200, 'post', '/v3/playlist', post({ name: 'Doomed', songIds: [1] }));
    const doomedUrl = `/v3/playlist/${doomed.json<{ id: number }>().id}`;
    await expectStatus(409, 'put', one, {
      url: doomedUrl,
      headers,
      payload: { name: 'Too long', songIds: Array<number>(t.config.limits.songsMax + 1).fill(1) },
    });
    await expectStatus(401, 'get', one, { url: doomedUrl });
    await expectStatus(401, 'delete', one, { url: doomedUrl });
    await expectStatus(400, 'delete', one, { url: '/v3/playlist/0', headers });
    // A body sent to an operation that takes none is not read, whatever its type or encoding.
    const bodied = await conforming(t, 'delete', one, {
      url: '/v3/playlist/999999',
      headers: { authorization: security, 'content-type': 'text/plain' },
      payload: 'x',
    });
    const gzipped = await conforming(t, 'get', one, {
      url: doomedUrl,
      headers: { security, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: 'x',
    });
    expect([bodied.statusCode, gzipped.statusCode]).toEqual([404, 200]);
    await expectStatus(200, 'delete', one, { url: doomedUrl, headers });
    await expectStatus(410, 'delete', one, { url: doomedUrl, headers });
    await expectStatus(410, 'get', one, { url: doomedUrl, headers });
    await expectStatus(410, 'get', image, { url: `${doomedUrl}/image`, headers });

    await expectStatus(200, 'get', '/healthz', { url: '/healthz' });
    await expectStatus(200, 'get', '/readyz', { url: '/readyz' });
    await expectStatus(200, 'get', '/metrics', { url: '/metrics' });
  });
});

describe('answers under configured limits match the document', () => {
  const t = useTestApp('sqlite', {
    MIXTAPE_PLAYLISTS_PER_USER: '1',
    MIXTAPE_AUTH_MAX_FAILURES: '1',
    MIXTAPE_METRICS_TOKEN: 'a-token-of-sixteen-chars',
  });

  it('409 on the quota, 429 when throttled, 503 when shutting down', async () => {
    const security = await t.addUser();
    const create = { url: '/v3/playlist', headers: { security }, payload: { name: 'One', songIds: [1] } };
    expect((await conforming(t, 'post', '/v3/playlist', create)).statusCode).toBe(200);
    expect((await conforming(t, 'post', '/v3/playlist', create)).statusCode).toBe(409);
    // Restoring a deleted playlist takes a place of the quota too.
    const list = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
    const [{ id }] = list.json<{ id: number }[]>() as [{ id: number }];
    await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${id}`, headers: { security } });
    expect((await conforming(t, 'post', '/v3/playlist', create)).statusCode).toBe(200);
    const restore = {
      url: `/v3/playlist/${id}/restore`,
      headers: { security, 'content-type': 'application/json' },
      payload: { version: 1 },
    };
    expect((await conforming(t, 'post', '/v3/playlist/{playlist-id}/restore', restore)).statusCode).toBe(409);
    const upload = {
      url: '/v3/playlist/import',
      headers: { security, 'content-type': 'audio/mpegurl' },
      payload: '#EXTM3U\n#PLAYLIST:Two\nhttp://x/v3/song/1\n',
    };
    expect((await conforming(t, 'post', '/v3/playlist/import', upload)).statusCode).toBe(409);

    const wrong = { url: '/v3/song', headers: { security: basic('nobody', 'x') } };
    expect((await conforming(t, 'get', '/v3/song', wrong)).statusCode).toBe(401);
    const throttled = await conforming(t, 'get', '/v3/song', wrong);
    expect(throttled.statusCode).toBe(429);
    const retryAfter = Number(throttled.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    // The message says how long to wait, as Retry-After does (in minutes from two minutes on).
    const wait =
      retryAfter < 120 ? `${retryAfter} second${retryAfter === 1 ? '' : 's'}` : `${Math.ceil(retryAfter / 60)} minutes`;
    expect(throttled.json<{ errormsg: string }>().errormsg).toBe(
      `Too many failed sign-in attempts; wait ${wait} before trying again.`,
    );

    expect((await conforming(t, 'get', '/metrics', { url: '/metrics' })).statusCode).toBe(401);

    t.app.markClosing();
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const response = await conforming(t, 'get', path, { url: path });
      expect(response.statusCode, path).toBe(503);
      expect(response.headers['retry-after'], path).toBeDefined();
    }
    expect(
      (await conforming(t, 'get', '/v3/playlist', { url: '/v3/playlist', headers: { security } })).statusCode,
    ).toBe(503);
  });
});

describeEachDatabase('edits that match the document (%s)', (t) => {
  let security: string;

  beforeAll(async () => {
    security = await t.addUser();
  });

  for (const base of ['/v3/playlist', '/v3/playlists']) {
    it(`PATCH, PUT and POST songs at ${base}, and their failures`, async () => {
      const one = `${base}/{playlist-id}`;
      const create = { url: base, headers: { security }, payload: { name: 'Edits', songIds: [1, 2] } };
      const created = await conforming(t, 'post', base, create);
      const url = `${base}/${created.json<{ id: number }>().id}`;
      const edit = async (method: Method, path: string, status: number, request: Partial<InjectRequest>) => {
        // The credential in the security header, unless the request brings its own in Authorization.
        const headers =
          request.headers?.authorization === undefined ? { security, ...request.headers } : request.headers;
        const response = await conforming(t, method, path, { url, ...request, headers });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const merge = { 'content-type': 'application/merge-patch+json' };
      const jsonPatch = { 'content-type': 'application/json-patch+json' };
      const renamed = await edit('patch', one, 200, { headers: merge, payload: '{"name":"Renamed"}' });
      const etag = String(renamed.headers.etag);
      await edit('patch', one, 200, {
        headers: { ...jsonPatch, 'if-match': etag },
        payload: [{ op: 'add', path: '/songs/-', value: { id: 3 } }],
      });
      await edit('patch', one, 412, { headers: { ...merge, 'if-match': etag }, payload: '{"name":"Stale"}' });
      await edit('patch', one, 409, { headers: jsonPatch, payload: [{ op: 'test', path: '/name', value: 'Other' }] });
      await edit('patch', one, 400, { headers: merge, payload: '{"name":""}' });
      await edit('patch', one, 422, { headers: merge, payload: '{"songIds":[987654]}' });
      await edit('patch', one, 415, { headers: { 'content-type': 'application/xml' }, payload: '<x/>' });
      await edit('patch', one, 413, {
        headers: merge,
        payload: JSON.stringify({ name: 'x'.repeat(t.config.limits.bodyBytes) }),
      });

      await edit('put', one, 200, { payload: { name: 'Whole', songIds: [4, 5] } });
      await edit('put', one, 400, { payload: { name: 'No songs' } });
      await edit('put', one, 412, { headers: { 'if-match': etag }, payload: { name: 'x', songIds: [] } });
      await edit('put', one, 422, { payload: { name: 'x', songIds: [987654] } });
      await edit('put', one, 413, { payload: { name: 'x'.repeat(t.config.limits.bodyBytes), songIds: [] } });
      const asText = { headers: { authorization: security, 'content-type': 'text/plain' } };
      await edit('put', one, 415, { ...asText, payload: '{"name":"x","songIds":[]}' });

      const songs = `${one}/songs`;
      await edit('post', songs, 200, { url: `${url}/songs`, payload: { songIds: [6], position: 0 } });
      // In brief (`Prefer: return=minimal`): `{"version"}`, which the document lists too.
      const brief = { 'content-type': 'application/json', prefer: 'return=minimal' };
      await edit('post', songs, 200, { url: `${url}/songs`, headers: brief, payload: { songIds: [7] } });
      await edit('put', one, 200, { headers: brief, payload: { name: 'Whole', songIds: [4, 5, 6] } });
      await edit('patch', one, 200, { headers: { ...merge, prefer: 'return=minimal' }, payload: '{"name":"Brief"}' });
      await edit('post', songs, 409, { url: `${url}/songs`, payload: { songIds: [6], position: 99 } });
      await edit('post', songs, 400, { url: `${url}/songs`, payload: { songIds: [], position: -1 } });
      await edit('post', songs, 412, { url: `${url}/songs`, headers: { 'if-match': etag }, payload: { songIds: [6] } });
      await edit('post', songs, 422, { url: `${url}/songs`, payload: { songIds: [987654] } });
      await edit('post', songs, 413, {
        url: `${url}/songs`,
        payload: { songIds: Array<number>(t.config.limits.bodyBytes / 2).fill(1) },
      });
      await edit('post', songs, 415, { url: `${url}/songs`, ...asText, payload: '{"songIds":[1]}' });
      await edit('post', songs, 415, {
        url: `${url}/songs`,
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload: '{"songIds":[1]}',
      });

      for (const [method, path, payload] of [
        ['patch', one, '{"name":"x"}'],
        ['put', one, { name: 'x', songIds: [] }],
        ['post', songs, { songIds: [1] }],
      ] as const) {
        const request = {
          url: path === songs ? `${url}/songs` : url,
          payload,
          headers: { 'content-type': 'application/json' },
        };
        await edit(method, path, 404, { ...request, url: request.url.replace(/\/\d+/, '/999999') });
        await edit(method, path, 400, { ...request, url: request.url.replace(/\/\d+/, '/abc') });
        const anonymous = await conforming(t, method, path, request);
        expect(anonymous.statusCode).toBe(401);
      }
      await conforming(t, 'delete', one, { url, headers: { security } });
      await edit('patch', one, 410, { headers: merge, payload: '{"name":"x"}' });
      await edit('put', one, 410, { payload: { name: 'x', songIds: [] } });
      await edit('post', songs, 410, { url: `${url}/songs`, payload: { songIds: [1] } });
    });
  }
});

describeEachDatabase('history that matches the document (%s)', (t) => {
  let security: string;
  const DAY_MS = 24 * 60 * 60 * 1000;

  beforeAll(async () => {
    security = await t.addUser();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const base of ['/v3/playlist', '/v3/playlists']) {
    it(`versions, diff and restore at ${base}, the change feed, and their failures`, async () => {
      const one = `${base}/{playlist-id}`;
      const call = async (method: Method, path: string, status: number, request: Partial<InjectRequest>) => {
        const headers = { security, ...request.headers };
        const response = await conforming(t, method, path, { url: '', ...request, headers });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const create = { url: base, headers: { security }, payload: { name: 'History', songIds: [1, 2] } };
      const id = (await conforming(t, 'post', base, create)).json<{ id: number }>().id;
      const url = `${base}/${id}`;
      await call('patch', one, 200, { url, payload: { name: 'History 2' } });

      await call('get', `${one}/versions`, 200, { url: `${url}/versions` });
      await call('get', `${one}/versions`, 400, { url: `${url}/versions?limit=0` });
      await call('get', `${one}/versions`, 404, { url: `${base}/999999/versions` });
      const version = await call('get', `${one}/versions/{version}`, 200, { url: `${url}/versions/1` });
      await call('get', `${one}/versions/{version}`, 200, { url: `${url}/versions/1?format=xspf` });
      await call('get', `${one}/versions/{version}`, 304, {
        url: `${url}/versions/1`,
        headers: { 'if-none-match': String(version.headers.etag) },
      });
      await call('get', `${one}/versions/{version}`, 400, { url: `${url}/versions/0` });
      await call('get', `${one}/versions/{version}`, 404, { url: `${url}/versions/9` });
      await call('get', `${one}/versions/{version}`, 406, {
        url: `${url}/versions/1`,
        headers: { accept: 'image/png' },
      });
      await call('get', `${one}/diff`, 200, { url: `${url}/diff?from=1` });
      await call('get', `${one}/diff`, 200, { url: `${url}/diff?from=1&form=entries` });
      await call('get', `${one}/diff`, 400, { url: `${url}/diff?from=9` });
      await call('get', `${one}/diff`, 400, { url: `${url}/diff?from=1&form=songs` });
      const versionEntries = `${one}/versions/{version}/entries`;
      const entries = await call('get', versionEntries, 200, { url: `${url}/versions/1/entries` });
      await call('get', versionEntries, 304, {
        url: `${url}/versions/1/entries`,
        headers: { 'if-none-match': String(entries.headers.etag) },
      });
      await call('get', versionEntries, 400, { url: `${url}/versions/0/entries` });
      await call('get', versionEntries, 404, { url: `${url}/versions/9/entries` });
      await call('get', `${one}/diff`, 404, { url: `${base}/999999/diff?from=1` });
      const json = { 'content-type': 'application/json' };
      await call('post', `${one}/restore`, 200, { url: `${url}/restore`, headers: json, payload: { version: 1 } });
      await call('post', `${one}/restore`, 200, {
        url: `${url}/restore`,
        headers: { ...json, prefer: 'return=minimal' },
        payload: { version: 1 },
      });
      await call('post', `${one}/restore`, 412, {
        url: `${url}/restore`,
        headers: { ...json, 'if-match': '"stale"' },
        payload: { version: 1 },
      });
      await call('post', `${one}/restore`, 400, { url: `${url}/restore`, headers: json, payload: { version: 0 } });
      await call('post', `${one}/restore`, 404, { url: `${url}/restore`, headers: json, payload: { version: 99 } });
      await call('post', `${one}/restore`, 413, {
        url: `${url}/restore`,
        headers: json,
        payload: JSON.stringify({ version: 1, pad: 'x'.repeat(t.config.limits.bodyBytes) }),
      });
      await call('post', `${one}/restore`, 415, {
        url: `${url}/restore`,
        headers: { 'content-type': 'application/xml' },
        payload: '<x/>',
      });
      for (const [method, path, request] of [
        ['get', `${one}/versions`, { url: `${url}/versions` }],
        ['get', `${one}/versions/{version}`, { url: `${url}/versions/1` }],
        ['get', `${one}/diff`, { url: `${url}/diff?from=1` }],
        ['get', `${one}/versions/{version}/entries`, { url: `${url}/versions/1/entries` }],
        ['post', `${one}/restore`, { url: `${url}/restore`, headers: json, payload: { version: 1 } }],
      ] as const) {
        expect((await conforming(t, method, path, request)).statusCode).toBe(401);
      }

      // A playlist deleted longer ago than the history is kept: 410 everywhere.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 40 * DAY_MS });
      const old = (await conforming(t, 'post', base, create)).json<{ id: number }>().id;
      await conforming(t, 'delete', one, { url: `${base}/${old}`, headers: { security } });
      const stale = (await call('get', '/v3/changes', 200, { url: '/v3/changes' })).json<{ next: string }>().next;
      vi.useRealTimers();
      while ((await pruneHistory(t.db, Date.now() - 30 * DAY_MS)) > 0);
      const gone = `${base}/${old}`;
      await call('get', `${one}/versions`, 410, { url: `${gone}/versions` });
      await call('get', `${one}/versions/{version}`, 410, { url: `${gone}/versions/1` });
      await call('get', `${one}/diff`, 410, { url: `${gone}/diff?from=1` });
      await call('get', `${one}/versions/{version}/entries`, 410, { url: `${gone}/versions/1/entries` });
      await call('post', `${one}/restore`, 410, { url: `${gone}/restore`, headers: json, payload: { version: 1 } });

      const first = await call('get', '/v3/changes', 200, { url: '/v3/changes?limit=1' });
      await call('get', '/v3/changes', 200, { url: `/v3/changes?since=${first.json<{ next: string }>().next}` });
      await call('get', '/v3/changes', 400, { url: '/v3/changes?since=forged' });
      await call('get', '/v3/changes', 410, { url: `/v3/changes?since=${stale}` });
      expect((await conforming(t, 'get', '/v3/changes', { url: '/v3/changes' })).statusCode).toBe(401);

      const stream = '/v3/changes/stream';
      await call('get', stream, 400, { url: `${stream}?since=forged` });
      await call('get', stream, 410, { url: stream, headers: { 'last-event-id': stale } });
      expect((await conforming(t, 'get', stream, { url: stream })).statusCode).toBe(401);
      const ticket = await call('post', '/v3/changes/tickets', 200, { url: '/v3/changes/tickets' });
      expect(ticket.json<{ ticket: string }>().ticket).toMatch(/^[\w-]{43}$/);
      expect((await conforming(t, 'post', '/v3/changes/tickets', { url: '/v3/changes/tickets' })).statusCode).toBe(401);
    });
  }
});

describeEachDatabase('share links and the page they open, as the document says (%s)', (t) => {
  let security: string;
  beforeAll(async () => {
    security = await t.addUser();
  });

  for (const base of ['/v3/playlist', '/v3/playlists']) {
    it(`links at ${base}, /s/{token}, and their failures`, async () => {
      const one = `${base}/{playlist-id}`;
      const call = async (method: Method, path: string, status: number, request: Partial<InjectRequest>) => {
        const headers = { security, ...request.headers };
        const response = await conforming(t, method, path, { url: '', ...request, headers });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const create = { url: base, headers: { security }, payload: { name: 'Shared', songIds: [1, 2] } };
      const id = (await conforming(t, 'post', base, create)).json<{ id: number }>().id;
      const links = `${base}/${id}/links`;
      const json = { 'content-type': 'application/json' };
      const made = await call('post', `${one}/links`, 200, { url: links, headers: json, payload: {} });
      const link = made.json<{ id: number; url: string }>();
      await call('post', `${one}/links`, 400, { url: links, headers: json, payload: { expiresAt: 'soon' } });
      await call('post', `${one}/links`, 404, { url: `${base}/999999/links`, headers: json, payload: {} });
      await call('post', `${one}/links`, 413, {
        url: links,
        headers: json,
        payload: { expiresAt: 'x'.repeat(t.config.limits.bodyBytes) },
      });
      const asText = await conforming(t, 'post', `${one}/links`, {
        url: links,
        headers: { authorization: security, 'content-type': 'text/plain' },
        payload: '{}',
      });
      expect(asText.statusCode).toBe(415);
      for (let i = 1; i < 10; i++) await call('post', `${one}/links`, 200, { url: links, headers: json, payload: {} });
      await call('post', `${one}/links`, 409, { url: links, headers: json, payload: {} });
      await call('get', `${one}/links`, 200, { url: links });
      await call('get', `${one}/links`, 400, { url: `${base}/abc/links` });
      await call('get', `${one}/links`, 404, { url: `${base}/999999/links` });

      const page = new URL(link.url).pathname;
      const open = (path: string, status: number, request: InjectRequest) =>
        conforming(t, 'get', path, request).then((response) => {
          expect(response.statusCode, `${request.url} ${response.body}`).toBe(status);
        });
      await open('/s/{token}', 200, { url: page });
      await open('/s/{token}', 200, { url: page, headers: { accept: 'application/json' } });
      for (const format of ['xspf', 'jspf', 'm3u8']) await open('/s/{token}', 200, { url: `${page}?format=${format}` });
      await open('/s/{token}', 400, { url: `${page}?format=json` });
      await open('/s/{token}', 404, { url: '/s/unknown' });
      await open('/s/{token}/image', 200, { url: `${page}/image?size=64` });
      await open('/s/{token}/image', 200, { url: `${page}/image?size=64`, headers: { accept: 'image/svg+xml' } });
      await open('/s/{token}/image', 400, { url: `${page}/image?size=1` });
      await open('/s/{token}/image', 404, { url: '/s/unknown/image' });

      const revoke = `${one}/links/{link-id}`;
      await call('delete', revoke, 200, { url: `${links}/${link.id}` });
      await call('delete', revoke, 404, { url: `${links}/${link.id}` });
      await call('delete', revoke, 400, { url: `${links}/0` });
      for (const [method, path, request] of [
        ['post', `${one}/links`, { url: links, headers: json, payload: {} }],
        ['get', `${one}/links`, { url: links }],
        ['delete', revoke, { url: `${links}/1` }],
      ] as const) {
        expect((await conforming(t, method, path, request)).statusCode).toBe(401);
      }
      await conforming(t, 'delete', one, { url: `${base}/${id}`, headers: { security } });
      await call('post', `${one}/links`, 410, { url: links, headers: json, payload: {} });
      await call('get', `${one}/links`, 410, { url: links });
      await call('delete', revoke, 410, { url: `${links}/1` });
    });
  }
});

describeEachDatabase('entries and merged edits that match the document (%s)', (t) => {
  for (const base of ['/v3/playlist', '/v3/playlists']) {
    it(`entries and edits at ${base}, and their failures`, async () => {
      const security = await t.addUser();
      const created = await conforming(t, 'post', base, {
        url: base,
        headers: { security },
        payload: { name: 'Merged', songIds: [1, 2] },
      });
      const at = `${base}/${created.json<{ id: number }>().id}`;
      const entriesPath = `${base}/{playlist-id}/entries`;
      const editsPath = `${base}/{playlist-id}/edits`;
      const json = { security, 'content-type': 'application/json' };
      const expectStatus = async (method: Method, path: string, status: number, request: Partial<InjectRequest>) => {
        const response = await conforming(t, method, path, { url: '', ...request });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const read = await expectStatus('get', entriesPath, 200, { url: `${at}/entries`, headers: { security } });
      const etag = String(read.headers.etag);
      const [first] = read.json<{ entries: { entry: string }[] }>().entries;
      await expectStatus('get', entriesPath, 304, {
        url: `${at}/entries`,
        headers: { security, 'if-none-match': etag },
      });
      const page = await expectStatus('get', entriesPath, 200, { url: `${at}/entries?limit=1`, headers: { security } });
      expect(page.headers.link).toContain('rel="next"');
      await expectStatus('get', entriesPath, 409, { url: `${at}/entries?limit=1&after=e999`, headers: { security } });
      await expectStatus('get', entriesPath, 400, { url: `${at}/entries?limit=0`, headers: { security } });
      await expectStatus('get', entriesPath, 400, { url: `${base}/abc/entries`, headers: { security } });
      await expectStatus('get', entriesPath, 404, { url: `${base}/999999/entries`, headers: { security } });
      await expectStatus('get', entriesPath, 401, { url: `${at}/entries` });

      const edits = (payload: unknown, headers: Record<string, string> = json) => ({
        url: `${at}/edits`,
        headers,
        payload: payload as InjectRequest['payload'],
      });
      const insert = { op: 'insert', songIds: [3], after: first!.entry };
      const done = await expectStatus('post', editsPath, 200, edits({ base: 1, key: 'k1', ops: [insert] }));
      const brief = await expectStatus(
        'post',
        editsPath,
        200,
        edits({ ops: [{ op: 'rename', name: 'Merged' }] }, { ...json, prefer: 'return=minimal' }),
      );
      expect(brief.headers['preference-applied']).toBe('return=minimal');
      await expectStatus('post', editsPath, 400, edits({ ops: [{ op: 'move', after: null }] }));
      await expectStatus(
        'post',
        editsPath,
        409,
        edits({
          atomic: true,
          ops: [
            { op: 'remove', entry: first!.entry },
            { op: 'remove', entry: first!.entry },
          ],
        }),
      );
      await expectStatus('post', editsPath, 412, edits({ ops: [insert] }, { ...json, 'if-match': etag }));
      await expectStatus(
        'post',
        editsPath,
        413,
        edits(JSON.stringify({ ops: [{ op: 'rename', name: 'x'.repeat(t.config.limits.bodyBytes) }] })),
      );
      await expectStatus('post', editsPath, 415, edits('<x/>', { security, 'content-type': 'application/xml' }));
      await expectStatus('post', editsPath, 422, edits({ ops: [{ op: 'remove', entry: 'e999' }] }));
      await expectStatus('post', editsPath, 404, { ...edits({ ops: [insert] }), url: `${base}/999999/edits` });
      await expectStatus('post', editsPath, 401, edits({ ops: [insert] }, { 'content-type': 'application/json' }));
      expect(String(done.headers.etag)).toMatch(/^"/);
      await conforming(t, 'delete', `${base}/{playlist-id}`, { url: at, headers: { security } });
      await expectStatus('post', editsPath, 410, edits({ ops: [insert] }));
      await expectStatus('get', entriesPath, 410, { url: `${at}/entries`, headers: { security } });
    });
  }
});

describeEachDatabase('sharing that matches the document (%s)', { MIXTAPE_MEMBERS_MAX: '1' }, (t) => {
  for (const base of ['/v3/playlist', '/v3/playlists']) {
    it(`members at ${base}, and their failures`, async () => {
      const prefix = base.endsWith('s') ? 'plural' : 'singular';
      const owner = await t.addUser(`${prefix}-owner`);
      const stranger = await t.addUser(`${prefix}-stranger`);
      for (const name of ['jon', 'kim']) await t.addUser(`${prefix}-${name}`);
      const list = `${base}/{playlist-id}/members`;
      const one = `${list}/{user}`;
      const call = async (
        method: Method,
        path: string,
        status: number,
        request: Partial<InjectRequest>,
        security = owner,
      ) => {
        const headers = { security, ...request.headers };
        const response = await conforming(t, method, path, { url: '', ...request, headers });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const create = { url: base, headers: { security: owner }, payload: { name: 'Shared', songIds: [1] } };
      const id = (await conforming(t, 'post', base, create)).json<{ id: number }>().id;
      const url = `${base}/${id}/members`;
      const json = { 'content-type': 'application/json' };
      const viewer = { headers: json, payload: { role: 'viewer' } };

      await call('put', one, 200, { url: `${url}/${prefix}-jon`, ...viewer });
      await call('get', list, 200, { url });
      await call('put', one, 409, { url: `${url}/${prefix}-kim`, ...viewer });
      await call('put', one, 404, { url: `${url}/${prefix}-nobody`, ...viewer });
      await call('put', one, 400, { url: `${url}/${prefix}-jon`, headers: json, payload: { role: 'owner' } });
      await call('put', one, 413, {
        url: `${url}/${prefix}-jon`,
        headers: json,
        payload: JSON.stringify({ role: 'viewer', pad: 'x'.repeat(t.config.limits.bodyBytes) }),
      });
      await call('put', one, 415, { url: `${url}/${prefix}-jon`, headers: { 'content-type': 'application/xml' } });
      await call('get', list, 400, { url: `${base}/0/members` });
      await call('get', list, 404, { url }, stranger);
      await call('delete', one, 400, { url: `${url}/${prefix}-owner` });
      await call('delete', one, 404, { url: `${url}/${prefix}-kim` });
      const jon = basic(`${prefix}-jon`, 'correct horse');
      await call('get', list, 200, { url }, jon);
      await call('put', one, 403, { url: `${url}/${prefix}-kim`, ...viewer }, jon);
      await call('delete', one, 403, { url: `${url}/${prefix}-owner` }, jon);
      // A viewer's writes to the playlist itself.
      const playlist = `${base}/{playlist-id}`;
      const at = `${base}/${id}`;
      await call('patch', playlist, 403, { url: at, headers: json, payload: { name: 'Mine' } }, jon);
      await call('get', `${playlist}/entries`, 200, { url: `${at}/entries` }, jon);
      const rename = { ops: [{ op: 'rename', name: 'Mine' }] };
      await call('post', `${playlist}/edits`, 403, { url: `${at}/edits`, headers: json, payload: rename }, jon);
      await call('put', playlist, 403, { url: at, headers: json, payload: { name: 'Mine', songIds: [] } }, jon);
      await call(
        'post',
        `${playlist}/songs`,
        403,
        { url: `${at}/songs`, headers: json, payload: { songIds: [2] } },
        jon,
      );
      await call(
        'post',
        `${playlist}/restore`,
        403,
        { url: `${at}/restore`, headers: json, payload: { version: 1 } },
        jon,
      );
      await call('delete', playlist, 403, { url: at }, jon);
      await call('delete', one, 200, { url: `${url}/${prefix}-jon` });
      for (const [method, path, request] of [
        ['get', list, { url }],
        ['put', one, { url: `${url}/${prefix}-jon`, ...viewer }],
        ['delete', one, { url: `${url}/${prefix}-jon` }],
      ] as const) {
        expect((await conforming(t, method, path, request)).statusCode).toBe(401);
      }

      await conforming(t, 'delete', `${base}/{playlist-id}`, { url: `${base}/${id}`, headers: { security: owner } });
      await call('get', list, 410, { url });
      await call('put', one, 410, { url: `${url}/${prefix}-jon`, ...viewer });
      await call('delete', one, 410, { url: `${url}/${prefix}-jon` });
    });
  }
});

describeEachDatabase('folders that match the document (%s)', { MIXTAPE_FOLDERS_MAX: '3' }, (t) => {
  for (const [playlists, folders] of [
    ['/v3/playlist', '/v3/folder'],
    ['/v3/playlists', '/v3/folders'],
  ] as const) {
    it(`the library, folders at ${folders} and places at ${playlists}, and their failures`, async () => {
      const security = await t.addUser();
      const stranger = await t.addUser();
      const json = { 'content-type': 'application/json' };
      const call = async (
        method: Method,
        path: string,
        status: number,
        request: Partial<InjectRequest>,
        caller = security,
      ) => {
        const response = await conforming(t, method, path, {
          url: '',
          ...request,
          headers: { security: caller, ...request.headers },
        });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const id = (
        await conforming(t, 'post', playlists, {
          url: playlists,
          headers: { security },
          payload: { name: 'Filed', songIds: [1] },
        })
      ).json<{ id: number }>().id;
      const theirs = (
        await conforming(t, 'post', playlists, {
          url: playlists,
          headers: { security: stranger },
          payload: { name: 'Theirs', songIds: [] },
        })
      ).json<{ id: number }>().id;
      const one = `${folders}/{folder-id}`;
      const place = `${playlists}/{playlist-id}/place`;
      const made = await call('post', folders, 200, { url: folders, headers: json, payload: { name: 'Box' } });
      const box = made.json<{ id: number }>().id;
      const inner = (
        await call('post', folders, 200, { url: folders, headers: json, payload: { name: 'In', parent: box } })
      ).json<{ id: number }>().id;
      await call('post', folders, 400, { url: folders, headers: json, payload: {} });
      await call('post', folders, 404, { url: folders, headers: json, payload: { name: 'x', parent: 999_999 } });
      await call('post', folders, 422, {
        url: folders,
        headers: json,
        payload: { name: 'x', after: { folder: inner } },
      });
      await call('post', folders, 200, { url: folders, headers: json, payload: { name: 'Third' } });
      await call('post', folders, 409, { url: folders, headers: json, payload: { name: 'Fourth' } });
      await call('post', folders, 413, {
        url: folders,
        headers: json,
        payload: JSON.stringify({ name: 'x', pad: 'x'.repeat(t.config.limits.bodyBytes) }),
      });
      await call('post', folders, 415, {
        url: folders,
        headers: { 'content-type': 'application/xml' },
        payload: '<x/>',
      });

      await call('patch', one, 200, { url: `${folders}/${inner}`, headers: json, payload: { name: 'Inner' } });
      await call('patch', one, 400, { url: `${folders}/${inner}`, headers: json, payload: {} });
      await call('patch', one, 404, { url: `${folders}/${inner}`, headers: json, payload: { name: 'x' } }, stranger);
      await call('patch', one, 409, { url: `${folders}/${box}`, headers: json, payload: { parent: inner } });
      await call('patch', one, 422, { url: `${folders}/${box}`, headers: json, payload: { after: { folder: inner } } });
      await call('patch', one, 413, {
        url: `${folders}/${box}`,
        headers: json,
        payload: JSON.stringify({ name: 'x', pad: 'x'.repeat(t.config.limits.bodyBytes) }),
      });
      await call('patch', one, 415, {
        url: `${folders}/${box}`,
        headers: { 'content-type': 'application/xml' },
        payload: '<x/>',
      });

      await call('put', place, 200, { url: `${playlists}/${id}/place`, headers: json, payload: { folder: inner } });
      await call('put', place, 400, { url: `${playlists}/${id}/place`, headers: json, payload: {} });
      await call('put', place, 404, { url: `${playlists}/${theirs}/place`, headers: json, payload: { folder: null } });
      await call('put', place, 422, {
        url: `${playlists}/${id}/place`,
        headers: json,
        payload: { folder: box, before: { playlist: theirs } },
      });
      await call('put', place, 413, {
        url: `${playlists}/${id}/place`,
        headers: json,
        payload: JSON.stringify({ folder: null, pad: 'x'.repeat(t.config.limits.bodyBytes) }),
      });
      await call('put', place, 415, {
        url: `${playlists}/${id}/place`,
        headers: { 'content-type': 'application/xml' },
        payload: '<x/>',
      });

      const tree = await call('get', '/v3/library', 200, { url: '/v3/library' });
      expect(tree.json<{ items: unknown[] }>().items).toHaveLength(2);
      await call('get', '/v3/library', 304, {
        url: '/v3/library',
        headers: { 'if-none-match': String(tree.headers.etag) },
      });
      await call('get', playlists, 200, { url: `${playlists}?folder=${inner}` });
      await call('get', playlists, 404, { url: `${playlists}?folder=${inner}` }, stranger);

      await call('delete', one, 200, { url: `${folders}/${inner}` });
      await call('delete', one, 404, { url: `${folders}/${inner}` });
      await call('delete', one, 400, { url: `${folders}/0` });
      await conforming(t, 'delete', `${playlists}/{playlist-id}`, { url: `${playlists}/${id}`, headers: { security } });
      await call('put', place, 410, { url: `${playlists}/${id}/place`, headers: json, payload: { folder: null } });
      for (const [method, path, request] of [
        ['get', '/v3/library', { url: '/v3/library' }],
        ['post', folders, { url: folders, headers: json, payload: { name: 'x' } }],
        ['patch', one, { url: `${folders}/${box}`, headers: json, payload: { name: 'x' } }],
        ['delete', one, { url: `${folders}/${box}` }],
        ['put', place, { url: `${playlists}/${id}/place`, headers: json, payload: { folder: null } }],
      ] as const) {
        expect((await conforming(t, method, path, request)).statusCode).toBe(401);
      }
    });
  }
});

describeEachDatabase('app tokens that match the document (%s)', (t) => {
  for (const tokens of ['/v3/token', '/v3/tokens'] as const) {
    it(`tokens at ${tokens}, their failures, and a read token refused every change`, async () => {
      const security = await t.addUser();
      const json = { 'content-type': 'application/json' };
      const one = `${tokens}/{token-id}`;
      const call = async (method: Method, path: string, status: number, request: Partial<InjectRequest>) => {
        const response = await conforming(t, method, path, {
          url: '',
          ...request,
          headers: { security, ...request.headers },
        });
        expect(response.statusCode, `${method} ${path} ${response.body}`).toBe(status);
        return response;
      };
      const made = async (scope: 'read' | 'write') =>
        (await call('post', tokens, 200, { url: tokens, headers: json, payload: { name: 'App', scope } })).json<{
          id: number;
          token: string;
        }>();
      const reader = await made('read');
      const writer = await made('write');
      await call('get', tokens, 200, { url: tokens });
      await call('post', tokens, 400, { url: tokens, headers: json, payload: { name: 'App', scope: 'admin' } });
      await call('post', tokens, 413, {
        url: tokens,
        headers: json,
        payload: JSON.stringify({ name: 'x', scope: 'read', pad: 'x'.repeat(t.config.limits.bodyBytes) }),
      });
      await call('post', tokens, 415, { url: tokens, headers: { 'content-type': 'application/xml' }, payload: '<x/>' });
      for (let i = 2; i < 50; i++) await made('read');
      await call('post', tokens, 409, { url: tokens, headers: json, payload: { name: 'One too many', scope: 'read' } });
      const bearer = (token: string) => ({ security: `Bearer ${token}` });
      await call('post', tokens, 403, { url: tokens, headers: { ...json, ...bearer(writer.token) }, payload: {} });
      await call('get', tokens, 403, { url: tokens, headers: bearer(writer.token) });
      await call('delete', one, 403, { url: `${tokens}/${writer.id}`, headers: bearer(reader.token) });
      await call('delete', one, 400, { url: `${tokens}/0` });
      await call('delete', one, 404, { url: `${tokens}/999999` });

      // Every change the document lists refuses a read token, before anything else is read.
      if (tokens === '/v3/token') {
        const changes = documentedOperations().filter((op) => {
          const [method, path] = op.split(' ') as [string, string];
          const listed = operation(path, method.toLowerCase() as Method);
          return method !== 'GET' && !path.startsWith('/v3/token') && listed.security?.some((s) => 'bearer' in s);
        });
        expect(changes.length).toBeGreaterThan(20);
        for (const op of changes) {
          const [method, path] = op.split(' ') as [string, string];
          const url = path.replace(/\{[^}]+\}/g, '1');
          const lower = method.toLowerCase() as Method;
          if (path === '/v3/changes/tickets') {
            await call(lower, path, 200, { url, headers: bearer(reader.token) });
            continue;
          }
          const response = await call(lower, path, 403, {
            url,
            headers: { ...json, ...bearer(reader.token) },
            payload: '{}',
          });
          expect(response.headers['www-authenticate'], op).toBe('Bearer error="insufficient_scope"');
        }
      }
      await call('delete', one, 200, { url: `${tokens}/${reader.id}`, headers: bearer(reader.token) });
      for (const [method, path, request] of [
        ['get', tokens, { url: tokens }],
        ['post', tokens, { url: tokens, headers: json, payload: { name: 'x', scope: 'read' } }],
        ['delete', one, { url: `${tokens}/${writer.id}` }],
      ] as const) {
        expect((await conforming(t, method, path, request)).statusCode).toBe(401);
      }
      const revoked = await conforming(t, 'get', tokens, { url: tokens, headers: bearer(reader.token) });
      expect(revoked.statusCode).toBe(401);
      expect(revoked.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    });
  }
});

/** An alias is the same route as its singular path (routeWithPluralAlias), so its statuses are seen there. */
const singular = (op: string) =>
  op
    .replace('/v3/playlists', '/v3/playlist')
    .replace('/v3/songs', '/v3/song')
    .replace('/v3/folders', '/v3/folder')
    .replace('/v3/tokens', '/v3/token');

/** Answers of one operation that are not seen here, and where they are. */
const UNSEEN_ANSWERS = new Map<string, string>([
  ['GET /v3/changes/stream 200', 'a stream lasts MIXTAPE_STREAM_MAX_SECONDS: test/live/changes-stream.test.ts'],
]);

/** Statuses the document lists that no request here can bring about, and why. */
const UNSEEN = new Map<string, string>([
  ['500', 'an unexpected fault'],
  ['503', 'the database unreachable or the service busy: tests/faults-*.test.ts and covers.test.ts'],
  ['429', 'the sign-in throttle, the rate limit and the per-user bounds: throttle.test.ts, limits.test.ts'],
]);

describe('the document lists what the service answers', () => {
  it('every operation was called, and every status it lists was seen or has a reason not to be', () => {
    const notCalled = documentedOperations().filter((op) => ![...seen].some((answer) => answer.startsWith(`${op} `)));
    expect(notCalled).toEqual([]);
    for (const answer of [...seen]) seen.add(singular(answer));
    const unseen = documentedOperations().flatMap((op) => {
      const [method, path] = op.split(' ') as [string, string];
      return Object.keys(operation(path, method.toLowerCase() as Method).responses)
        .filter(
          (status) =>
            !seen.has(`${singular(op)} ${status}`) && !UNSEEN.has(status) && !UNSEEN_ANSWERS.has(`${op} ${status}`),
        )
        .map((status) => `${op} ${status}`);
    });
    expect(unseen).toEqual([]);
  });
});
