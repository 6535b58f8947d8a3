import { describe, expect, it } from 'vitest';
import {
  entriesPageEtag,
  lazySnapshotOf,
  OWNER,
  PLAYLIST_FORMS,
  playlistEtag,
  playlistEtags,
  render,
  snapshotOf,
  writeAnswer,
} from './playlist.render.js';

const read = {
  id: 7,
  version: 3,
  catalogVersion: 2,
  name: 'Über "quotes"',
  songs: [{ id: 1, title: 'A\u2028B', artist: 'C\\D' }],
};

describe('render', () => {
  it("answers the owner with the playlist's JSON, fields in the schema's order", () => {
    const answer = render(snapshotOf(read), OWNER);
    expect(answer.body.toString('utf8')).toBe(JSON.stringify({ id: read.id, name: read.name, songs: read.songs }));
  });

  it("answers a member with the owner's name and their role after the other fields, and a link with the name", () => {
    const snapshot = snapshotOf(read);
    const owner = render(snapshot, OWNER).body.toString('utf8');
    const member = render(snapshot, { role: 'editor', ownerName: 'Zoë "z"' }).body.toString('utf8');
    expect(member).toBe(JSON.stringify({ ...(JSON.parse(owner) as object), owner: 'Zoë "z"', role: 'editor' }));
    const link = render(snapshot, { role: 'link', ownerName: 'Zoë' }).body.toString('utf8');
    expect(link).toBe(JSON.stringify({ ...(JSON.parse(owner) as object), owner: 'Zoë' }));
  });

  it('tags an answer by playlist, version, catalog version and role, without reading its bytes', () => {
    const snapshot = snapshotOf(read);
    const tag = render(snapshot, OWNER).etag;
    expect(tag).toMatch(/^"[\x21\x23-\x7e]+"$/);
    expect(tag).toBe(playlistEtag({ id: 7, version: 3, catalogVersion: 2 }, 'json', 'owner'));
    const others = [
      playlistEtag({ id: 8, version: 3, catalogVersion: 2 }, 'json', 'owner'),
      playlistEtag({ id: 7, version: 4, catalogVersion: 2 }, 'json', 'owner'),
      playlistEtag({ id: 7, version: 3, catalogVersion: 3 }, 'json', 'owner'),
      render(snapshot, { role: 'viewer', ownerName: 'x' }).etag,
      render(snapshot, { role: 'editor', ownerName: 'x' }).etag,
      render(snapshot, { role: 'link', ownerName: 'x' }).etag,
    ];
    expect(new Set([tag, ...others]).size).toBe(others.length + 1);
  });

  it('tags each form apart, for each role, the JSON as it always was; `playlistEtags` lists every form', () => {
    const at = { id: 7, version: 3, catalogVersion: 2 };
    expect(playlistEtag(at, 'json', 'owner')).toBe('"7.3.2"');
    expect(playlistEtag(at, 'json', 'viewer')).toBe('"7.3.2.viewer"');
    expect(playlistEtag(at, 'entries', 'editor')).toBe('"7.3.2.editor.entries"');
    const roles = ['owner', 'editor', 'viewer', 'link'] as const;
    const all = roles.flatMap((role) => PLAYLIST_FORMS.map((form) => playlistEtag(at, form, role)));
    expect(new Set(all).size).toBe(all.length);
    for (const tag of all) expect(tag).toMatch(/^"[\x21\x23-\x7e]+"$/);
    expect(playlistEtags(at, 'viewer')).toEqual(PLAYLIST_FORMS.map((form) => playlistEtag(at, form, 'viewer')));
  });

  it("tags a page of the entries by its limit and after, apart from every form's and every other page's", () => {
    const at = { id: 7, version: 3, catalogVersion: 2 };
    expect(entriesPageEtag(at, 'owner', 10, undefined)).toBe('"7.3.2.entries.10"');
    expect(entriesPageEtag(at, 'viewer', 10, 'e12')).toBe('"7.3.2.viewer.entries.10.e12"');
    const pages = [
      ...PLAYLIST_FORMS.map((form) => playlistEtag(at, form, 'owner')),
      entriesPageEtag(at, 'owner', 10, undefined),
      entriesPageEtag(at, 'owner', 10, 'e1'),
      entriesPageEtag(at, 'owner', 11, 'e1'),
      entriesPageEtag(at, 'owner', 1, 'e10'),
      entriesPageEtag(at, 'editor', 10, 'e1'),
      entriesPageEtag({ ...at, version: 4 }, 'owner', 10, 'e1'),
    ];
    expect(new Set(pages).size).toBe(pages.length);
  });
});

describe("a write's answer", () => {
  it('writes the JSON only when its body is asked for, and then as render does', () => {
    let written = 0;
    const title = { toJSON: () => ((written += 1), 'A') };
    const songs = [{ id: 1, title: title as unknown as string, artist: 'C' }];
    const snapshot = lazySnapshotOf({ ...read, songs });
    const answer = writeAnswer(snapshot, { role: 'editor', ownerName: 'z' });
    expect(answer.version).toBe(3);
    expect(answer.etag).toBe(playlistEtag(read, 'json', 'editor'));
    expect(written).toBe(0);
    const body = answer.body().toString('utf8');
    expect(body).toBe(render(snapshotOf({ ...read, songs }), { role: 'editor', ownerName: 'z' }).body.toString('utf8'));
    expect(snapshot.json).toBe(snapshot.json);
    expect(written).toBe(2);
  });
});
