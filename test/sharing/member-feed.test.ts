import { createHmac } from 'node:crypto';
import { expect, it } from 'vitest';
import { pruneMemberEvents } from '../../src/history/pruning.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { feedReader, untimed, type FeedEntry } from '../helpers/feed.js';
import { createPlaylist, sendAs } from '../helpers/requests.js';
import { runCli } from '../helpers/cli-process.js';

describeEachDatabase('the change feed of shared playlists on %s', (t) => {
  const { feed, feedShowing, settled } = feedReader(() => t.app);
  const share = async (id: number, owner: string, user: string, role: 'viewer' | 'editor') => {
    const response = await sendAs(t.app, 'PUT', `/v3/playlist/${id}/members/${user}`, owner, { role });
    expect(response.statusCode, response.body).toBe(200);
  };
  const unshare = async (id: number, owner: string, user: string) => {
    const response = await sendAs(t.app, 'DELETE', `/v3/playlist/${id}/members/${user}`, owner);
    expect(response.statusCode, response.body).toBe(200);
  };
  const rename = async (id: number, owner: string, name: string) => {
    const response = await sendAs(t.app, 'PATCH', `/v3/playlist/${id}`, owner, { name });
    expect(response.statusCode, response.body).toBe(200);
  };

  it('tells a member shared when added or given another role, the owner’s edits and delete, and unshared', async () => {
    const ivy = await t.addUser('feed-ivy');
    const jon = await t.addUser('feed-jon');
    let next = (await feed(jon)).next;
    const playlist = await createPlaylist(t.app, ivy, 'Shared', [1]);
    const kept = await createPlaylist(t.app, ivy, 'Kept', []);
    const { id } = playlist;

    await share(id, ivy, 'feed-jon', 'viewer');
    next = await settled(jon, next, [{ id, version: 1, change: 'shared' }]);
    await share(id, ivy, 'feed-jon', 'editor');
    next = await settled(jon, next, [{ id, version: 1, change: 'shared' }]);
    // The same role again is no change.
    await share(id, ivy, 'feed-jon', 'editor');
    await rename(id, ivy, 'Renamed');
    next = await settled(jon, next, [{ id, version: 2, change: 'edit' }]);
    await unshare(id, ivy, 'feed-jon');
    next = await settled(jon, next, [{ id, change: 'unshared' }]);
    // No longer a member: the owner's edits are theirs alone.
    await rename(id, ivy, 'Private again');
    await share(kept.id, ivy, 'feed-jon', 'viewer');
    next = await settled(jon, next, [{ id: kept.id, version: 1, change: 'shared' }]);
    expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${kept.id}`, ivy)).statusCode).toBe(200);
    next = await settled(jon, next, [{ id: kept.id, change: 'delete' }]);
    expect((await feed(jon, `?since=${next}`)).changes).toEqual([]);
    // The owner's own feed has their revisions, none of the member events.
    const own = await feed(ivy);
    expect(untimed(own)).toEqual([{ id, version: 3, change: 'edit' }]);
  });

  it('lists the playlists shared with the caller beside their own on the first sync, in id order, a page at a time', async () => {
    const ivy = await t.addUser('first-ivy');
    const jon = await t.addUser('first-jon');
    const start = (await feed(jon)).next;
    const a = await createPlaylist(t.app, ivy, 'A', []);
    const b = await createPlaylist(t.app, jon, 'B', []);
    const c = await createPlaylist(t.app, ivy, 'C', []);
    const d = await createPlaylist(t.app, ivy, 'D (not shared)', []);
    const deleted = await createPlaylist(t.app, ivy, 'E (deleted)', []);
    await share(a.id, ivy, 'first-jon', 'viewer');
    await share(c.id, ivy, 'first-jon', 'editor');
    await share(deleted.id, ivy, 'first-jon', 'viewer');
    await rename(c.id, ivy, 'C2');
    expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${deleted.id}`, ivy)).statusCode).toBe(200);
    // Followed since before: each playlist once, where its latest entry stands, whichever log it came from. (On
    // PostgreSQL this also waits until every write above is below the horizon, for the first sync to start past it.)
    await settled(jon, start, [
      { id: b.id, version: 1, change: 'create' },
      { id: a.id, version: 1, change: 'shared' },
      { id: c.id, version: 2, change: 'edit' },
      { id: deleted.id, change: 'delete' },
    ]);

    const seen: FeedEntry[] = [];
    let page = await feed(jon, '?limit=1');
    seen.push(...page.changes);
    for (let i = 0; page.more && i < 10; i++) {
      page = await feed(jon, `?limit=1&since=${page.next}`);
      seen.push(...page.changes);
    }
    expect(page.more).toBe(false);
    expect(seen.map(({ at: _, by: _by, ...e }) => e)).toEqual([
      { id: a.id, version: 1, change: 'create' },
      { id: b.id, version: 1, change: 'create' },
      { id: c.id, version: 2, change: 'edit' },
    ]);
    expect(seen.map((e) => e.id)).not.toContain(d.id);
    // Then only what changes.
    await rename(a.id, ivy, 'A2');
    await settled(jon, page.next, [{ id: a.id, version: 2, change: 'edit' }]);
  });

  it('merges revisions and member events in the order they were written, each log paged on its own', async () => {
    const ivy = await t.addUser('merge-ivy');
    const jon = await t.addUser('merge-jon');
    const start = (await feed(jon)).next;
    const own = await createPlaylist(t.app, jon, 'Mine', []);
    const shared = await createPlaylist(t.app, ivy, 'Theirs', []);
    await share(shared.id, ivy, 'merge-jon', 'viewer');
    await rename(own.id, jon, 'Mine 2');
    await rename(shared.id, ivy, 'Theirs 2');
    await share(shared.id, ivy, 'merge-jon', 'editor');
    await rename(own.id, jon, 'Mine 3');
    const all = [
      { id: own.id, version: 1, change: 'create' },
      { id: shared.id, version: 1, change: 'create' },
      { id: shared.id, version: 1, change: 'shared' },
      { id: own.id, version: 2, change: 'edit' },
      { id: shared.id, version: 2, change: 'edit' },
      { id: shared.id, version: 2, change: 'shared' },
      { id: own.id, version: 3, change: 'edit' },
    ];
    // One entry a page: every revision and event comes once, in order, none skipped.
    await feedShowing(jon, `?since=${start}`, [
      { id: shared.id, version: 2, change: 'shared' },
      { id: own.id, version: 3, change: 'edit' },
    ]);
    const seen: object[] = [];
    let next = start;
    for (let i = 0; i < 20; i++) {
      const page = await feed(jon, `?limit=1&since=${next}`);
      seen.push(...untimed(page));
      next = page.next;
      if (!page.more) break;
    }
    expect(seen).toEqual(all);
  });

  it('still takes tokens of the earlier format, whose member events start from the beginning', async () => {
    const ivy = await t.addUser('old-ivy');
    const jon = await t.addUser('old-jon');
    const start = (await feed(jon)).next;
    const playlist = await createPlaylist(t.app, ivy, 'Shared', []);
    await share(playlist.id, ivy, 'old-jon', 'viewer');
    const next = await settled(jon, start, [{ id: playlist.id, version: 1, change: 'shared' }]);

    const key = await t.db.kysely
      .selectFrom('service_keys')
      .select('key')
      .where('name', '=', 'changes')
      .executeTakeFirstOrThrow();
    const [body] = next.split('.');
    // Today's fields: user, the revisions', the member events', the catalog's and the library's positions, listed,
    // issued.
    const [user, xid, seq, , , , , , , listed, issued] = Buffer.from(body!, 'base64url').toString('latin1').split('.');
    const fields = [user, xid, seq, listed, issued].join('.');
    const mac = createHmac('sha256', Buffer.from(key.key, 'base64')).update(fields).digest('base64url');
    const old = `${Buffer.from(fields).toString('base64url')}.${mac}`;
    // The revisions stay delivered; the membership comes again, as the earlier token never delivered one.
    const again = await feedShowing(jon, `?since=${old}`, [{ id: playlist.id, version: 1, change: 'shared' }]);
    expect(untimed(again)).toEqual([{ id: playlist.id, version: 1, change: 'shared' }]);
    await rename(playlist.id, ivy, 'Renamed');
    await settled(jon, again.next, [{ id: playlist.id, version: 2, change: 'edit' }]);
  });

  it('tells the members of a removed user’s playlists unshared', async () => {
    const ivy = await t.addUser('gone-ivy');
    const jon = await t.addUser('gone-jon');
    const start = (await feed(jon)).next;
    const playlist = await createPlaylist(t.app, ivy, 'Going', []);
    await share(playlist.id, ivy, 'gone-jon', 'viewer');
    const next = await settled(jon, start, [{ id: playlist.id, version: 1, change: 'shared' }]);
    const removed = await runCli(t.config.database.url, ['user', 'remove', 'gone-ivy']);
    expect(removed.code, removed.stderr).toBe(0);
    await settled(jon, next, [{ id: playlist.id, change: 'unshared' }]);
  }, 60_000);

  it('prunes member events older than the history kept', async () => {
    const ivy = await t.addUser('prune-ivy');
    await t.addUser('prune-jon');
    const playlist = await createPlaylist(t.app, ivy, 'Old', []);
    await share(playlist.id, ivy, 'prune-jon', 'viewer');
    const events = () =>
      t.db.kysely.selectFrom('member_events').select('seq').where('playlist_id', '=', playlist.id).execute();
    expect(await events()).toHaveLength(1);
    expect(await pruneMemberEvents(t.db, Date.now() - 60_000)).toBe(0);
    expect(await events()).toHaveLength(1);
    let rounds = 0;
    while ((await pruneMemberEvents(t.db, Date.now() + 60_000)) > 0 && rounds < 100) rounds++;
    expect(await events()).toEqual([]);
  });
});
