import { expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

// A playlist's ETag stands for what decides its JSON: the playlist's version, the catalog's and the caller's role.
describeEachDatabase('ETags of playlists on %s', (t) => {
  const get = (path: string, security: string, ifNoneMatch?: string) =>
    sendAs(t.app, 'GET', path, security, undefined, ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch });

  it("changes when a catalog import renames one of the playlist's songs: the old tag revalidates and edits nothing", async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Renamed underneath', [21, 22]);
    const path = `/v3/playlist/${created.id}`;
    const before = await get(path, security);
    const tag = String(before.headers.etag);
    expect((await get(path, security, tag)).statusCode).toBe(304);

    const [song] = await t.db.kysely.selectFrom('songs').selectAll().where('id', '=', 21).execute();
    const title = `${song!.title} (live)`;
    await importCatalog(t.db, [{ id: 21, title, artist: song!.artist }]);

    const after = await get(path, security, tag);
    expect(after.statusCode).toBe(200);
    expect(after.json<PlaylistBody>().songs[0]!.title).toBe(title);
    const current = String(after.headers.etag);
    expect(current).not.toBe(tag);
    expect((await get(path, security, current)).statusCode).toBe(304);

    const stale = await sendAs(t.app, 'PATCH', path, security, { name: 'Stale' }, { 'if-match': tag });
    expectError(stale, 412);
    expect(stale.headers.etag).toBe(current);
    const edit = await sendAs(t.app, 'PATCH', path, security, { name: 'Fresh' }, { 'if-match': current });
    expect(edit.statusCode, edit.body).toBe(200);
    expect(edit.json<PlaylistBody>().songs[0]!.title).toBe(title);
    expect((await get(path, security, String(edit.headers.etag))).statusCode).toBe(304);
  });

  it("gives the owner's, a viewer's and an editor's answers each their own tag, which only that answer matches", async () => {
    const owner = await t.addUser('etag-owner');
    const viewer = await t.addUser('etag-viewer');
    const editor = await t.addUser('etag-editor');
    const created = await createPlaylist(t.app, owner, 'Seen three ways', [3, 4]);
    const path = `/v3/playlist/${created.id}`;
    for (const [user, role] of [
      ['etag-viewer', 'viewer'],
      ['etag-editor', 'editor'],
    ] as const) {
      expect((await sendAs(t.app, 'PUT', `${path}/members/${user}`, owner, { role })).statusCode).toBe(200);
    }
    const answers = await Promise.all([owner, viewer, editor].map((security) => get(path, security)));
    const tags = answers.map((answer) => String(answer.headers.etag));
    expect(new Set(tags).size).toBe(3);
    expect(answers[0]!.json()).toEqual(created);
    expect(answers[1]!.json()).toEqual({ ...created, owner: 'etag-owner', role: 'viewer' });
    expect(answers[2]!.json()).toEqual({ ...created, owner: 'etag-owner', role: 'editor' });
    expect((await get(path, viewer, tags[1])).statusCode).toBe(304);
    expect((await get(path, viewer, tags[0])).statusCode).toBe(200);

    // The editor's If-Match names the editor's own answer; the owner's tag is another answer's.
    expectError(await sendAs(t.app, 'PATCH', path, editor, { name: 'Not yours' }, { 'if-match': tags[0]! }), 412);
    const edited = await sendAs(t.app, 'PATCH', path, editor, { name: 'Edited' }, { 'if-match': tags[2]! });
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.json()).toEqual({ ...created, name: 'Edited', owner: 'etag-owner', role: 'editor' });
    // The edit is a new version: every viewer's old tag is stale, and the editor's new one is current.
    for (const [i, security] of [owner, viewer, editor].entries()) {
      expect((await get(path, security, tags[i])).statusCode).toBe(200);
    }
    expect((await get(path, editor, String(edited.headers.etag))).statusCode).toBe(304);
  });
});
