import { expect, it } from 'vitest';
import { createTestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

describeEachDatabase('playlists on %s', (t, dialect) => {
  it('creates a playlist: 200, the playlist with its songs in order, Location', async () => {
    const security = await t.addUser();
    const response = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security },
      payload: { name: 'Chill Vibes', songIds: [22, 3, 11, 3] },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json<PlaylistBody>();
    expect(body.name).toBe('Chill Vibes');
    expect(body.songs.map((s) => s.id)).toEqual([22, 3, 11, 3]);
    expect(Object.keys(body.songs[0]!)).toEqual(['id', 'title', 'artist']);
    expect(body.songs[0]!.title.length).toBeGreaterThan(0);
    expect(response.headers.location).toBe(`/v3/playlist/${body.id}`);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers.vary).toContain('security');
    expect(response.headers.vary).toContain('Authorization');
  });

  it('gets one playlist as an object, never an array, on both paths', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Road Trip', [1, 2, 3]);
    for (const path of [`/v3/playlist/${created.id}`, `/v3/playlists/${created.id}`, `/v3/playlist/${created.id}/`]) {
      const response = await t.app.inject({ method: 'GET', url: path, headers: { security } });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(created);
    }
  });

  it('lists in creation order with X-Total-Count and Link next/prev', async () => {
    const security = await t.addUser();
    const empty = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual([]);
    expect(empty.headers['x-total-count']).toBe('0');
    expect(empty.headers.link).toBeUndefined();

    const made: PlaylistBody[] = [];
    for (let i = 0; i < 5; i++) made.push(await createPlaylist(t.app, security, `List ${i}`, [i + 1, i + 2]));
    const page = await t.app.inject({ method: 'GET', url: '/v3/playlist?limit=2&offset=2', headers: { security } });
    expect(page.statusCode).toBe(200);
    expect(page.json()).toEqual(made.slice(2, 4));
    expect(page.headers['x-total-count']).toBe('5');
    expect(page.headers.link).toBe(
      '</v3/playlist?limit=2&offset=4>; rel="next", </v3/playlist?limit=2&offset=0>; rel="prev"',
    );
    const all = await t.app.inject({ method: 'GET', url: '/v3/playlists', headers: { security } });
    expect(all.json<PlaylistBody[]>().map((p) => p.id)).toEqual(made.map((p) => p.id));
    const past = await t.app.inject({ method: 'GET', url: '/v3/playlist?offset=50', headers: { security } });
    expect(past.json()).toEqual([]);
    expect(past.headers['x-total-count']).toBe('5');
  });

  it('deletes: 200 with an empty body, then 410 for the owner on get and delete, saying how to restore it', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Short-lived', [5]);
    const deleted = await t.app.inject({
      method: 'DELETE',
      url: `/v3/playlists/${created.id}`,
      headers: { security },
    });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.body).toBe('');
    for (const method of ['GET', 'DELETE'] as const) {
      const again = await t.app.inject({ method, url: `/v3/playlist/${created.id}`, headers: { security } });
      expect(expectError(again, 410).errormsg).toBe(
        `This playlist is already deleted. You can restore it: POST /v3/playlist/${created.id}/restore with ` +
          `{"version": 2} (its delete's version), or on the server \`mixtape playlist restore ${created.id}\`.`,
      );
    }
    const list = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
    expect(list.json()).toEqual([]);
    expect(list.headers['x-total-count']).toBe('0');
    // What the answer says to send brings it back as it was.
    const restored = await t.app.inject({
      method: 'POST',
      url: `/v3/playlist/${created.id}/restore`,
      headers: { security, 'content-type': 'application/json' },
      payload: '{"version": 2}',
    });
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json<PlaylistBody>()).toMatchObject({ id: created.id, name: 'Short-lived', songs: [{ id: 5 }] });
  });

  it('never reuses an id', async () => {
    const security = await t.addUser();
    const first = await createPlaylist(t.app, security, 'First', [1]);
    await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${first.id}`, headers: { security } });
    const second = await createPlaylist(t.app, security, 'Second', [1]);
    expect(second.id).toBeGreaterThan(first.id);
  });

  it('keeps every user to their own playlists on every endpoint (404, as if absent)', async () => {
    const alice = await t.addUser();
    const bob = await t.addUser();
    const mine = await createPlaylist(t.app, alice, 'Alice only', [7, 8]);
    const gone = await createPlaylist(t.app, alice, 'Alice deleted', [9]);
    await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${gone.id}`, headers: { security: alice } });

    for (const id of [mine.id, gone.id]) {
      expectError(await t.app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security: bob } }), 404);
      expectError(await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${id}`, headers: { security: bob } }), 404);
    }
    const bobList = await t.app.inject({
      method: 'GET',
      url: '/v3/playlist?search=alice',
      headers: { security: bob },
    });
    expect(bobList.json()).toEqual([]);
    const bobAll = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: bob } });
    expect(bobAll.json()).toEqual([]);
    const still = await t.app.inject({ method: 'GET', url: `/v3/playlist/${mine.id}`, headers: { security: alice } });
    expect(still.json()).toEqual(mine);
  });

  it('answers 404 for an unknown playlist and an unknown route', async () => {
    const security = await t.addUser();
    expect(
      expectError(await t.app.inject({ method: 'GET', url: '/v3/playlist/987654321', headers: { security } }), 404)
        .errormsg,
    ).toBe('No such playlist.');
    expectError(await t.app.inject({ method: 'GET', url: '/v3/nothing-here', headers: { security } }), 404);
    expectError(await t.app.inject({ method: 'GET', url: '/v2/playlist' }), 404);
  });

  it('answers 405 with Allow for a method a known path does not have', async () => {
    const security = await t.addUser();
    const post = await t.app.inject({ method: 'POST', url: '/v3/playlist/1', headers: { security } });
    expectError(post, 405);
    expect(post.headers.allow).toBe('DELETE, GET, HEAD, PATCH, PUT');
    const songs = await t.app.inject({ method: 'GET', url: '/v3/playlist/1/songs', headers: { security } });
    expectError(songs, 405);
    expect(songs.headers.allow).toBe('POST');
    const patch = await t.app.inject({ method: 'PATCH', url: '/v3/playlists', headers: { security } });
    expectError(patch, 405);
    expect(patch.headers.allow).toBe('GET, HEAD, POST');
  });

  it('answers 422 naming the song ids that are not in the catalog, and creates nothing', async () => {
    const security = await t.addUser();
    const response = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security },
      payload: { name: 'Ghosts', songIds: [1, 999_999, 2, 888_888, 999_999] },
    });
    const body = expectError(response, 422);
    expect(body.errormsg).toContain('999999');
    expect(body.errormsg).toContain('888888');
    const list = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
    expect(list.json()).toEqual([]);
  });

  it('reads the getting-started curl body (form content type) as JSON with the security header only', async () => {
    const security = await t.addUser();
    const payload = '{"name": "Chill Vibes", "songIds": [22, 3, 11, 45, 54]}';
    const post = (headers: Record<string, string>, body = payload) =>
      t.app.inject({ method: 'POST', url: '/v3/playlists', headers, payload: body });
    const form = 'application/x-www-form-urlencoded';

    const viaSecurity = await post({ security, 'content-type': form });
    expect(viaSecurity.statusCode).toBe(200);
    expect(viaSecurity.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([22, 3, 11, 45, 54]);
    expect((await post({ security, 'content-type': 'text/plain' })).statusCode).toBe(200);
    expectError(await post({ authorization: security, 'content-type': form }), 415);
    expectError(await post({ security, 'content-type': 'text/plain' }, 'name=Chill'), 415);
    expectError(await post({ security, 'content-type': 'application/xml' }, '<playlist/>'), 415);
    expect((await post({ authorization: security, 'content-type': 'application/vnd.mixtape+json' })).statusCode).toBe(
      200,
    );
  });

  it('answers 400 for malformed JSON, missing fields and wrong types, without coercion', async () => {
    const security = await t.addUser();
    const json = { security, 'content-type': 'application/json' };
    const cases: [string, RegExp][] = [
      ['{"name": "x", ', /not valid JSON/],
      ['', /empty/],
      ['[]', /JSON object/],
      ['"just a string"', /JSON object/],
      ['{"songIds": [1]}', /"name" is required/],
      ['{"name": "x"}', /"songIds" is required/],
      ['{"name": 5, "songIds": []}', /"name" must be a string/],
      ['{"name": "x", "songIds": ["1"]}', /"songIds\[0\]" must be an integer/],
      ['{"name": "x", "songIds": [1.5]}', /"songIds\[0\]" must be an integer/],
      ['{"name": "x", "songIds": "1,2"}', /"songIds" must be an array/],
      ['{"name": "x", "songIds": null}', /"songIds" must be an array/],
      ['{"name": ["x"], "songIds": []}', /"name" must be a string/],
      ['{"name": "x", "songIds": [true]}', /must be an integer/],
    ];
    for (const [payload, message] of cases) {
      const response = await t.app.inject({ method: 'POST', url: '/v3/playlist', headers: json, payload });
      expect(expectError(response, 400).errormsg, payload).toMatch(message);
    }
  });

  it('ignores unknown fields in a body', async () => {
    const security = await t.addUser();
    const response = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security },
      payload: { name: 'Extra', songIds: [1], colour: 'blue', id: 12345 },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json<PlaylistBody>().id).not.toBe(12345);
  });

  it('answers 400 for a bad playlist id or query parameter', async () => {
    const security = await t.addUser();
    for (const id of ['abc', '0', '-1', '1.5', '9007199254740992', '1e3x', '%20']) {
      const response = await t.app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security } });
      expect(expectError(response, 400).errormsg, id).toMatch(/playlist-id/);
    }
    for (const query of ['limit=abc', 'limit=0', 'limit=101', 'offset=-1', 'offset=2147483648', 'limit=1&limit=2']) {
      const response = await t.app.inject({ method: 'GET', url: `/v3/playlist?${query}`, headers: { security } });
      expect(expectError(response, 400).errormsg, query).toMatch(/"(limit|offset)" query parameter/);
    }
  });

  it('answers 413 for a body over the size limit', async () => {
    const security = await t.addUser();
    const payload = JSON.stringify({ name: 'Big', songIds: [1], padding: 'x'.repeat(t.config.limits.bodyBytes) });
    const response = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json' },
      payload,
    });
    expect(expectError(response, 413).errormsg).toContain(String(t.config.limits.bodyBytes));
  });

  it('answers the health, readiness and metrics endpoints without a credential', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok' });
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('mixtape_http_request_duration_seconds');
  });

  it('answers 500 with a generic message and no internals when the database breaks', async () => {
    const broken = await createTestApp(dialect);
    try {
      const security = await broken.addUser();
      const created = await createPlaylist(broken.app, security, 'Doomed', [1]);
      await broken.db.kysely.schema.dropTable('playlist_songs').execute();
      const response = await broken.app.inject({
        method: 'GET',
        url: `/v3/playlist/${created.id}`,
        headers: { security },
      });
      const body = expectError(response, 500);
      expect(body.errormsg).not.toMatch(/playlist_songs|select|sql|table/i);
      expect(body.errormsg).toMatch(/entry/);
    } finally {
      await broken.close();
    }
  });

  it('answers 503 with Retry-After while shutting down', async () => {
    const closing = await createTestApp(dialect);
    try {
      const security = await closing.addUser();
      closing.app.markClosing();
      const response = await closing.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
      expectError(response, 503);
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      expectError(await closing.app.inject({ method: 'GET', url: '/readyz' }), 503);
    } finally {
      await closing.close();
    }
  });
});

describeEachDatabase('queries per page on %s', (t) => {
  it('reads a whole page, with its songs, in the same number of queries whatever its size', async () => {
    const security = await t.addUser();
    for (let i = 0; i < 30; i++) await createPlaylist(t.app, security, `Counted ${i}`, [1, 2, 3, i + 1]);
    const count = async (url: string) => {
      await t.app.inject({ method: 'GET', url, headers: { security } }); // warm the credential cache
      const before = t.queries.length;
      const response = await t.app.inject({ method: 'GET', url, headers: { security } });
      expect(response.statusCode).toBe(200);
      // A search reads the caller's documents in slices whose number depends on the library, not on the page.
      const read = t.queries.slice(before);
      const slices = read.filter((query) => /from "playlist_documents"/.test(query.sql)).length;
      expect(slices).toBeLessThanOrEqual(url.includes('search=') ? 5 : 0);
      return read.length - slices;
    };
    const small = await count('/v3/playlist?limit=1');
    const large = await count('/v3/playlist?limit=30');
    expect(large).toBe(small);
    expect(large).toBeLessThanOrEqual(3);
    const searchSmall = await count('/v3/playlist?limit=1&search=counted');
    const searchLarge = await count('/v3/playlist?limit=30&search=counted');
    expect(searchLarge).toBe(searchSmall);
    expect(searchLarge).toBeLessThanOrEqual(3);
  });
});

describeEachDatabase('edge values on %s', (t) => {
  it('refuses numbers that coerce to infinity in a query or path with 400', async () => {
    const security = await t.addUser();
    for (const url of [
      '/v3/playlist?limit=Infinity',
      '/v3/playlist?offset=-Infinity',
      '/v3/song?limit=1e999',
      '/v3/playlist/Infinity',
      '/v3/playlist/1e400',
      '/v3/song/-Infinity',
    ]) {
      expect(expectError(await t.app.inject({ method: 'GET', url, headers: { security } }), 400).errormsg, url).toMatch(
        /must be an integer/,
      );
    }
  });

  it('answers a malformed URL or an over-long id with the error body', async () => {
    const security = await t.addUser();
    expectError(await t.app.inject({ method: 'GET', url: '/v3/playlist/%zz', headers: { security } }), 400);
    expectError(
      await t.app.inject({ method: 'GET', url: `/v3/playlist/${'1'.repeat(300)}`, headers: { security } }),
      414,
    );
  });

  it('refuses a name with an unpaired surrogate, and keeps a surrogate pair', async () => {
    const security = await t.addUser();
    const lone = await t.app.inject({
      method: 'POST',
      url: '/v3/playlist',
      headers: { security, 'content-type': 'application/json' },
      payload: '{"name": "a\\ud800b", "songIds": []}',
    });
    expectError(lone, 400);
    const pair = await createPlaylist(t.app, security, 'a\ud83c\udfb5b', []);
    const fetched = await t.app.inject({ method: 'GET', url: `/v3/playlist/${pair.id}`, headers: { security } });
    expect(fetched.json<PlaylistBody>().name).toBe('a🎵b');
  });
});
