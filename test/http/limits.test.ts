import { expect, it } from 'vitest';
import { createTestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

// The default limits on what a request carries, each at its edge and one past it, and each one configurable.
describeEachDatabase('limits on %s', (t, dialect) => {
  const post = (security: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url: '/v3/playlist', headers: { security }, payload: payload as object });

  it('takes a name of 1 to 200 characters, stored exactly as sent', async () => {
    const security = await t.addUser();
    for (const name of ['x', 'é'.repeat(200), '😀'.repeat(200), '  padded  ', 'שלום عالم', 'tab\u00a0nbsp']) {
      const created = await createPlaylist(t.app, security, name, []);
      expect(created.name).toBe(name);
      const fetched = await t.app.inject({ method: 'GET', url: `/v3/playlist/${created.id}`, headers: { security } });
      expect(fetched.json<PlaylistBody>().name).toBe(name);
    }
    expect(expectError(await post(security, { name: 'x'.repeat(201), songIds: [] }), 400).errormsg).toMatch(/200/);
    expect(expectError(await post(security, { name: '', songIds: [] }), 400).errormsg).toMatch(/"name"/);
    for (const name of ['   ', '\t', 'bad\u0000nul', 'line\nbreak', 'del\u007f', 'c1\u0085']) {
      expect(expectError(await post(security, { name, songIds: [] }), 400).errormsg).toMatch(
        /blank or contain control/,
      );
    }
  });

  it('takes 0 to 10 000 song ids, integers of at least 1, duplicates allowed and order kept', async () => {
    const security = await t.addUser();
    const most = Array.from({ length: 10_000 }, (_, i) => 240 - (i % 240));
    const big = await createPlaylist(t.app, security, 'Ten thousand', most);
    expect(big.songs.map((s) => s.id)).toEqual(most);
    const fetched = await t.app.inject({ method: 'GET', url: `/v3/playlist/${big.id}`, headers: { security } });
    expect(fetched.json<PlaylistBody>().songs.map((s) => s.id)).toEqual(most);
    expect((await createPlaylist(t.app, security, 'Empty', [])).songs).toEqual([]);
    expect(expectError(await post(security, { name: 'Too many', songIds: [...most, 1] }), 400).errormsg).toMatch(
      /10000/,
    );
    for (const id of [0, -3]) {
      expect(expectError(await post(security, { name: 'Bad id', songIds: [id] }), 400).errormsg).toMatch(/at least 1/);
    }
    expectError(await post(security, { name: 'Huge id', songIds: [2 ** 53] }), 400);
  });

  it('pages with limit 1 to 100 (default 20) and offset from 0 (default 0)', async () => {
    const security = await t.addUser();
    for (let i = 0; i < 23; i++) await createPlaylist(t.app, security, `P${i}`, [1]);
    const list = (query: string) => t.app.inject({ method: 'GET', url: `/v3/playlist${query}`, headers: { security } });
    expect((await list('')).json<PlaylistBody[]>()).toHaveLength(20);
    expect((await list('?limit=1')).json<PlaylistBody[]>()).toHaveLength(1);
    expect((await list('?limit=100')).json<PlaylistBody[]>()).toHaveLength(23);
    expect((await list('?offset=20')).json<PlaylistBody[]>()).toHaveLength(3);
    expect((await list('?offset=2147483647')).json()).toEqual([]);
    expectError(await list('?limit=101'), 400);
    expectError(await list('?limit=0'), 400);
    expectError(await list('?offset=2147483648'), 400);
  });

  it('takes a search of at most 200 characters', async () => {
    const security = await t.addUser();
    const ok = await t.app.inject({
      method: 'GET',
      url: `/v3/playlist?search=${'a'.repeat(200)}`,
      headers: { security },
    });
    expect(ok.statusCode).toBe(200);
    const tooLong = await t.app.inject({
      method: 'GET',
      url: `/v3/playlist?search=${'a'.repeat(201)}`,
      headers: { security },
    });
    expect(expectError(tooLong, 400).errormsg).toMatch(/"search" query parameter must be at most 200/);
  });

  it('takes a body up to 1 MiB', async () => {
    const security = await t.addUser();
    const base = JSON.stringify({ name: 'Padded', songIds: [1], padding: '' });
    const fits = base.replace('"padding":""', `"padding":"${'x'.repeat(1_048_576 - base.length)}"`);
    expect(Buffer.byteLength(fits)).toBe(1_048_576);
    const headers = { security, 'content-type': 'application/json' };
    expect((await t.app.inject({ method: 'POST', url: '/v3/playlist', headers, payload: fits })).statusCode).toBe(200);
    const over = fits.replace('"padding":"', '"padding":"x');
    expectError(await t.app.inject({ method: 'POST', url: '/v3/playlist', headers, payload: over }), 413);
  });

  it('takes a playlist file to import up to 8 MiB', async () => {
    const security = await t.addUser();
    const headers = { security, 'content-type': 'audio/mpegurl' };
    const tracks = '#EXTINF:1,Artist - Title\nhttps://music.test/v3/song/3\n';
    const fits = `#EXTM3U\n#PLAYLIST:${'x'.repeat(8_388_608 - 19 - tracks.length)}\n${tracks}`;
    expect(Buffer.byteLength(fits)).toBe(8_388_608);
    const url = '/v3/playlist/import?name=Padded';
    const imported = await t.app.inject({ method: 'POST', url, headers, payload: fits });
    expect(imported.statusCode, imported.body).toBe(200);
    const over = `${fits}\n`;
    expect(expectError(await t.app.inject({ method: 'POST', url, headers, payload: over }), 413).errormsg).toMatch(
      /8388608/,
    );
  });

  it('answers 409 when the playlist quota is reached, and frees a slot on delete', async () => {
    const small = await createTestApp(dialect, { MIXTAPE_PLAYLISTS_PER_USER: '2' });
    try {
      const security = await small.addUser();
      const first = await createPlaylist(small.app, security, 'One', [1]);
      await createPlaylist(small.app, security, 'Two', [2]);
      const third = await small.app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security },
        payload: { name: 'Three', songIds: [3] },
      });
      expect(expectError(third, 409).errormsg).toMatch(/limit of 2 playlists/);
      await small.app.inject({ method: 'DELETE', url: `/v3/playlist/${first.id}`, headers: { security } });
      await createPlaylist(small.app, security, 'Three again', [3]);
      // Concurrent creates cannot overshoot the quota.
      const other = await small.addUser();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          small.app.inject({
            method: 'POST',
            url: '/v3/playlist',
            headers: { security: other },
            payload: { name: `C${i}`, songIds: [1] },
          }),
        ),
      );
      expect(results.filter((r) => r.statusCode === 200)).toHaveLength(2);
      expect(results.filter((r) => r.statusCode === 409)).toHaveLength(4);
    } finally {
      await small.close();
    }
  });

  it('makes every limit configurable', async () => {
    const custom = await createTestApp(dialect, {
      MIXTAPE_NAME_MAX_LENGTH: '5',
      MIXTAPE_SONGS_MAX: '2',
      MIXTAPE_PAGE_MAX: '3',
      MIXTAPE_PAGE_DEFAULT: '2',
      MIXTAPE_SEARCH_MAX_LENGTH: '4',
      MIXTAPE_BODY_LIMIT: '2048',
      MIXTAPE_IMPORT_LIMIT: '4096',
    });
    try {
      const security = await custom.addUser();
      const inject = (method: 'GET' | 'POST', url: string, payload?: object) =>
        custom.app.inject({ method, url, headers: { security }, payload });
      expectError(await inject('POST', '/v3/playlist', { name: 'sixsix', songIds: [] }), 400);
      expectError(await inject('POST', '/v3/playlist', { name: 'ok', songIds: [1, 2, 3] }), 400);
      for (let i = 0; i < 4; i++)
        expect((await inject('POST', '/v3/playlist', { name: `n${i}`, songIds: [1] })).statusCode).toBe(200);
      expect((await inject('GET', '/v3/playlist')).json<unknown[]>()).toHaveLength(2);
      expectError(await inject('GET', '/v3/playlist?limit=4'), 400);
      expectError(await inject('GET', '/v3/playlist?search=abcde'), 400);
      expectError(await inject('POST', '/v3/playlist', { name: 'big', songIds: [1], pad: 'x'.repeat(3000) }), 413);
      const file = (padding: number) =>
        custom.app.inject({
          method: 'POST',
          url: '/v3/playlist/import?name=file',
          headers: { security, 'content-type': 'audio/mpegurl' },
          payload: `#EXTM3U\n#PLAYLIST:${'x'.repeat(padding)}\nhttps://music.test/v3/song/1\n`,
        });
      expect((await file(3000)).statusCode).toBe(200);
      expectError(await file(5000), 413);
    } finally {
      await custom.close();
    }
  });
});
