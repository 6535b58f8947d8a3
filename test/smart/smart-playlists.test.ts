import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

type SmartBody = PlaylistBody & { rules?: unknown };

const ids = (body: PlaylistBody) => body.songs.map((s) => s.id);

const jazz = {
  match: 'all',
  conditions: [{ field: 'genre', op: 'is', value: 'jazz' }],
  sort: [{ field: 'title' }],
  limit: 5,
};
const inPlaylist = (id: number) => ({ match: 'all', conditions: [{ field: 'playlist', op: 'in', value: id }] });

describeEachDatabase('smart playlists over HTTP on %s', (t) => {
  const send = (...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) => sendAs(t.app, ...args);
  const get = async (id: number, security: string) => {
    const read = await send('GET', `/v3/playlist/${id}`, security);
    expect(read.statusCode, read.body).toBe(200);
    return read.json<SmartBody>();
  };
  const createSmart = async (security: string, name: string, rules: unknown) => {
    const made = await send('POST', '/v3/playlist', security, { name, rules });
    expect(made.statusCode, made.body).toBe(200);
    return made.json<SmartBody>();
  };
  const changes = async (id: number, security: string) => {
    const listed = await send('GET', `/v3/playlist/${id}/versions`, security);
    expect(listed.statusCode, listed.body).toBe(200);
    return listed.json<{ version: number; change: string; by: string }[]>().map((r) => [r.version, r.change, r.by]);
  };
  const jazzIds = async () =>
    (
      await t.db.kysely
        .selectFrom('songs')
        .select('id')
        .where('genre', '=', 'Jazz')
        .orderBy('norm_title')
        .orderBy('id')
        .limit(5)
        .execute()
    ).map((row) => row.id);

  it('creates a smart playlist whose JSON carries its rules after its songs; hand-made JSON has no rules', async () => {
    const security = await t.addUser();
    const made = await createSmart(security, 'Jazz', jazz);
    expect(Object.keys(made)).toEqual(['id', 'name', 'songs', 'rules']);
    expect(made.rules).toEqual(jazz);
    expect(ids(made)).toEqual(await jazzIds());
    const read = await get(made.id, security);
    expect(read).toEqual(made);
    const hand = await createPlaylist(t.app, security, 'Hand', [1, 2]);
    expect(Object.keys(await get(hand.id, security))).toEqual(['id', 'name', 'songs']);
    const listed = await send('GET', '/v3/playlist', security);
    const page = listed.json<SmartBody[]>();
    expect(page.find((p) => p.id === made.id)?.rules).toEqual(jazz);
    expect(page.find((p) => p.id === hand.id)).not.toHaveProperty('rules');
  });

  it('refuses rules with songs, bad rules (naming the path), and a playlist the caller may not read', async () => {
    const security = await t.addUser();
    const both = expectError(
      await send('POST', '/v3/playlist', security, { name: 'x', songIds: [1], rules: jazz }),
      400,
    );
    expect(both.errormsg).toMatch(/not both/);
    const neither = expectError(await send('POST', '/v3/playlist', security, { name: 'x' }), 400);
    expect(neither.errormsg).toMatch(/songIds/);
    const bad = { match: 'all', conditions: [{ field: 'genre', op: 'gt', value: 'x' }] };
    const badOp = expectError(await send('POST', '/v3/playlist', security, { name: 'x', rules: bad }), 400);
    expect(badOp.errormsg).toMatch(/^rules\/conditions\/0\/op: /);
    const other = await t.addUser();
    const theirs = await createPlaylist(t.app, other, 'Theirs', [1]);
    const named = expectError(
      await send('POST', '/v3/playlist', security, { name: 'x', rules: inPlaylist(theirs.id) }),
      400,
    );
    expect(named.errormsg).toBe(`rules/conditions/0/value: no such playlist (${theirs.id}).`);
  });

  it('refuses hand edits of its songs with 409, renames it, and `{"rules": null}` keeps its songs', async () => {
    const security = await t.addUser();
    const made = await createSmart(security, 'Jazz', jazz);
    const url = `/v3/playlist/${made.id}`;
    const refusals = [
      await send('PATCH', url, security, { songIds: [1] }),
      await t.app.inject({
        method: 'PATCH',
        url,
        headers: { security, 'content-type': 'application/json-patch+json' },
        payload: JSON.stringify([{ op: 'add', path: '/songs/-', value: { id: 1 } }]),
      }),
      await send('PUT', url, security, { name: 'Jazz', songIds: [1] }),
      await send('POST', `${url}/songs`, security, { songIds: [1] }),
      await send('POST', `${url}/edits`, security, { ops: [{ op: 'insert', songIds: [1] }] }),
    ];
    for (const refused of refusals) expect(expectError(refused, 409).errormsg).toMatch(/smart playlist/);
    expect(ids(await get(made.id, security))).toEqual(ids(made));

    const renamed = await send('PATCH', url, security, { name: 'Cool jazz' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json<SmartBody>()).toMatchObject({ name: 'Cool jazz', rules: jazz });
    const merged = await send('POST', `${url}/edits`, security, { ops: [{ op: 'rename', name: 'Cooler jazz' }] });
    expect(merged.statusCode, merged.body).toBe(200);

    const plain = await send('PATCH', url, security, { rules: null });
    expect(plain.statusCode, plain.body).toBe(200);
    expect(plain.json<SmartBody>()).not.toHaveProperty('rules');
    expect(ids(plain.json<SmartBody>())).toEqual(ids(made));
    const appended = await send('POST', `${url}/songs`, security, { songIds: [1] });
    expect(appended.statusCode, appended.body).toBe(200);
    expect(ids(appended.json<SmartBody>())).toEqual([...ids(made), 1]);
  });

  it('gives a hand-made playlist rules by PATCH or PUT, and refuses rules that name their own playlist', async () => {
    const security = await t.addUser();
    const hand = await createPlaylist(t.app, security, 'Hand', [1, 2, 3]);
    const patched = await send('PATCH', `/v3/playlist/${hand.id}`, security, { rules: jazz });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json<SmartBody>()).toMatchObject({ name: 'Hand', rules: jazz });
    expect(ids(patched.json<SmartBody>())).toEqual(await jazzIds());

    const other = await createPlaylist(t.app, security, 'Other', [4, 5]);
    const put = await send('PUT', `/v3/playlist/${other.id}`, security, {
      name: 'Follows',
      rules: inPlaylist(hand.id),
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(ids(put.json<SmartBody>())).toEqual([...(await jazzIds())].sort((a, b) => a - b));

    // Hand → (its rules) nothing; Follows → Hand. Hand naming Follows would lead back to itself.
    const cycle = expectError(
      await send('PATCH', `/v3/playlist/${hand.id}`, security, { rules: inPlaylist(other.id) }),
      400,
    );
    expect(cycle.errormsg).toMatch(/^rules\/conditions\/0\/value: the rules may not name their own playlist/);
    const self = expectError(
      await send('PATCH', `/v3/playlist/${hand.id}`, security, { rules: inPlaylist(hand.id) }),
      400,
    );
    expect(self.errormsg).toMatch(/^rules\/conditions\/0\/value: /);
    expect((await get(hand.id, security)).rules).toEqual(jazz);
  });

  it('answers each kept version with the rules it had, and a restore brings them back', async () => {
    const security = await t.addUser();
    const hand = await createPlaylist(t.app, security, 'Hand', [7, 8]);
    const made = await createSmart(security, 'Versions', jazz);
    const url = `/v3/playlist/${made.id}`;
    expect((await send('PATCH', url, security, { rules: inPlaylist(hand.id) })).statusCode).toBe(200);
    expect((await send('PATCH', url, security, { rules: null })).statusCode).toBe(200);
    const first = await send('GET', `${url}/versions/1`, security);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json<SmartBody>()).toMatchObject({ songs: made.songs, rules: jazz });
    const second = await send('GET', `${url}/versions/2`, security);
    expect(second.json<SmartBody>()).toMatchObject({ rules: inPlaylist(hand.id) });
    expect(ids(second.json<SmartBody>())).toEqual([7, 8]);
    expect((await send('GET', `${url}/versions/3`, security)).json<SmartBody>()).not.toHaveProperty('rules');

    const restored = await send('POST', `${url}/restore`, security, { version: 1 });
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json<SmartBody>()).toMatchObject({ rules: jazz });
    expect(ids(restored.json<SmartBody>())).toEqual(await jazzIds());
    expect((await changes(made.id, security))[0]).toEqual([4, 'restore', expect.any(String)]);
    // A restore of the hand-made version makes it hand-made again, with that version's songs.
    const back = await send('POST', `${url}/restore`, security, { version: 3 });
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json<SmartBody>()).not.toHaveProperty('rules');
    expect(ids(back.json<SmartBody>())).toEqual([7, 8]);
  });

  it('follows a playlist its rules name: a write to it is a refresh revision of the smart playlist, by its owner', async () => {
    const owner = await t.addUser('smart-owner');
    const named = await createPlaylist(t.app, owner, 'Named', [1, 2]);
    const follower = await createSmart(owner, 'Follower', inPlaylist(named.id));
    expect(ids(follower)).toEqual([1, 2]);
    // Read first, so that this instance keeps its answer: the refresh's new version must replace it.
    expect(ids(await get(follower.id, owner))).toEqual([1, 2]);

    const edited = await send('PATCH', `/v3/playlist/${named.id}`, owner, { songIds: [3, 1] });
    expect(edited.statusCode, edited.body).toBe(200);
    expect(ids(await get(follower.id, owner))).toEqual([1, 3]);
    expect(await changes(follower.id, owner)).toEqual([
      [2, 'refresh', 'smart-owner'],
      [1, 'create', 'smart-owner'],
    ]);
    // A rename of the named playlist changes none of the follower's songs: no revision.
    expect((await send('PATCH', `/v3/playlist/${named.id}`, owner, { name: 'Renamed' })).statusCode).toBe(200);
    expect(await changes(follower.id, owner)).toHaveLength(2);
    // Deleted and brought back, a smart playlist keeps its rules.
    expect((await send('DELETE', `/v3/playlist/${follower.id}`, owner)).statusCode).toBe(200);
    const restored = await send('POST', `/v3/playlist/${follower.id}/restore`, owner, { version: 2 });
    expect(restored.statusCode, restored.body).toBe(200);
    expect((await get(follower.id, owner)).rules).toEqual(inPlaylist(named.id));
  });
});
