import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

/**
 * A playlist's name, wherever one is taken (create, PATCH, PUT, JSON Patch, merged edits, an import's `?name=` or its
 * file's title), has a visible character and no bidirectional control: such a name could read as another. Names
 * stored before keep working.
 */

/** ALM, LRM, RLM, the embeddings and overrides, and the isolates. */
const BIDI_CONTROLS = '\u061C \u200E \u200F \u202A \u202B \u202C \u202D \u202E \u2066 \u2067 \u2068 \u2069'.split(' ');

/** Names that show nothing: zero-width spaces and joiners, a word joiner, the Hangul filler, the blank Braille cell. */
const INVISIBLE = ['\u200B', '\u200B\u200B\u200B', ' \u200B ', '\u200C\u200D', '\u2060', '\u3164', '\u2800'];

const BIDI = /must not contain bidirectional control characters/;
const NOT_VISIBLE = /must have a visible character/;

describeEachDatabase('playlist names on %s', (t) => {
  let ivy: string;
  beforeAll(async () => {
    ivy = await t.addUser();
  });

  const countPlaylists = async () => Number((await sendAs(t.app, 'GET', '/v3/playlist', ivy)).headers['x-total-count']);
  const nameOf = async (id: number) =>
    (await sendAs(t.app, 'GET', `/v3/playlist/${id}`, ivy)).json<PlaylistBody>().name;
  const jsonPatch = (id: number, operations: unknown) =>
    t.app.inject({
      method: 'PATCH',
      url: `/v3/playlist/${id}`,
      headers: { security: ivy, 'content-type': 'application/json-patch+json' },
      payload: JSON.stringify(operations),
    });
  const importFile = (type: string, payload: string, query = '') =>
    t.app.inject({
      method: 'POST',
      url: `/v3/playlist/import${query}`,
      headers: { security: ivy, 'content-type': type },
      payload,
    });

  it('refuses a create whose name has a bidirectional control, naming the field and the character', async () => {
    const before = await countPlaylists();
    const override = expectError(
      await sendAs(t.app, 'POST', '/v3/playlist', ivy, { name: 'Chill\u202Eevil.exe', songIds: [1] }),
      400,
    );
    expect(override.errormsg).toMatch(/^"name" must not contain bidirectional control characters/);
    expect(override.errormsg).toContain('U+202E at character 6');
    for (const control of BIDI_CONTROLS) {
      const name = `a${control}b`;
      const refused = expectError(await sendAs(t.app, 'POST', '/v3/playlist', ivy, { name, songIds: [1] }), 400);
      expect(refused.errormsg, JSON.stringify(name)).toMatch(BIDI);
      const smart = { match: 'all', conditions: [] };
      expect(
        expectError(await sendAs(t.app, 'POST', '/v3/playlist', ivy, { name, rules: smart }), 400).errormsg,
      ).toMatch(BIDI);
    }
    expect(await countPlaylists()).toBe(before);
  });

  it('refuses a create whose name has no visible character', async () => {
    const before = await countPlaylists();
    for (const name of INVISIBLE) {
      const refused = expectError(await sendAs(t.app, 'POST', '/v3/playlist', ivy, { name, songIds: [1] }), 400);
      expect(refused.errormsg, JSON.stringify(name)).toMatch(/^"name" must have a visible character/);
    }
    expect(await countPlaylists()).toBe(before);
  });

  it('takes right-to-left text, emoji joined by zero-width joiners and a zero-width space between letters', async () => {
    for (const name of ['שלום עולם', 'مرحبا', '👨‍👩‍👧 Family', 'a\u200Bb', 'Café\u0301', '\u00AD-ish']) {
      const made = await createPlaylist(t.app, ivy, name, [1]);
      expect(made.name).toBe(name);
      expect(await nameOf(made.id)).toBe(name);
    }
  });

  it('refuses such a name in every rename: PATCH, PUT, JSON Patch and merged edits, leaving the name', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Kept', [1, 2]);
    const url = `/v3/playlist/${playlist.id}`;
    for (const [name, rule] of [
      ['Kept\u202E', BIDI],
      ['\u2067Kept\u2069', BIDI],
      ['\u200B\u200B', NOT_VISIBLE],
    ] as const) {
      const patched = expectError(await sendAs(t.app, 'PATCH', url, ivy, { name }), 400);
      expect(patched.errormsg).toMatch(/^"name" /);
      expect(patched.errormsg).toMatch(rule);
      const put = expectError(await sendAs(t.app, 'PUT', url, ivy, { name, songIds: [1] }), 400);
      expect(put.errormsg).toMatch(rule);
      const replaced = expectError(await jsonPatch(playlist.id, [{ op: 'replace', path: '/name', value: name }]), 400);
      expect(replaced.errormsg).toMatch(/"value" /);
      expect(replaced.errormsg).toMatch(rule);
      const merged = expectError(
        await sendAs(t.app, 'POST', `${url}/edits`, ivy, { ops: [{ op: 'rename', name }] }),
        400,
      );
      expect(merged.errormsg).toMatch(rule);
    }
    expect(await nameOf(playlist.id)).toBe('Kept');
    const versions = await sendAs(t.app, 'GET', `${url}/versions`, ivy);
    expect(versions.json<unknown[]>()).toHaveLength(1);
  });

  it("refuses such a name in an import's ?name= and in its file's title, creating nothing", async () => {
    const before = await countPlaylists();
    const m3u8 = (title: string) => `#EXTM3U\n#PLAYLIST:${title}\n#EXTINF:10,Nobody - Missing\nx.mp3\n`;
    const query = expectError(
      await importFile('audio/x-mpegurl', m3u8('Fine'), `?name=${encodeURIComponent('a\u202Eb')}`),
      400,
    );
    expect(query.errormsg).toMatch(/^The "name" query parameter must not contain bidirectional control characters/);
    const blank = expectError(await importFile('audio/x-mpegurl', m3u8('Fine'), '?name=%E2%80%8B'), 400);
    expect(blank.errormsg).toMatch(/^The "name" query parameter must have a visible character/);

    const xspf = (title: string) =>
      `<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>${title}</title><trackList/></playlist>`;
    const files: [string, string, RegExp][] = [
      ['audio/x-mpegurl', m3u8('Evil\u202Etxt.exe'), BIDI],
      ['audio/x-mpegurl', m3u8('\u200B\u200B'), NOT_VISIBLE],
      ['application/xspf+xml', xspf('&#x2066;Title&#x2069;'), BIDI],
      ['application/jspf+json', JSON.stringify({ playlist: { title: '\u2060\u200B', track: [] } }), NOT_VISIBLE],
    ];
    for (const [type, file, rule] of files) {
      const refused = expectError(await importFile(type, file), 400);
      expect(refused.errormsg, file).toMatch(/^The file's title /);
      expect(refused.errormsg, file).toMatch(rule);
      expect(refused.errormsg, file).toContain('?name=');
    }
    expect(await countPlaylists()).toBe(before);
    // A good ?name= names it instead.
    const named = await importFile('audio/x-mpegurl', m3u8('Evil\u202Etxt.exe'), '?name=Mine');
    expect(named.statusCode, named.body).toBe(200);
    expect(named.json<{ playlist: PlaylistBody }>().playlist.name).toBe('Mine');
  });

  it('keeps serving and editing a playlist whose stored name breaks the rule; only a new name is checked', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Plain', [1, 2]);
    const stored = 'Old\u202Ename';
    await t.db.kysely.updateTable('playlists').set({ name: stored }).where('id', '=', playlist.id).execute();
    const url = `/v3/playlist/${playlist.id}`;
    const edited = await sendAs(t.app, 'PATCH', url, ivy, { songIds: [3] });
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.json<PlaylistBody>()).toMatchObject({ name: stored, songs: [{ id: 3 }] });
    expect(await nameOf(playlist.id)).toBe(stored);
    const appended = await sendAs(t.app, 'POST', `${url}/songs`, ivy, { songIds: [4] });
    expect(appended.statusCode, appended.body).toBe(200);
    const listed = await sendAs(t.app, 'GET', '/v3/playlist?limit=100', ivy);
    expect(listed.json<PlaylistBody[]>().find((p) => p.id === playlist.id)?.name).toBe(stored);
    // A JSON Patch `test` of the name stores nothing: it compares with the stored name, whatever it holds.
    const tested = await jsonPatch(playlist.id, [
      { op: 'test', path: '/name', value: stored },
      { op: 'add', path: '/songs/-', value: { id: 5 } },
    ]);
    expect(tested.statusCode, tested.body).toBe(200);
    expect(tested.json<PlaylistBody>().songs.map((song) => song.id)).toEqual([3, 4, 5]);
    const differs = await jsonPatch(playlist.id, [{ op: 'test', path: '/name', value: 'Other\u202Ename' }]);
    expectError(differs, 409);
    expectError(await jsonPatch(playlist.id, [{ op: 'replace', path: '/name', value: stored }]), 400);
    const renamed = await sendAs(t.app, 'PATCH', url, ivy, { name: 'Fixed' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(await nameOf(playlist.id)).toBe('Fixed');
  });
});
