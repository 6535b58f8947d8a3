import { afterAll, beforeAll, expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { openTestApp, type TestApp } from '../helpers/app.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { createPlaylist, type PlaylistBody } from '../helpers/requests.js';

// Two instances on one database, in this process: what one of them has kept in memory never outlives a delete made
// through the other, even when the first thing it kept came from a page read before its cache first looked at the
// database; and a catalog change made through an instance's own read connection reaches its own cache.
describeEachEmptyDatabase('the playlist cache on %s', (database) => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await openTestApp(database.url);
    b = await openTestApp(database.url);
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  const get = (t: TestApp, security: string, url: string) =>
    t.app.inject({ method: 'GET', url, headers: { security } });

  it('never serves a playlist that a page put in memory before a delete through another instance', async () => {
    const security = await a.addUser('first-look', 'pw');
    const made = await createPlaylist(a.app, security, 'Soon gone', [1, 2, 3]);
    // B's first request is a page: it keeps the playlist without having looked at the database's changes yet.
    expect((await get(b, security, '/v3/playlist')).json<PlaylistBody[]>().map((p) => p.id)).toContain(made.id);
    const deleted = await a.app.inject({ method: 'DELETE', url: `/v3/playlist/${made.id}`, headers: { security } });
    expect(deleted.statusCode).toBe(200);
    expect((await get(b, security, `/v3/playlist/${made.id}`)).statusCode).toBe(410);
    expect((await get(b, security, `/v3/playlist/${made.id}`)).statusCode).toBe(410);
  });

  it('refuses every door to a playlist another instance deleted after this one granted its owner access', async () => {
    const security = await a.addUser('known-owner', 'pw');
    const stranger = await a.addUser('known-stranger', 'pw');
    const made = await createPlaylist(a.app, security, 'Known here', [5, 6]);
    const url = `/v3/playlist/${made.id}`;
    // B reads it twice: its owner is known there, and its answer kept.
    expect((await get(b, security, url)).statusCode).toBe(200);
    expect((await get(b, security, url)).statusCode).toBe(200);
    expect((await a.app.inject({ method: 'DELETE', url, headers: { security } })).statusCode).toBe(200);
    expect((await get(b, security, url)).statusCode).toBe(410);
    expect((await get(b, security, `${url}?format=xspf`)).statusCode).toBe(410);
    expect((await get(b, security, `${url}/image`)).statusCode).toBe(410);
    const rename = await b.app.inject({
      method: 'PATCH',
      url,
      headers: { security, 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ name: 'too late' }),
    });
    expect(rename.statusCode).toBe(410);
    expect((await b.app.inject({ method: 'DELETE', url, headers: { security } })).statusCode).toBe(410);
    expect((await get(b, stranger, url)).statusCode).toBe(404);
  });

  it("shows a catalog change made through the instance's own connection in its next answers", async () => {
    const security = await a.addUser('own-import', 'pw');
    const made = await createPlaylist(a.app, security, 'Renamed inside', [4]);
    const before = (await get(a, security, `/v3/playlist/${made.id}`)).json<PlaylistBody>();
    const song = before.songs[0]!;
    await importCatalog(a.db, [{ id: song.id, title: `${song.title} (live)`, artist: song.artist }]);
    const after = (await get(a, security, `/v3/playlist/${made.id}`)).json<PlaylistBody>();
    expect(after.songs[0]!.title).toBe(`${song.title} (live)`);
    const page = (await get(a, security, '/v3/playlist')).json<PlaylistBody[]>();
    expect(page.find((p) => p.id === made.id)?.songs[0]?.title).toBe(`${song.title} (live)`);
  });
});
