import { expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { readRules } from '../../src/smart/rules.js';
import { playlistStore, type PlaylistStore } from '../../src/playlists/write/store.js';
import { followsCatalog, refreshAfterCatalogImport, refreshSmartPlaylists } from '../../src/smart/smart.refresh.js';
import { describeTwoInstances } from '../helpers/each-database.js';
import { sendAs, type PlaylistBody } from '../helpers/requests.js';

const limits = { songsMax: 1000 };
const wired = { match: 'all', conditions: [{ field: 'title', op: 'startsWith', value: 'smart wire' }] };

it('tells which rules a catalog import can change', () => {
  const read = (rules: unknown) => readRules(rules, limits);
  expect(followsCatalog(read(wired))).toBe(true);
  expect(followsCatalog(read({ match: 'all', conditions: [{ field: 'playlist', op: 'in', value: 3 }] }))).toBe(false);
  expect(
    followsCatalog(
      read({ match: 'any', conditions: [{ match: 'all', conditions: [{ field: 'playlist', op: 'in', value: 3 }] }] }),
    ),
  ).toBe(false);
  // Songs not in a playlist, every song, or an order by a song's field all change with the catalog.
  expect(followsCatalog(read({ match: 'all', conditions: [{ field: 'playlist', op: 'notIn', value: 3 }] }))).toBe(true);
  expect(followsCatalog(read({ match: 'all', conditions: [] }))).toBe(true);
  expect(
    followsCatalog(
      read({ match: 'all', conditions: [{ field: 'playlist', op: 'in', value: 3 }], sort: [{ field: 'added' }] }),
    ),
  ).toBe(true);
});

describeTwoInstances('smart playlists after a catalog import, on %s', (apps) => {
  const versions = async (id: number, security: string) => {
    const listed = await sendAs(apps.two.app, 'GET', `/v3/playlist/${id}/versions`, security);
    expect(listed.statusCode, listed.body).toBe(200);
    return listed.json<{ version: number; change: string }[]>().map((r) => [r.version, r.change]);
  };
  const failures: unknown[] = [];
  const refresh = () =>
    refreshAfterCatalogImport(apps.one.db, limits, (error) => {
      failures.push(error);
    });

  it('answers the songs an import adds on the next read of another instance, as a refresh revision', async () => {
    const security = await apps.one.addUser();
    const made = await sendAs(apps.one.app, 'POST', '/v3/playlist', security, { name: 'Wired', rules: wired });
    expect(made.statusCode, made.body).toBe(200);
    const { id, songs } = made.json<PlaylistBody>();
    expect(songs).toEqual([]);
    // A playlist whose rules name only a playlist is not looked at (an import cannot change it).
    const follower = await sendAs(apps.one.app, 'POST', '/v3/playlist', security, {
      name: 'Follower',
      rules: { match: 'all', conditions: [{ field: 'playlist', op: 'in', value: id }] },
    });
    expect(follower.statusCode, follower.body).toBe(200);
    // Read once on the second instance, so that it keeps the answer.
    expect((await sendAs(apps.two.app, 'GET', `/v3/playlist/${id}`, security)).json<PlaylistBody>().songs).toEqual([]);

    await importCatalog(apps.one.db, [{ title: 'Smart Wire One', artist: 'The Refreshers', genre: 'Test' }]);
    const refreshed = await refresh();
    expect(refreshed.changed).toEqual([id]);
    expect(refreshed.checked).toBeGreaterThanOrEqual(1);
    const read = await sendAs(apps.two.app, 'GET', `/v3/playlist/${id}`, security);
    expect(read.json<PlaylistBody>().songs.map((s) => s.title)).toEqual(['Smart Wire One']);
    expect(await versions(id, security)).toEqual([
      [2, 'refresh'],
      [1, 'create'],
    ]);
    // The follower follows the playlist it names, through that playlist's refresh.
    const followed = await sendAs(apps.two.app, 'GET', `/v3/playlist/${follower.json<PlaylistBody>().id}`, security);
    expect(followed.json<PlaylistBody>().songs.map((s) => s.title)).toEqual(['Smart Wire One']);

    // An import that changes nothing the playlist shows writes no revision.
    await importCatalog(apps.one.db, [{ title: 'Something else', artist: 'Nobody', genre: 'Test' }]);
    expect((await refresh()).changed).toEqual([]);
    expect(await versions(id, security)).toHaveLength(2);
    expect(failures).toEqual([]);
  });

  it('reads the songs again in its write when a playlist the rules name changed after they were read', async () => {
    const security = await apps.one.addUser();
    const source = await sendAs(apps.one.app, 'POST', '/v3/playlist', security, { name: 'Source', songIds: [1, 2] });
    expect(source.statusCode, source.body).toBe(200);
    const sourceId = source.json<PlaylistBody>().id;
    const made = await sendAs(apps.one.app, 'POST', '/v3/playlist', security, {
      name: 'Follows the source',
      rules: { match: 'all', conditions: [{ field: 'playlist', op: 'in', value: sourceId }] },
    });
    expect(made.statusCode, made.body).toBe(200);
    const { id } = made.json<PlaylistBody>();
    // A store of its own, which only the refresh under test listens to.
    const bare = playlistStore(apps.one.db);
    const owner = await bare.edit(sourceId, 0, 'edit', (current) => ({ unchanged: true, result: current.ownerId }));
    const ownerId = owner!.result;
    // Between the refresh's read of the songs and its write, song 3 goes into the source (once: the refresh that
    // this write queues in turn finds the songs as they are).
    let raced = false;
    const racing: PlaylistStore = {
      ...bare,
      edit: async (...args: Parameters<PlaylistStore['edit']>) => {
        if (raced) return bare.edit(...args);
        raced = true;
        await bare.edit(sourceId, ownerId, 'edit', (current) => ({
          name: current.name,
          slots: [...current.entries.map((e) => ({ songId: e.songId, entry: e.entry })), { songId: 3 }],
          result: undefined,
        }));
        return bare.edit(...args);
      },
    } as PlaylistStore;
    const refreshed = await refreshSmartPlaylists(apps.one.db, racing, [id], limits);
    expect(refreshed.changed).toEqual([id]);
    const read = await sendAs(apps.two.app, 'GET', `/v3/playlist/${id}`, security);
    expect(read.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([1, 2, 3]);
  });
});
