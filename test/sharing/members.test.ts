import { expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface Member {
  user: string;
  role: string;
}

const MEMBERS_MAX = 3;

describeEachDatabase('playlist members on %s', { MIXTAPE_MEMBERS_MAX: String(MEMBERS_MAX) }, (t) => {
  /** Users named `prefix-name`, each with the value of their `security` header. */
  const users = async (prefix: string, ...names: string[]) => {
    const made: Record<string, string> = {};
    for (const name of names) made[name] = await t.addUser(`${prefix}-${name}`);
    return made;
  };
  const members = (id: number, security: string, plural = '') =>
    sendAs(t.app, 'GET', `/v3/playlist${plural}/${id}/members`, security);
  const share = (id: number, security: string, user: string, role: unknown, plural = '') =>
    sendAs(t.app, 'PUT', `/v3/playlist${plural}/${id}/members/${encodeURIComponent(user)}`, security, { role });
  const unshare = (id: number, security: string, user: string, plural = '') =>
    sendAs(t.app, 'DELETE', `/v3/playlist${plural}/${id}/members/${encodeURIComponent(user)}`, security);
  const listOf = async (id: number, security: string) => {
    const response = await members(id, security);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Member[]>();
  };

  it('lists the owner first, then the members by name, as the owner adds them and changes their roles', async () => {
    const u = await users('list', 'ivy', 'kim', 'al', 'Bo');
    const playlist = await createPlaylist(t.app, u.ivy!, 'Shared', [1, 2]);
    expect(await listOf(playlist.id, u.ivy!)).toEqual([{ user: 'list-ivy', role: 'owner' }]);

    const added = await share(playlist.id, u.ivy!, 'list-kim', 'viewer');
    expect(added.statusCode, added.body).toBe(200);
    expect(added.headers['content-type']).toMatch(/^application\/json/);
    expect(added.json()).toEqual([
      { user: 'list-ivy', role: 'owner' },
      { user: 'list-kim', role: 'viewer' },
    ]);
    expect((await share(playlist.id, u.ivy!, 'list-al', 'editor', 's')).statusCode).toBe(200);
    expect((await share(playlist.id, u.ivy!, 'list-Bo', 'viewer')).statusCode).toBe(200);
    // People's order, whatever the database's collation: al, Bo, kim.
    const expected = [
      { user: 'list-ivy', role: 'owner' },
      { user: 'list-al', role: 'editor' },
      { user: 'list-Bo', role: 'viewer' },
      { user: 'list-kim', role: 'viewer' },
    ];
    expect(await listOf(playlist.id, u.ivy!)).toEqual(expected);
    const plural = await members(playlist.id, u.ivy!, 's');
    expect(plural.json()).toEqual(expected);

    const promoted = await share(playlist.id, u.ivy!, 'list-kim', 'editor');
    expect(promoted.statusCode, promoted.body).toBe(200);
    expect(promoted.json<Member[]>().at(-1)).toEqual({ user: 'list-kim', role: 'editor' });
    // The same role again changes nothing.
    const same = await share(playlist.id, u.ivy!, 'list-kim', 'editor');
    expect(same.json()).toEqual(promoted.json());
    // Another playlist of the owner's has its own members.
    const other = await createPlaylist(t.app, u.ivy!, 'Not shared', []);
    expect(await listOf(other.id, u.ivy!)).toEqual([{ user: 'list-ivy', role: 'owner' }]);
  });

  it('removes a member with an empty 200; a user who is not a member, or no user, is 404', async () => {
    const u = await users('remove', 'ivy', 'jon', 'kim');
    const playlist = await createPlaylist(t.app, u.ivy!, 'Shared', []);
    await share(playlist.id, u.ivy!, 'remove-jon', 'viewer');
    await share(playlist.id, u.ivy!, 'remove-kim', 'editor');

    const removed = await unshare(playlist.id, u.ivy!, 'remove-jon');
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.body).toBe('');
    expect(await listOf(playlist.id, u.ivy!)).toEqual([
      { user: 'remove-ivy', role: 'owner' },
      { user: 'remove-kim', role: 'editor' },
    ]);
    expect(expectError(await unshare(playlist.id, u.ivy!, 'remove-jon'), 404).errormsg).toMatch(/not a member/);
    expect(expectError(await unshare(playlist.id, u.ivy!, 'remove-nobody'), 404).errormsg).toBe('No such user.');
    expect((await unshare(playlist.id, u.ivy!, 'remove-kim', 's')).statusCode).toBe(200);
    expect(await listOf(playlist.id, u.ivy!)).toEqual([{ user: 'remove-ivy', role: 'owner' }]);
    expectError(await unshare(playlist.id, u.ivy!, 'remove-ivy'), 400);
  });

  it('refuses an unknown user, the owner, a role other than viewer and editor, and a stranger who names anyone', async () => {
    const u = await users('bad', 'ivy', 'jon', 'eve');
    const playlist = await createPlaylist(t.app, u.ivy!, 'Shared', []);
    expect(expectError(await share(playlist.id, u.ivy!, 'bad-nobody', 'viewer'), 404).errormsg).toBe('No such user.');
    // A name no user can have is no user either.
    expect(expectError(await share(playlist.id, u.ivy!, 'no:body', 'viewer'), 404).errormsg).toBe('No such user.');
    expect(expectError(await share(playlist.id, u.ivy!, 'bad-ivy', 'viewer'), 400).errormsg).toMatch(/owner/);
    for (const role of ['owner', 'admin', '', 1, null])
      expectError(await share(playlist.id, u.ivy!, 'bad-jon', role), 400);
    expectError(await sendAs(t.app, 'PUT', `/v3/playlist/${playlist.id}/members/bad-jon`, u.ivy!, {}), 400);
    expectError(await sendAs(t.app, 'PUT', `/v3/playlist/0/members/bad-jon`, u.ivy!, { role: 'viewer' }), 400);
    expect(await listOf(playlist.id, u.ivy!)).toEqual([{ user: 'bad-ivy', role: 'owner' }]);

    // The playlist's access comes first: a stranger learns neither of it nor of the user named.
    for (const name of ['bad-jon', 'bad-nobody']) {
      expect(expectError(await share(playlist.id, u.eve!, name, 'viewer'), 404).errormsg).toBe('No such playlist.');
      expect(expectError(await unshare(playlist.id, u.eve!, name), 404).errormsg).toBe('No such playlist.');
    }
    expectError(await members(playlist.id, u.eve!), 404);
    expectError(await members(999_999_999, u.ivy!), 404);
    expectError(await share(999_999_999, u.ivy!, 'bad-jon', 'viewer'), 404);
    // Its owner's deleted playlist is 410, as it is for every other request.
    expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}`, u.ivy!)).statusCode).toBe(200);
    expectError(await members(playlist.id, u.ivy!), 410);
    expectError(await share(playlist.id, u.ivy!, 'bad-jon', 'viewer'), 410);
    expectError(await unshare(playlist.id, u.ivy!, 'bad-jon'), 410);
    expectError(await members(playlist.id, u.eve!), 404);
  });

  it('lets members list the members, not manage them (403), and each member leave; strangers get 404', async () => {
    const u = await users('rights', 'ivy', 'jon', 'kim', 'lee', 'eve');
    const playlist = await createPlaylist(t.app, u.ivy!, 'Shared', [1]);
    const { id } = playlist;
    await share(id, u.ivy!, 'rights-jon', 'viewer');
    await share(id, u.ivy!, 'rights-kim', 'editor');
    await share(id, u.ivy!, 'rights-lee', 'viewer');
    const everyone = [
      { user: 'rights-ivy', role: 'owner' },
      { user: 'rights-jon', role: 'viewer' },
      { user: 'rights-kim', role: 'editor' },
      { user: 'rights-lee', role: 'viewer' },
    ];
    // Reading the list is reading the playlist.
    expect(await listOf(id, u.jon!)).toEqual(everyone);
    expect(await listOf(id, u.kim!)).toEqual(everyone);
    expectError(await members(id, u.eve!), 404);

    // Managing members is the owner's, whatever the member's role, and whoever is named (a user or not).
    for (const member of [u.jon!, u.kim!]) {
      expectError(await share(id, member, 'rights-eve', 'viewer'), 403);
      expectError(await share(id, member, 'rights-lee', 'editor'), 403);
      expectError(await share(id, member, 'rights-nobody', 'viewer'), 403);
      expectError(await unshare(id, member, 'rights-lee'), 403);
      expectError(await unshare(id, member, 'rights-nobody'), 403);
      expectError(await unshare(id, member, 'rights-ivy'), 403);
    }
    // Not even to change their own role.
    expectError(await share(id, u.jon!, 'rights-jon', 'editor'), 403);
    expect(await listOf(id, u.ivy!)).toEqual(everyone);
    expectError(await share(id, u.eve!, 'rights-eve', 'viewer'), 404);
    expectError(await unshare(id, u.eve!, 'rights-eve'), 404);

    // A member leaves by themselves; they are then a stranger to it.
    const left = await unshare(id, u.jon!, 'rights-jon', 's');
    expect(left.statusCode, left.body).toBe(200);
    expect(left.body).toBe('');
    expectError(await members(id, u.jon!), 404);
    expectError(await unshare(id, u.jon!, 'rights-jon'), 404);
    expect((await unshare(id, u.kim!, 'rights-kim')).statusCode).toBe(200);
    expect(await listOf(id, u.ivy!)).toEqual([
      { user: 'rights-ivy', role: 'owner' },
      { user: 'rights-lee', role: 'viewer' },
    ]);

    // A deleted playlist's members get 410 on every request to it, leaving included.
    expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${id}`, u.ivy!)).statusCode).toBe(200);
    expectError(await members(id, u.lee!), 410);
    expectError(await unshare(id, u.lee!, 'rights-lee'), 410);
    expectError(await members(id, u.kim!), 404);
    // The owner's restore brings it back with its members.
    const restored = await sendAs(t.app, 'POST', `/v3/playlist/${id}/restore`, u.ivy!, { version: 1 });
    expect(restored.statusCode, restored.body).toBe(200);
    expect(await listOf(id, u.lee!)).toEqual([
      { user: 'rights-ivy', role: 'owner' },
      { user: 'rights-lee', role: 'viewer' },
    ]);
  });

  it(`takes at most MIXTAPE_MEMBERS_MAX (${MEMBERS_MAX}) members: one more is 409, a role change still goes`, async () => {
    const u = await users('max', 'ivy', 'a', 'b', 'c', 'd');
    const playlist = await createPlaylist(t.app, u.ivy!, 'Crowded', []);
    for (const name of ['a', 'b', 'c'])
      expect((await share(playlist.id, u.ivy!, `max-${name}`, 'viewer')).statusCode).toBe(200);
    expect(expectError(await share(playlist.id, u.ivy!, 'max-d', 'viewer'), 409).errormsg).toMatch(/3 members/);
    expect((await share(playlist.id, u.ivy!, 'max-c', 'editor')).statusCode).toBe(200);
    expect(await listOf(playlist.id, u.ivy!)).toHaveLength(1 + MEMBERS_MAX);
    expect((await unshare(playlist.id, u.ivy!, 'max-a')).statusCode).toBe(200);
    expect((await share(playlist.id, u.ivy!, 'max-d', 'viewer')).statusCode).toBe(200);
    expect((await listOf(playlist.id, u.ivy!)).map((m) => m.user)).toEqual(['max-ivy', 'max-b', 'max-c', 'max-d']);
  });

  it('mixtape user remove ends the user’s memberships', async () => {
    const u = await users('cli', 'ivy', 'jon', 'kim');
    const playlist = await createPlaylist(t.app, u.ivy!, 'Shared', []);
    await share(playlist.id, u.ivy!, 'cli-jon', 'viewer');
    await share(playlist.id, u.ivy!, 'cli-kim', 'editor');
    const removed = await runCli(t.config.database.url, ['user', 'remove', 'cli-jon']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(await listOf(playlist.id, u.ivy!)).toEqual([
      { user: 'cli-ivy', role: 'owner' },
      { user: 'cli-kim', role: 'editor' },
    ]);
  }, 60_000);
});
