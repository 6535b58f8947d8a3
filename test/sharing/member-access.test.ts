import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { describeEachDatabase, describeTwoInstances } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

interface Member {
  readonly name: string;
  readonly security: string;
}

interface Seen extends PlaylistBody {
  owner?: string;
  role?: string;
}

const fresh = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex')}`;

// What a member may do with a playlist shared with them, through every route that serves one (README.md, Sharing).
describeEachDatabase('a shared playlist as its members see it (%s)', (t, dialect) => {
  const person = async (prefix: string): Promise<Member> => {
    const name = fresh(prefix);
    return { name, security: await t.addUser(name) };
  };
  const share = async (owner: Member, id: number, member: Member, role: 'viewer' | 'editor') => {
    const response = await sendAs(t.app, 'PUT', `/v3/playlist/${id}/members/${member.name}`, owner.security, { role });
    expect(response.statusCode, response.body).toBe(200);
  };
  const unshare = async (who: Member, id: number, member: Member) => {
    const response = await sendAs(t.app, 'DELETE', `/v3/playlist/${id}/members/${member.name}`, who.security);
    expect(response.statusCode, response.body).toBe(200);
  };
  const get = (who: Member, url: string, headers: Record<string, string> = {}) =>
    sendAs(t.app, 'GET', url, who.security, undefined, headers);

  it("answers a member the owner's playlist with owner and role, and the owner byte for byte as before", async () => {
    const [ivy, jon, kim] = [await person('ivy'), await person('jon'), await person('kim')];
    const made = await createPlaylist(t.app, ivy.security, 'Road trip', [3, 1, 2]);
    const before = await get(ivy, `/v3/playlist/${made.id}`);
    await share(ivy, made.id, jon, 'viewer');
    await share(ivy, made.id, kim, 'editor');

    const owners = await get(ivy, `/v3/playlist/${made.id}`);
    expect(owners.body).toBe(before.body);
    expect(owners.headers.etag).toBe(before.headers.etag);

    const viewer = await get(jon, `/v3/playlist/${made.id}`);
    expect(viewer.statusCode).toBe(200);
    expect(viewer.json<Seen>()).toEqual({ ...made, owner: ivy.name, role: 'viewer' });
    expect(viewer.headers.etag).not.toBe(before.headers.etag);
    const revalidated = await get(jon, `/v3/playlist/${made.id}`, { 'if-none-match': viewer.headers.etag as string });
    expect(revalidated.statusCode).toBe(304);
    expect((await get(kim, `/v3/playlist/${made.id}`)).json<Seen>()).toMatchObject({ owner: ivy.name, role: 'editor' });

    // Every form, the cover and the history read alike.
    const xspf = await get(jon, `/v3/playlist/${made.id}?format=xspf`);
    expect(xspf.statusCode).toBe(200);
    expect(xspf.body).toContain('<playlist');
    expect((await get(jon, `/v3/playlist/${made.id}/image`)).statusCode).toBe(200);
    const versions = await get(jon, `/v3/playlist/${made.id}/versions`);
    expect(versions.statusCode, versions.body).toBe(200);
    const version = await get(jon, `/v3/playlist/${made.id}/versions/1`);
    expect(version.json<Seen>()).toMatchObject({ id: made.id, owner: ivy.name, role: 'viewer' });
    expect((await get(jon, `/v3/playlist/${made.id}/diff?from=1`)).statusCode).toBe(200);

    // A stranger learns nothing.
    const stranger = await person('lee');
    for (const url of [
      `/v3/playlist/${made.id}`,
      `/v3/playlist/${made.id}/image`,
      `/v3/playlist/${made.id}/versions`,
    ]) {
      expectError(await get(stranger, url), 404);
    }
  });

  it('knows a member seen before without reading the membership again on SQLite, until it changes', async () => {
    const [ivy, jon] = [await person('ivy'), await person('jon')];
    const made = await createPlaylist(t.app, ivy.security, 'Remembered', [1]);
    const url = `/v3/playlist/${made.id}`;
    await share(ivy, made.id, jon, 'viewer');
    expect((await get(jon, url)).json<Seen>().role).toBe('viewer');
    const membershipReads = async () => {
      const before = t.queries.length;
      expect((await get(jon, url)).statusCode).toBe(200);
      return t.queries.slice(before).filter((query) => /playlist_members/.test(query.sql)).length;
    };
    // PostgreSQL reads it at every request.
    expect(await membershipReads()).toBe(dialect === 'sqlite' ? 0 : 1);
    await share(ivy, made.id, jon, 'editor');
    expect((await get(jon, url)).json<Seen>().role).toBe('editor');
    await unshare(ivy, made.id, jon);
    expectError(await get(jon, url), 404);
  });

  it('lets a viewer read only, an editor edit too, and only the owner delete', async () => {
    const [ivy, jon, kim] = [await person('ivy'), await person('jon'), await person('kim')];
    const made = await createPlaylist(t.app, ivy.security, 'Mixed', [1, 2]);
    await share(ivy, made.id, jon, 'viewer');
    await share(ivy, made.id, kim, 'editor');
    const url = `/v3/playlist/${made.id}`;

    const refused = [
      sendAs(t.app, 'PATCH', url, jon.security, { name: 'Mine now' }),
      sendAs(t.app, 'PUT', url, jon.security, { name: 'Mine now', songIds: [] }),
      sendAs(t.app, 'POST', `${url}/songs`, jon.security, { songIds: [4] }),
      sendAs(t.app, 'POST', `${url}/restore`, jon.security, { version: 1 }),
      sendAs(t.app, 'DELETE', url, jon.security),
      sendAs(t.app, 'DELETE', url, kim.security),
    ];
    for (const response of await Promise.all(refused)) expectError(response, 403);
    expect((await get(ivy, url)).json<PlaylistBody>().name).toBe('Mixed');

    // The editor edits under the ETag of what they read; their answer is theirs, with owner and role.
    const seen = await get(kim, url);
    const edited = await sendAs(
      t.app,
      'PATCH',
      url,
      kim.security,
      { name: 'Mixed by Kim' },
      {
        'if-match': seen.headers.etag as string,
      },
    );
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.json<Seen>()).toMatchObject({ name: 'Mixed by Kim', owner: ivy.name, role: 'editor' });
    expect((await get(kim, url)).headers.etag).toBe(edited.headers.etag);
    const stale = await sendAs(
      t.app,
      'PATCH',
      url,
      kim.security,
      { name: 'Again' },
      {
        'if-match': seen.headers.etag as string,
      },
    );
    expectError(stale, 412);
    const appended = await sendAs(t.app, 'POST', `${url}/songs`, kim.security, { songIds: [9] });
    expect(appended.statusCode, appended.body).toBe(200);

    // The history says who; the owner undoes the editor's changes; the owner's search finds the new name.
    const revisions = await get(ivy, `${url}/versions`);
    const by = revisions.json<{ version: number; by: string }[]>().map((r) => [r.version, r.by]);
    expect(by).toEqual([
      [3, kim.name],
      [2, kim.name],
      [1, ivy.name],
    ]);
    const found = await get(ivy, `/v3/playlist?search=${encodeURIComponent('kim')}`);
    expect(found.json<PlaylistBody[]>().map((p) => p.id)).toEqual([made.id]);
    const undone = await sendAs(t.app, 'POST', `${url}/restore`, ivy.security, { version: 1 });
    expect(undone.statusCode, undone.body).toBe(200);
    expect(undone.json<Seen>()).toEqual({ ...made });
  });

  it('takes a removed member or a changed role into account at their next request', async () => {
    const [ivy, jon] = [await person('ivy'), await person('jon')];
    const made = await createPlaylist(t.app, ivy.security, 'Short lived', [5]);
    const url = `/v3/playlist/${made.id}`;
    await share(ivy, made.id, jon, 'editor');
    expect((await get(jon, url)).statusCode).toBe(200);
    expect((await sendAs(t.app, 'PATCH', url, jon.security, { name: 'Edited' })).statusCode).toBe(200);
    await share(ivy, made.id, jon, 'viewer');
    expectError(await sendAs(t.app, 'PATCH', url, jon.security, { name: 'Again' }), 403);
    expect((await get(jon, url)).json<Seen>().role).toBe('viewer');
    await unshare(ivy, made.id, jon);
    expectError(await get(jon, url), 404);
    expectError(await get(jon, `${url}/image`), 404);
    expect((await get(jon, '/v3/playlist?scope=shared')).json<PlaylistBody[]>()).toEqual([]);
  });

  it("answers a deleted playlist's members 410, a restore included, until its owner restores it", async () => {
    const [ivy, jon] = [await person('ivy'), await person('jon')];
    const made = await createPlaylist(t.app, ivy.security, 'Gone soon', [1]);
    const url = `/v3/playlist/${made.id}`;
    await share(ivy, made.id, jon, 'editor');
    expect((await sendAs(t.app, 'DELETE', url, ivy.security)).statusCode).toBe(200);
    const onlyTheOwner = 'This playlist is already deleted. Only its owner can restore it.';
    expect(expectError(await get(jon, url), 410).errormsg).toBe(onlyTheOwner);
    expect(expectError(await get(jon, `${url}/versions`), 410).errormsg).toBe(onlyTheOwner);
    const refused = await sendAs(t.app, 'POST', `${url}/restore`, jon.security, { version: 1 });
    expect(expectError(refused, 410).errormsg).toBe(onlyTheOwner);
    expect((await get(jon, '/v3/playlist?scope=shared')).json<PlaylistBody[]>()).toEqual([]);
    expectError(await get(await person('lee'), url), 404);

    const restored = await sendAs(t.app, 'POST', `${url}/restore`, ivy.security, { version: 1 });
    expect(restored.statusCode, restored.body).toBe(200);
    expect((await get(jon, url)).json<Seen>()).toMatchObject({ id: made.id, owner: ivy.name, role: 'editor' });
  });

  it('lists and searches what is shared with the caller (scope=shared) or both (scope=all), paged in id order', async () => {
    const [ivy, jon] = [await person('ivy'), await person('jon')];
    const jons = await createPlaylist(t.app, jon.security, 'Jon sunrise', [1]);
    const ivys: PlaylistBody[] = [];
    for (const name of ['Ivy sunrise', 'Ivy night', 'Ivy sunset']) {
      ivys.push(await createPlaylist(t.app, ivy.security, name, [2]));
    }
    await share(ivy, ivys[0]!.id, jon, 'viewer');
    await share(ivy, ivys[2]!.id, jon, 'editor');
    const ids = (response: LightMyRequestResponse) => response.json<Seen[]>().map((p) => p.id);

    const own = await get(jon, '/v3/playlist');
    expect(ids(own)).toEqual([jons.id]);
    expect(own.json<Seen[]>()[0]).not.toHaveProperty('owner');
    const shared = await get(jon, '/v3/playlist?scope=shared');
    expect(ids(shared)).toEqual([ivys[0]!.id, ivys[2]!.id]);
    expect(shared.headers['x-total-count']).toBe('2');
    expect(shared.json<Seen[]>().map((p) => p.role)).toEqual(['viewer', 'editor']);
    expect(shared.json<Seen[]>()[0]!.owner).toBe(ivy.name);
    const all = await get(jon, '/v3/playlist?scope=all&limit=2');
    expect(ids(all)).toEqual([jons.id, ivys[0]!.id].sort((a, b) => a - b));
    expect(all.headers['x-total-count']).toBe('3');
    // The page's links stay in its scope.
    expect(all.headers.link).toBe('</v3/playlist?limit=2&offset=2&scope=all>; rel="next"');
    const secondShared = await get(jon, '/v3/playlist?scope=shared&limit=1&offset=1');
    expect(secondShared.headers.link).toBe('</v3/playlist?limit=1&offset=0&scope=shared>; rel="prev"');
    const rest = await get(jon, '/v3/playlist?scope=all&limit=2&offset=2');
    expect(ids(rest)).toEqual([ivys[2]!.id]);
    expect(rest.headers.link).toBe('</v3/playlist?limit=2&offset=0&scope=all>; rel="prev"');
    expect(rest.headers['x-total-count']).toBe('3');
    expect(rest.json<Seen[]>()[0]).toMatchObject({ owner: ivy.name, role: 'editor' });
    for (const [past, total] of [
      ['/v3/playlist?scope=shared&offset=5', '2'],
      ['/v3/playlist?scope=all&offset=5', '3'],
    ] as const) {
      const beyond = await get(jon, past);
      expect(beyond.json()).toEqual([]);
      expect(beyond.headers['x-total-count']).toBe(total);
    }
    // A page of answers already kept is one statement: its rows carry the roles, the owners and the total.
    for (const scope of ['shared', 'all']) {
      const statements = t.queries.length;
      const again = await get(jon, `/v3/playlist?scope=${scope}`);
      expect(again.statusCode).toBe(200);
      expect(t.queries.slice(statements).map((q) => q.sql)).toHaveLength(1);
    }

    expect(ids(await get(jon, '/v3/playlist?search=sunrise'))).toEqual([jons.id]);
    expect(ids(await get(jon, '/v3/playlist?search=sunrise&scope=shared'))).toEqual([ivys[0]!.id]);
    const both = await get(jon, '/v3/playlist?search=sun&scope=all');
    expect(ids(both)).toEqual([jons.id, ivys[0]!.id, ivys[2]!.id].sort((a, b) => a - b));
    expect(both.json<Seen[]>().find((p) => p.id === ivys[2]!.id)).toMatchObject({ owner: ivy.name, role: 'editor' });
    expectError(await get(jon, '/v3/playlist?scope=everything'), 400);
  });
});

// A membership removed through one instance takes effect at once on another, whatever the other remembers.
describeTwoInstances('a removed member on another instance (%s)', (apps) => {
  it('is refused by the other instance at the next request', async () => {
    const { one, two } = apps;
    const ivy = fresh('ivy');
    const jon = fresh('jon');
    const [ivySecurity, jonSecurity] = [await one.addUser(ivy), await one.addUser(jon)];
    const made = await createPlaylist(one.app, ivySecurity, 'Across', [1, 2]);
    const url = `/v3/playlist/${made.id}`;
    expect((await sendAs(one.app, 'PUT', `${url}/members/${jon}`, ivySecurity, { role: 'editor' })).statusCode).toBe(
      200,
    );
    // The other instance serves it (and keeps its answer and its owner) before the removal.
    for (let i = 0; i < 3; i++) {
      expect((await sendAs(two.app, 'GET', url, jonSecurity)).statusCode).toBe(200);
      expect((await sendAs(two.app, 'GET', url, ivySecurity)).statusCode).toBe(200);
    }
    expect((await sendAs(one.app, 'PUT', `${url}/members/${jon}`, ivySecurity, { role: 'viewer' })).statusCode).toBe(
      200,
    );
    expectError(await sendAs(two.app, 'PATCH', url, jonSecurity, { name: 'No' }), 403);
    expect((await sendAs(one.app, 'DELETE', `${url}/members/${jon}`, ivySecurity)).statusCode).toBe(200);
    expectError(await sendAs(two.app, 'GET', url, jonSecurity), 404);
    expectError(await sendAs(two.app, 'GET', `${url}/image`, jonSecurity), 404);
    expectError(await sendAs(two.app, 'GET', `${url}?format=m3u8`, jonSecurity), 404);
  });
});
