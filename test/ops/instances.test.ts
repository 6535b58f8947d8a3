import { expect, it } from 'vitest';
import { describeTwoInstances } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

// Instances keep nothing that decides an answer in memory: any of them serves what another one wrote.
describeTwoInstances('two instances on one %s database', (apps, dialect) => {
  it('creates on one, lists, searches, reads and deletes on the other', async () => {
    const { one, two } = apps;
    const security = await one.addUser('shared', 'pw');
    const created = await createPlaylist(one.app, security, 'Shared Sunday', [1, 2, 3]);
    const listed = await two.app.inject({ method: 'GET', url: '/v3/playlist?search=sunday', headers: { security } });
    expect(listed.json<PlaylistBody[]>()).toEqual([created]);
    const got = await two.app.inject({ method: 'GET', url: `/v3/playlist/${created.id}`, headers: { security } });
    expect(got.json()).toEqual(created);
    const deleted = await two.app.inject({
      method: 'DELETE',
      url: `/v3/playlist/${created.id}`,
      headers: { security },
    });
    expect(deleted.statusCode).toBe(200);
    expectError(await one.app.inject({ method: 'GET', url: `/v3/playlist/${created.id}`, headers: { security } }), 410);
  });

  it('counts playlists and hands out distinct ids across instances', async () => {
    const { one, two } = apps;
    const security = await one.addUser('busy', 'pw');
    const create = (i: number) =>
      (i % 2 === 0 ? one : two).app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security },
        payload: { name: `Busy ${i}`, songIds: [i + 1] },
      });
    const indexes = Array.from({ length: 10 }, (_, i) => i);
    const creates =
      dialect === 'postgres' ? await Promise.all(indexes.map(create)) : await sequentially(indexes, create);
    expect(
      creates.map((r) => r.statusCode),
      creates.map((r) => r.body).join('\n'),
    ).toEqual(indexes.map(() => 200));
    const ids = creates.map((r) => r.json<PlaylistBody>().id);
    expect(new Set(ids).size).toBe(10);
    const total = await one.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
    expect(total.headers['x-total-count']).toBe('10');
  });
});

async function sequentially<T, R>(items: T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const item of items) results.push(await work(item));
  return results;
}
