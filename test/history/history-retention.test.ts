import { afterEach, expect, it, vi } from 'vitest';
import { pruneHistory } from '../../src/history/pruning.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

const DAY_MS = 24 * 60 * 60 * 1000;

describeEachDatabase('history retention on %s', (t) => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const send = (method: 'GET' | 'POST' | 'DELETE', url: string, security: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: { security, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });
  const append = async (id: number, security: string, songId: number) => {
    expect((await send('POST', `/v3/playlist/${id}/songs`, security, { songIds: [songId] })).statusCode).toBe(200);
  };
  const versions = async (id: number, security: string) =>
    (await send('GET', `/v3/playlist/${id}/versions`, security)).json<{ version: number }[]>().map((r) => r.version);

  it('prunes revisions older than the retention, never a current one, and every kept version still reads whole', async () => {
    const security = await t.addUser();
    // Written 40 days ago (the service's clock set back).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 40 * DAY_MS });
    const mixed = await createPlaylist(t.app, security, 'Mixed', [1, 2, 3]);
    await append(mixed.id, security, 4);
    await append(mixed.id, security, 5);
    const old = await createPlaylist(t.app, security, 'Old', [6]);
    await append(old.id, security, 7);
    const gone = await createPlaylist(t.app, security, 'Gone long ago', [8]);
    expect((await send('DELETE', `/v3/playlist/${gone.id}`, security)).statusCode).toBe(200);
    const recent = await createPlaylist(t.app, security, 'Deleted lately', [9, 10]);
    vi.useRealTimers();
    await append(mixed.id, security, 11);
    await append(mixed.id, security, 12);
    expect((await send('DELETE', `/v3/playlist/${recent.id}`, security)).statusCode).toBe(200);
    const before = await send('GET', `/v3/playlist/${mixed.id}/versions/4`, security);
    expect(before.statusCode).toBe(200);

    let rounds = 0;
    while ((await pruneHistory(t.db, Date.now() - 30 * DAY_MS)) > 0 && rounds < 10) rounds++;
    expect(rounds).toBeGreaterThan(0);

    expect(await versions(mixed.id, security)).toEqual([5, 4]);
    const kept = await send('GET', `/v3/playlist/${mixed.id}/versions/4`, security);
    expect(kept.body).toBe(before.body);
    expect(kept.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([1, 2, 3, 4, 5, 11]);
    const current = await send('GET', `/v3/playlist/${mixed.id}`, security);
    expect((await send('GET', `/v3/playlist/${mixed.id}/versions/5`, security)).body).toBe(current.body);
    expect(expectError(await send('GET', `/v3/playlist/${mixed.id}/versions/3`, security), 410).errormsg).toContain(
      'no longer kept',
    );
    expectError(await send('GET', `/v3/playlist/${mixed.id}/versions/6`, security), 404);

    // A playlist not edited for longer than the retention keeps its current revision.
    expect(await versions(old.id, security)).toEqual([2]);
    expectError(await send('GET', `/v3/playlist/${old.id}/versions/1`, security), 410);

    // Deleted longer ago than the retention: no history, no restore; still 410 as deleted, saying so.
    const unrestorable = 'This playlist is already deleted. Its history is no longer kept, so it cannot be restored.';
    for (const refused of [
      await send('GET', `/v3/playlist/${gone.id}/versions`, security),
      await send('POST', `/v3/playlist/${gone.id}/restore`, security, { version: 1 }),
      await send('GET', `/v3/playlist/${gone.id}`, security),
    ]) {
      expect(expectError(refused, 410).errormsg).toBe(unrestorable);
    }

    // Deleted within the retention: its delete is kept, and restoring it brings back what was deleted.
    expect(await versions(recent.id, security)).toEqual([2]);
    const restored = await send('POST', `/v3/playlist/${recent.id}/restore`, security, { version: 2 });
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([9, 10]);
  });
});
