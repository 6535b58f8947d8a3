import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestApp, type TestApp } from '../helpers/app.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

// Instances keep nothing that decides an answer in memory: any of them serves what another one wrote.
describeEachEmptyDatabase('two instances on one %s database', (database, dialect) => {
  let one: TestApp;
  let two: TestApp;
  beforeAll(async () => {
    // Two PostgreSQL instances start at the same moment (migrations and seeding must not collide). Two SQLite
    // instances in one process would block each other's thread on the file lock, so they start one by one here;
    // separate processes wait for each other instead (see the crash test).
    if (dialect === 'postgres') [one, two] = await Promise.all([openTestApp(database.url), openTestApp(database.url)]);
    else {
      one = await openTestApp(database.url);
      two = await openTestApp(database.url);
    }
  });
  afterAll(async () => {
    await one.close();
    await two.close();
  });

  it('creates on one, lists, searches, reads and deletes on the other', async () => {
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
