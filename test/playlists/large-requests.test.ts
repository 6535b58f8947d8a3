import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

/**
 * The heaviest requests the limits allow, answered whole and in order although the service reads and writes them a
 * piece at a time; and another user's playlist costing what a missing one does, so that its existence and size
 * cannot be told from the time of the answer.
 */

const LONG = 1000;
const longSongs = (offset: number) => Array.from({ length: LONG }, (_v, i) => 1 + ((i * 7 + offset) % 240));

describeEachDatabase('large requests on %s', (t) => {
  it('lists and searches a page of long playlists whole, every song in its place', async () => {
    const security = await t.addUser();
    // Created together: long creates are let through a few at a time, and every one completes.
    const created = await Promise.all(
      Array.from({ length: 5 }, (_v, i) => createPlaylist(t.app, security, `long ${i} marker`, longSongs(i))),
    );
    for (const [i, playlist] of created.entries()) expect(playlist.songs.map((s) => s.id)).toEqual(longSongs(i));
    created.sort((a, b) => a.id - b.id);

    for (const url of ['/v3/playlist?limit=5', '/v3/playlist?limit=5&search=marker']) {
      const response = await t.app.inject({ method: 'GET', url, headers: { security } });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.headers['x-total-count']).toBe('5');
      const page = response.json<PlaylistBody[]>();
      expect(page.map((p) => p.id)).toEqual(created.map((p) => p.id));
      for (const [i, playlist] of page.entries()) {
        expect(playlist).toEqual(created[i]);
        expect(Object.keys(playlist)).toEqual(['id', 'name', 'songs']);
      }
    }
    // A page that starts in the middle still reads each playlist whole.
    const tail = await t.app.inject({ method: 'GET', url: '/v3/playlist?limit=2&offset=3', headers: { security } });
    expect(tail.json<PlaylistBody[]>()).toEqual(created.slice(3));
  });

  it("answers a member's page of long playlists as their answers joined, with its length, compressed or not", async () => {
    const owner = await t.addUser('long-owner');
    const member = await t.addUser('long-member');
    const shared: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { id } = await createPlaylist(t.app, owner, `long shared ${i} marker`, longSongs(i));
      const share = await t.app.inject({
        method: 'PUT',
        url: `/v3/playlist/${id}/members/long-member`,
        headers: { security: owner, 'content-type': 'application/json' },
        payload: JSON.stringify({ role: i === 1 ? 'editor' : 'viewer' }),
      });
      expect(share.statusCode, share.body).toBe(200);
      shared.push(id);
    }
    // Each playlist's answer to the member, as its own GET gives it: a page is these bytes in an array.
    const answers: Buffer[] = [];
    for (const id of shared) {
      answers.push((await t.app.inject({ url: `/v3/playlist/${id}`, headers: { security: member } })).rawPayload);
    }
    const joined = Buffer.concat([
      Buffer.from('['),
      Buffer.concat(answers.flatMap((a, i) => (i === 0 ? [a] : [Buffer.from(','), a]))),
      Buffer.from(']'),
    ]);
    expect(joined.length).toBeGreaterThan(65_536);

    for (const url of [
      '/v3/playlist?scope=shared',
      '/v3/playlist?scope=shared&search=marker',
      '/v3/playlist?scope=all',
    ]) {
      const plain = await t.app.inject({ url, headers: { security: member } });
      expect(plain.statusCode, url).toBe(200);
      expect(plain.rawPayload.equals(joined), url).toBe(true);
      expect(plain.headers['content-length'], url).toBe(String(joined.length));
      expect(plain.headers['x-total-count'], url).toBe('3');
      const head = await t.app.inject({ method: 'HEAD', url, headers: { security: member } });
      expect(head.headers['content-length'], url).toBe(String(joined.length));
      expect(head.headers.etag, url).toBe(plain.headers.etag);
      for (const [coding, decode] of [
        ['gzip', gunzipSync],
        ['br', brotliDecompressSync],
      ] as const) {
        const coded = await t.app.inject({ url, headers: { security: member, 'accept-encoding': coding } });
        expect(coded.headers['content-encoding'], `${url} ${coding}`).toBe(coding);
        expect(decode(coded.rawPayload).equals(joined), `${url} ${coding}`).toBe(true);
        expect(coded.headers.etag, `${url} ${coding}`).toBe(plain.headers.etag);
      }
      const again = await t.app.inject({
        url,
        headers: { security: member, 'if-none-match': String(plain.headers.etag) },
      });
      expect(again.statusCode, url).toBe(304);
    }
  });

  it("reads no song of another user's playlist: it costs what a missing one does", async () => {
    const owner = await t.addUser();
    const stranger = await t.addUser();
    const { id } = await createPlaylist(t.app, owner, 'not yours', longSongs(0));
    // Sign the stranger in first, and let the playlist cache catch up with the create, so that only the
    // playlist's own statements are counted.
    await t.app.inject({ method: 'GET', url: '/v3/playlist?limit=1', headers: { security: stranger } });
    await t.app.inject({ method: 'GET', url: `/v3/playlist/${id + 1000}`, headers: { security: stranger } });

    const statements = async (playlistId: number) => {
      const before = t.queries.length;
      expectError(
        await t.app.inject({ method: 'GET', url: `/v3/playlist/${playlistId}`, headers: { security: stranger } }),
        404,
      );
      return t.queries.slice(before).map((q) => q.sql);
    };
    const missing = await statements(Number.MAX_SAFE_INTEGER);
    const foreign = await statements(id);
    // The same statements, run the same way: the owner is part of the first query, so no song row is read.
    expect(foreign).toEqual(missing);
    expect(foreign.join('\n')).toMatch(/owner_id/);
    // Once the owner has read it, it is answered from memory, but never to the stranger: their request still
    // costs what a missing one does.
    await t.app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security: owner } });
    expect(await statements(id)).toEqual(missing);
  });

  it("edits of another user's playlist read none of its songs: each costs what a missing one does", async () => {
    const owner = await t.addUser();
    const stranger = await t.addUser();
    const { id } = await createPlaylist(t.app, owner, 'not yours', longSongs(0));
    await t.app.inject({ method: 'GET', url: '/v3/playlist?limit=1', headers: { security: stranger } });

    const edits = [
      { method: 'PATCH', path: '', type: 'application/merge-patch+json', body: { name: 'mine now' } },
      {
        method: 'PATCH',
        path: '',
        type: 'application/json-patch+json',
        body: [{ op: 'test', path: '/songs/999/id', value: 1 }],
      },
      { method: 'PUT', path: '', type: 'application/json', body: { name: 'mine now', songIds: [1] } },
      { method: 'POST', path: '/songs', type: 'application/json', body: { songIds: [1] } },
    ] as const;
    for (const edit of edits) {
      const statements = async (playlistId: number) => {
        const before = t.queries.length;
        const answer = await t.app.inject({
          method: edit.method,
          url: `/v3/playlist/${playlistId}${edit.path}`,
          headers: { security: stranger, 'content-type': edit.type },
          payload: JSON.stringify(edit.body),
        });
        expectError(answer, 404);
        return t.queries.slice(before).map((q) => q.sql);
      };
      const what = `${edit.method} ${edit.type}`;
      const missing = await statements(Number.MAX_SAFE_INTEGER);
      const foreign = await statements(id);
      expect(foreign, what).toEqual(missing);
      // On PostgreSQL the access read counts an edited playlist's songs, but only in a row it returns: one the caller
      // owns or is a member of. No other statement touches them.
      const others = foreign.filter((statement) => !/prepared: playlist-access/.test(statement));
      expect(others.join('\n'), what).not.toMatch(/playlist_songs/);
    }
    // The owner's own edit still reads and writes them.
    const renamed = await t.app.inject({
      method: 'PATCH',
      url: `/v3/playlist/${id}`,
      headers: { security: owner, 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ name: 'renamed' }),
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json<PlaylistBody>().songs).toHaveLength(LONG);
  });
});
