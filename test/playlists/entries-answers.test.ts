import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

/**
 * The entries form of a playlist (`GET …/entries`, and a merged edit's answer) carries what its JSON form carries
 * beside its songs (a member's `owner` and `role`, a smart playlist's `rules` and `rulesStatus`), and every form of
 * a playlist has an ETag made the same way: from the playlist's version, the catalog's, the form and the reader's
 * role. A write's `If-Match` takes the current tag of any form.
 */

interface Shown {
  readonly owner?: string;
  readonly role?: string;
  readonly rules?: unknown;
  readonly rulesStatus?: { readonly unreadable: readonly number[] };
}

type Entries = EntriesBody & Shown;

/** The forms of `GET /v3/playlist/{id}` besides its JSON, by the query that asks for each. */
const FILES = ['xspf', 'jspf', 'm3u8'] as const;

describeEachDatabase('the entries form and the ETags of every form on %s', (t) => {
  const person = async (prefix: string) => {
    const name = `${prefix}_${randomBytes(4).toString('hex')}`;
    return { name, security: await t.addUser(name) };
  };
  const share = async (owner: string, id: number, member: string, role: 'viewer' | 'editor') => {
    const shared = await sendAs(t.app, 'PUT', `/v3/playlist/${id}/members/${member}`, owner, { role });
    expect(shared.statusCode, shared.body).toBe(200);
  };
  const get = (url: string, security: string, headers: Record<string, string> = {}) =>
    sendAs(t.app, 'GET', url, security, undefined, headers);
  const entries = (id: number, security: string, headers: Record<string, string> = {}) =>
    get(`/v3/playlist/${id}/entries`, security, headers);
  const edits = (id: number, security: string, body: unknown, headers: Record<string, string> = {}) =>
    sendAs(t.app, 'POST', `/v3/playlist/${id}/edits`, security, body, headers);
  const tagOf = (answer: { headers: Record<string, unknown> }) => String(answer.headers.etag);
  /** The current tag of each form of the playlist to this reader. */
  const tagsOf = async (id: number, security: string) => {
    const tags: Record<string, string> = {
      json: tagOf(await get(`/v3/playlist/${id}`, security)),
      entries: tagOf(await entries(id, security)),
    };
    for (const format of FILES) tags[format] = tagOf(await get(`/v3/playlist/${id}?format=${format}`, security));
    return tags;
  };

  it("answers a member's entries with `owner` and `role` as the JSON does, and the owner's with neither", async () => {
    const [owner, viewer, editor] = [await person('own'), await person('view'), await person('edit')];
    const made = await createPlaylist(t.app, owner.security, 'Shared entries', [1, 2, 3]);
    await share(owner.security, made.id, viewer.name, 'viewer');
    await share(owner.security, made.id, editor.name, 'editor');

    const owners = await entries(made.id, owner.security);
    expect(owners.statusCode, owners.body).toBe(200);
    expect(Object.keys(owners.json<Entries>())).toEqual(['id', 'name', 'version', 'entries']);
    for (const [who, role] of [
      [viewer, 'viewer'],
      [editor, 'editor'],
    ] as const) {
      const answer = await entries(made.id, who.security);
      expect(answer.statusCode, answer.body).toBe(200);
      const body = answer.json<Entries>();
      expect(body).toEqual({ ...owners.json<Entries>(), owner: owner.name, role });
      // The same members as the JSON form's, last, in the same order.
      const json = (await get(`/v3/playlist/${made.id}`, who.security)).json<PlaylistBody & Shown>();
      expect([json.owner, json.role]).toEqual([owner.name, role]);
      expect(Object.keys(body).slice(-2)).toEqual(['owner', 'role']);
    }

    // A merged edit's answer is the editor's entries form too.
    const edited = await edits(made.id, editor.security, { ops: [{ op: 'rename', name: 'Renamed by the editor' }] });
    expect(edited.statusCode, edited.body).toBe(200);
    const playlist = edited.json<EditsBody>().playlist as Entries;
    expect(playlist).toEqual((await entries(made.id, editor.security)).json<Entries>());
    expect([playlist.owner, playlist.role, playlist.name]).toEqual([owner.name, 'editor', 'Renamed by the editor']);
  });

  it("answers a smart playlist's entries with its `rules`, and `rulesStatus` when its JSON has it", async () => {
    const [alice, bob] = [await person('alice'), await person('bob')];
    const followed = await createPlaylist(t.app, alice.security, 'Followed', [1, 2]);
    await share(alice.security, followed.id, bob.name, 'viewer');
    const rules = { match: 'any', conditions: [{ field: 'playlist', op: 'in', value: followed.id }] };
    const made = await sendAs(t.app, 'POST', '/v3/playlist', bob.security, { name: 'Follows', rules });
    expect(made.statusCode, made.body).toBe(200);
    const id = made.json<PlaylistBody>().id;

    const first = (await entries(id, bob.security)).json<Entries>();
    const json = (await get(`/v3/playlist/${id}`, bob.security)).json<PlaylistBody & Shown>();
    expect(json.rules).toBeDefined();
    expect(first.rules).toEqual(json.rules);
    expect(first).not.toHaveProperty('rulesStatus');
    expect(Object.keys(first)).toEqual(['id', 'name', 'version', 'entries', 'rules']);
    // A hand-made playlist's entries have no rules.
    expect((await entries(followed.id, alice.security)).json<Entries>()).not.toHaveProperty('rules');

    // Bob may no longer read what his rules follow: the entries say so, first read as the JSON would be.
    const unshared = await sendAs(t.app, 'DELETE', `/v3/playlist/${followed.id}/members/${bob.name}`, alice.security);
    expect(unshared.statusCode, unshared.body).toBe(200);
    const after = (await entries(id, bob.security)).json<Entries>();
    expect(after.entries).toEqual([]);
    expect(after.rulesStatus).toEqual({ unreadable: [followed.id] });
    expect(Object.keys(after).slice(-2)).toEqual(['rules', 'rulesStatus']);
    const afterJson = (await get(`/v3/playlist/${id}`, bob.security)).json<PlaylistBody & Shown>();
    expect(after.rulesStatus).toEqual(afterJson.rulesStatus);

    // A rename by merged edit answers the rules too, and a member editing it sees them before `owner` and `role`.
    const carol = await person('carol');
    await share(bob.security, id, carol.name, 'editor');
    const renamed = await edits(id, carol.security, { ops: [{ op: 'rename', name: 'Still follows' }] });
    expect(renamed.statusCode, renamed.body).toBe(200);
    const playlist = renamed.json<EditsBody>().playlist as Entries;
    expect(playlist.rules).toEqual(json.rules);
    expect(playlist.rulesStatus).toEqual({ unreadable: [followed.id] });
    expect(Object.keys(playlist).slice(-4)).toEqual(['rules', 'rulesStatus', 'owner', 'role']);
  });

  it('answers a merged edit with Content-Location and the entries ETag, which GET …/entries answers 304 to', async () => {
    const { security } = await person('edits');
    // Long enough to be compressed (over 2 KB).
    const songs = Array.from({ length: 60 }, (_, i) => i + 1);
    const made = await createPlaylist(t.app, security, 'Merged', songs);

    const edited = await edits(made.id, security, { ops: [{ op: 'insert', songIds: [61] }] });
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.headers['content-location']).toBe(`/v3/playlist/${made.id}/entries`);
    expect(edited.headers['cache-control']).toBe('no-store');
    const tag = tagOf(edited);
    expect(tag).toMatch(/^"[^"]+"$/);
    const read = await entries(made.id, security);
    expect(tagOf(read)).toBe(tag);
    expect(read.json<Entries>()).toEqual(edited.json<EditsBody>().playlist);
    const again = await entries(made.id, security, { 'if-none-match': tag });
    expect(again.statusCode).toBe(304);
    expect(tagOf(again)).toBe(tag);
    // The JSON form's tag is another form's: no 304 for the entries.
    expect(tagOf(edited)).not.toBe(tagOf(await get(`/v3/playlist/${made.id}`, security)));

    // Compressed: the tag names its coding, and GET …/entries still knows it, compressed or not.
    const zipped = await edits(
      made.id,
      security,
      { ops: [{ op: 'insert', songIds: [62] }] },
      { 'accept-encoding': 'gzip' },
    );
    expect(zipped.statusCode, zipped.body).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    const zippedTag = tagOf(zipped);
    expect(zippedTag).toMatch(/-gzip"$/);
    const body = JSON.parse(gunzipSync(zipped.rawPayload).toString('utf8')) as EditsBody;
    expect(body.playlist.entries.map((e) => e.id)).toEqual([...songs, 61, 62]);
    for (const coding of ['gzip', 'identity']) {
      const revalidated = await entries(made.id, security, { 'if-none-match': zippedTag, 'accept-encoding': coding });
      expect(revalidated.statusCode, coding).toBe(304);
      expect(tagOf(revalidated)).toBe(zippedTag);
    }
  });

  it("takes any form's current tag in a write's If-Match, answers a stale one 412 with the tag of its own form", async () => {
    const { security } = await person('ifmatch');
    const made = await createPlaylist(t.app, security, 'Any form', [1, 2, 3]);
    const url = `/v3/playlist/${made.id}`;

    // The entries' tag on a PATCH.
    const first = await tagsOf(made.id, security);
    const patched = await sendAs(t.app, 'PATCH', url, security, { name: 'Patched' }, { 'if-match': first.entries! });
    expect(patched.statusCode, patched.body).toBe(200);
    const second = await tagsOf(made.id, security);
    expect(tagOf(patched)).toBe(second.json);

    // Every tag of the version before is stale now: 412, with the current tag of the form the write answers with.
    for (const [form, tag] of Object.entries(first)) {
      const stale = await sendAs(t.app, 'PATCH', url, security, { name: 'Stale' }, { 'if-match': tag });
      expectError(stale, 412);
      expect(tagOf(stale), form).toBe(second.json);
      const staleEdit = await edits(made.id, security, { ops: [{ op: 'rename', name: 'Stale' }] }, { 'if-match': tag });
      expectError(staleEdit, 412);
      expect(tagOf(staleEdit), form).toBe(second.entries);
    }

    // The JSON's tag on a merged edit; its answer's tag is the entries form's.
    const merged = await edits(
      made.id,
      security,
      { ops: [{ op: 'insert', songIds: [4] }] },
      { 'if-match': second.json! },
    );
    expect(merged.statusCode, merged.body).toBe(200);
    const third = await tagsOf(made.id, security);
    expect(tagOf(merged)).toBe(third.entries);

    // A file's tag as a compressed answer names it on a PUT; the merged edit's own answer's tag on a POST …/songs;
    // the entries' on a restore.
    const brotli = `${third.m3u8!.slice(0, -1)}-br"`;
    const put = await sendAs(t.app, 'PUT', url, security, { name: 'Put', songIds: [5, 6] }, { 'if-match': brotli });
    expect(put.statusCode, put.body).toBe(200);
    const renamed = await edits(made.id, security, { ops: [{ op: 'rename', name: 'Merged again' }] });
    expect(renamed.statusCode, renamed.body).toBe(200);
    const added = await sendAs(
      t.app,
      'POST',
      `${url}/songs`,
      security,
      { songIds: [7] },
      { 'if-match': tagOf(renamed) },
    );
    expect(added.statusCode, added.body).toBe(200);
    const restored = await sendAs(
      t.app,
      'POST',
      `${url}/restore`,
      security,
      { version: 1 },
      { 'if-match': tagOf(await entries(made.id, security)) },
    );
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json<PlaylistBody>().name).toBe('Any form');
  });

  it("tags each form apart, and each reader's role apart, at one version; each form 304s on its own tag only", async () => {
    const [owner, viewer] = [await person('forms'), await person('reader')];
    const made = await createPlaylist(t.app, owner.security, 'Five forms', [1, 2, 3]);
    await share(owner.security, made.id, viewer.name, 'viewer');
    const owners = await tagsOf(made.id, owner.security);
    const viewers = await tagsOf(made.id, viewer.security);
    const all = [...Object.values(owners), ...Object.values(viewers)];
    expect(all).toHaveLength(10);
    expect(new Set(all).size).toBe(10);
    for (const tag of all) expect(tag).toMatch(/^"[^"]+"$/);

    const url = `/v3/playlist/${made.id}`;
    const read = (form: string, security: string, headers: Record<string, string>) =>
      form === 'entries'
        ? entries(made.id, security, headers)
        : get(form === 'json' ? url : `${url}?format=${form}`, security, headers);
    for (const form of Object.keys(owners)) {
      expect((await read(form, owner.security, { 'if-none-match': owners[form]! })).statusCode, form).toBe(304);
      expect((await read(form, viewer.security, { 'if-none-match': viewers[form]! })).statusCode, form).toBe(304);
      // Another role's tag, or another form's, is another answer.
      expect((await read(form, viewer.security, { 'if-none-match': owners[form]! })).statusCode, form).toBe(200);
      const other = form === 'entries' ? owners.json! : owners.entries!;
      expect((await read(form, owner.security, { 'if-none-match': other })).statusCode, form).toBe(200);
    }

    // A viewer's tag is not the owner's: the owner's write under it is 412.
    const refused = await sendAs(t.app, 'PATCH', url, owner.security, { name: 'No' }, { 'if-match': viewers.entries! });
    expectError(refused, 412);
    expect(tagOf(refused)).toBe(owners.json);
  });
});
