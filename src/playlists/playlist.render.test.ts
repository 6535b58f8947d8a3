import { describe, expect, it } from 'vitest';
import { OWNER, PLAYLIST_FORMS, playlistEtag, playlistEtags, render, snapshotOf } from './playlist.render.js';

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
});
