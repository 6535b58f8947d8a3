import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestApp, type TestApp } from '../helpers/app.js';
import { describeEachDatabase, describeEachEmptyDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

const send = (t: TestApp, ...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) =>
  sendAs(t.app, ...args);

// A version longer than the songs limit now in force (kept from when the limit was higher) is not restored.
describeEachEmptyDatabase('restores over the songs limit on %s', (database) => {
  let wide: TestApp;
  let narrow: TestApp;
  beforeAll(async () => {
    wide = await openTestApp(database.url);
    narrow = await openTestApp(database.url, { MIXTAPE_SONGS_MAX: '3' });
  });
  afterAll(async () => {
    await wide.close();
    await narrow.close();
  });

  it('answers a restore as an edit that long would be answered, live or deleted, and changes nothing', async () => {
    const security = await wide.addUser();
    const created = await createPlaylist(wide.app, security, 'Long ago', [1, 2, 3, 4, 5]);
    const cut = await wide.app.inject({
      method: 'PUT',
      url: `/v3/playlist/${created.id}`,
      headers: { security, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'Short', songIds: [1] }),
    });
    expect(cut.statusCode, cut.body).toBe(200);
    const tooLongEdit = expectError(
      await send(narrow, 'POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [2, 3, 4, 5] }),
      409,
    );
    expect(tooLongEdit.errormsg).toContain('at most 3 songs');

    const restore = () => send(narrow, 'POST', `/v3/playlist/${created.id}/restore`, security, { version: 1 });
    expect(expectError(await restore(), 409).errormsg).toBe(tooLongEdit.errormsg);
    const now = await send(narrow, 'GET', `/v3/playlist/${created.id}`, security);
    expect(now.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([1]);
    expect(now.headers.etag).toBe(cut.headers.etag);

    expect((await send(wide, 'DELETE', `/v3/playlist/${created.id}`, security)).statusCode).toBe(200);
    expect(expectError(await restore(), 409).errormsg).toBe(tooLongEdit.errormsg);
    expectError(await send(narrow, 'GET', `/v3/playlist/${created.id}`, security), 410);
    // A version within the limit comes back.
    const back = await send(narrow, 'POST', `/v3/playlist/${created.id}/restore`, security, { version: 2 });
    expect(back.statusCode, back.body).toBe(200);
    expect(back.body).toBe(cut.body);
  });
});

describeEachDatabase('conditional restores of a deleted playlist on %s', (t) => {
  it('takes the ETag of the version its delete left, and refuses `*` (saying why) and any other tag with that ETag', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Gone', [6, 7]);
    const edited = await send(t, 'POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [8] });
    expect(edited.statusCode).toBe(200);
    expect((await send(t, 'DELETE', `/v3/playlist/${created.id}`, security)).statusCode).toBe(200);
    const deleteVersion = await send(t, 'GET', `/v3/playlist/${created.id}/versions/3`, security);
    expect(deleteVersion.statusCode).toBe(200);
    const tag = String(deleteVersion.headers.etag);
    // What the playlist was when deleted, so the ETag its last reader holds.
    expect(tag).toBe(edited.headers.etag);

    const restore = (ifMatch: string) =>
      send(t, 'POST', `/v3/playlist/${created.id}/restore`, security, { version: 1 }, { 'if-match': ifMatch });
    const first = String((await send(t, 'GET', `/v3/playlist/${created.id}/versions/1`, security)).headers.etag);
    for (const stale of ['*', first, '"other"']) {
      const refused = await restore(stale);
      const message = expectError(refused, 412).errormsg;
      expect(refused.headers.etag).toBe(tag);
      // `*` names any current version, and a deleted playlist has none: that, not a change, is why it fails.
      if (stale === '*') {
        expect(message).toBe(
          'This playlist is deleted, so If-Match: * (any current version) matches nothing: send the ETag of the ' +
            `version its delete left (GET /v3/playlist/${created.id}/versions/3), or no If-Match.`,
        );
      } else {
        expect(message).toMatch(/^The playlist has changed since you read it/);
      }
    }
    expectError(await send(t, 'GET', `/v3/playlist/${created.id}`, security), 410);

    const restored = await restore(`"other", ${tag}`);
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([6, 7]);
    // Now live again: the ETag of the deleted version no longer matches.
    expectError(await restore(tag), 412);
  });
});
