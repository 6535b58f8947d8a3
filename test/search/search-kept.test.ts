import { expect, it } from 'vitest';
import { describeEachDatabase, describeTwoInstances } from '../helpers/each-database.js';
import { createPlaylist, sendAs, type PlaylistBody } from '../helpers/requests.js';

const ids = (body: string) => (JSON.parse(body) as PlaylistBody[]).map((p) => p.id);

// A user's repeated search is answered from what the last one found while none of their documents changed, and never
// once one did, whichever write, instance or process changed it.
describeEachDatabase('a repeated search on %s', (t) => {
  it('reads no document the second time, and answers the same page and ETag', async () => {
    const alice = await t.addUser();
    const made = await createPlaylist(t.app, alice, 'Kept tangerine', [1]);
    const first = await sendAs(t.app, 'GET', '/v3/playlist?search=tangerine', alice);
    expect(ids(first.body)).toEqual([made.id]);
    const before = t.queries.length;
    const again = await sendAs(t.app, 'GET', '/v3/playlist?search=tangerine', alice);
    expect(again.body).toBe(first.body);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(t.queries.slice(before).filter((query) => /playlist_documents/.test(query.sql))).toEqual([]);
    const statements = t.queries.slice(before).map((query) => query.sql);
    if (t.db.dialect === 'postgres') {
      // One statement: the library version, with the current versions of the page's playlists, which confirm
      // their kept answers.
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/library_version/);
    } else {
      // None: nothing was committed anywhere since the search was kept (SQLite's change log tells without I/O).
      expect(statements).toEqual([]);
      // Once anything is committed, the library version is read again (here unchanged: another user's playlist),
      // and then the search is kept again.
      await createPlaylist(t.app, await t.addUser(), 'Not hers', [2]);
      const afterWrite = t.queries.length;
      expect((await sendAs(t.app, 'GET', '/v3/playlist?search=tangerine', alice)).body).toBe(first.body);
      expect(t.queries.slice(afterWrite).filter((query) => /library_version/.test(query.sql))).toHaveLength(1);
      const third = t.queries.length;
      expect((await sendAs(t.app, 'GET', '/v3/playlist?search=tangerine', alice)).body).toBe(first.body);
      expect(t.queries.slice(third)).toEqual([]);
    }
  });

  it("confirms several users' repeated searches that arrive together, each with its own answer", async () => {
    const users = [await t.addUser(), await t.addUser(), await t.addUser()];
    const made = [];
    for (const [i, user] of users.entries()) made.push(await createPlaylist(t.app, user, `Kept quince ${i}`, [i + 1]));
    const search = (user: string) => sendAs(t.app, 'GET', '/v3/playlist?search=quince', user);
    const first = await Promise.all(users.map(search));
    expect(first.map((answer) => ids(answer.body))).toEqual(made.map((playlist) => [playlist.id]));
    // One of them renames hers: her search finds nothing now, the others' are as they were.
    expect((await sendAs(t.app, 'PATCH', `/v3/playlist/${made[1]!.id}`, users[1]!, { name: 'Pear' })).statusCode).toBe(
      200,
    );
    const before = t.queries.length;
    const again = await Promise.all(users.map(search));
    expect(again.map((answer) => ids(answer.body))).toEqual([[made[0]!.id], [], [made[2]!.id]]);
    if (t.db.dialect === 'postgres') {
      // The three confirmations in one statement (its first parameter, the users), whoever's library changed.
      const confirmations = t.queries.slice(before).filter((query) => /library_version/.test(query.sql));
      expect(confirmations.map((query) => (query.parameters[0] as unknown[]).length)).toEqual([3]);
    }
  });

  it('finds what every kind of write changed at once', async () => {
    const alice = await t.addUser();
    const search = async () => ids((await sendAs(t.app, 'GET', '/v3/playlist?search=marmalade', alice)).body);
    const one = await createPlaylist(t.app, alice, 'Marmalade one', [1]);
    expect(await search()).toEqual([one.id]);
    const two = await createPlaylist(t.app, alice, 'Marmalade two', [2]);
    expect(await search()).toEqual([one.id, two.id]);
    expect((await sendAs(t.app, 'PATCH', `/v3/playlist/${one.id}`, alice, { name: 'Jam' })).statusCode).toBe(200);
    expect(await search()).toEqual([two.id]);
    expect((await sendAs(t.app, 'POST', `/v3/playlist/${one.id}/restore`, alice, { version: 1 })).statusCode).toBe(200);
    expect(await search()).toEqual([one.id, two.id]);
    expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${two.id}`, alice)).statusCode).toBe(200);
    expect(await search()).toEqual([one.id]);
    // Another user's writes leave Alice's kept search as it was, and her answer right.
    const bob = await t.addUser();
    await createPlaylist(t.app, bob, 'Marmalade of Bob', [3]);
    expect(await search()).toEqual([one.id]);
  });
});

describeTwoInstances('a repeated search beside another instance (%s)', (apps) => {
  it("finds at once what the other instance's writes changed", async () => {
    const { one, two } = apps;
    const alice = await one.addUser();
    const search = async () => ids((await sendAs(one.app, 'GET', '/v3/playlist?search=quince', alice)).body);
    expect(await search()).toEqual([]);
    const made = await createPlaylist(two.app, alice, 'Quince', [4]);
    expect(await search()).toEqual([made.id]);
    expect((await sendAs(two.app, 'PATCH', `/v3/playlist/${made.id}`, alice, { name: 'Pear' })).statusCode).toBe(200);
    expect(await search()).toEqual([]);
  });
});
