import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestApp, type TestApp } from '../helpers/app.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { createPlaylist, type PlaylistBody } from '../helpers/requests.js';

// A restore on one instance is what every other instance answers next: JSON, files, search, cover.
describeEachEmptyDatabase('restores seen by another instance on %s', (database) => {
  let one: TestApp;
  let two: TestApp;
  beforeAll(async () => {
    one = await openTestApp(database.url);
    two = await openTestApp(database.url);
  });
  afterAll(async () => {
    await one.close();
    await two.close();
  });

  const get = (t: TestApp, url: string, security: string) =>
    t.app.inject({ method: 'GET', url, headers: { security } });
  const restore = (t: TestApp, id: number, version: number, security: string) =>
    t.app.inject({
      method: 'POST',
      url: `/v3/playlist/${id}/restore`,
      headers: { security, 'content-type': 'application/json' },
      payload: JSON.stringify({ version }),
    });

  it('never serves the version before a restore, nor a deleted playlist brought back as gone', async () => {
    const security = await one.addUser();
    const created = await createPlaylist(one.app, security, 'Before', [1, 2, 3]);
    const edited = await one.app.inject({
      method: 'PUT',
      url: `/v3/playlist/${created.id}`,
      headers: { security, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'After', songIds: [4] }),
    });
    expect(edited.statusCode).toBe(200);
    // Instance two keeps the edited answers in memory.
    const cachedJson = await get(two, `/v3/playlist/${created.id}`, security);
    const cachedCover = await get(two, `/v3/playlist/${created.id}/image?size=64`, security);
    expect((await get(two, '/v3/playlist', security)).json<PlaylistBody[]>()[0]!.name).toBe('After');

    const restored = await restore(one, created.id, 1, security);
    expect(restored.statusCode, restored.body).toBe(200);
    const json = await get(two, `/v3/playlist/${created.id}`, security);
    expect(json.json()).toEqual(created);
    expect(json.headers.etag).not.toBe(cachedJson.headers.etag);
    expect((await get(two, '/v3/playlist', security)).json()).toEqual([created]);
    expect((await get(two, '/v3/playlist?search=before', security)).json()).toEqual([created]);
    expect((await get(two, '/v3/playlist?search=after', security)).json()).toEqual([]);
    const cover = await get(two, `/v3/playlist/${created.id}/image?size=64`, security);
    expect(cover.headers.etag).not.toBe(cachedCover.headers.etag);
    const file = await get(two, `/v3/playlist/${created.id}?format=m3u8`, security);
    expect(file.body).toContain('#PLAYLIST:Before');

    expect(
      (await one.app.inject({ method: 'DELETE', url: `/v3/playlist/${created.id}`, headers: { security } })).statusCode,
    ).toBe(200);
    expect((await get(two, `/v3/playlist/${created.id}`, security)).statusCode).toBe(410);
    expect((await restore(one, created.id, 3, security)).statusCode).toBe(200);
    const back = await get(two, `/v3/playlist/${created.id}`, security);
    expect(back.statusCode).toBe(200);
    expect(back.json()).toEqual(created);
    expect((await get(two, '/v3/playlist?search=before', security)).json()).toEqual([created]);
  });
});
