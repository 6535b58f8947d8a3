import { describe, expect, it } from 'vitest';
import { OWNER, render, snapshotEtag, snapshotOf } from './playlist.render.js';

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
    expect(tag).toBe(snapshotEtag({ id: 7, version: 3, catalogVersion: 2 }, OWNER));
    const others = [
      snapshotEtag({ id: 8, version: 3, catalogVersion: 2 }, OWNER),
      snapshotEtag({ id: 7, version: 4, catalogVersion: 2 }, OWNER),
      snapshotEtag({ id: 7, version: 3, catalogVersion: 3 }, OWNER),
      render(snapshot, { role: 'viewer', ownerName: 'x' }).etag,
      render(snapshot, { role: 'editor', ownerName: 'x' }).etag,
      render(snapshot, { role: 'link', ownerName: 'x' }).etag,
    ];
    expect(new Set([tag, ...others]).size).toBe(others.length + 1);
  });
});
