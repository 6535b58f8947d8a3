import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { describeEachDatabase, describeTwoInstances } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';
import type { TestApp } from '../helpers/app.js';
import type { ChangeKind } from '../../src/domain/change-kinds.js';

interface Person {
  readonly name: string;
  readonly security: string;
}

interface Smart extends PlaylistBody {
  readonly rulesStatus?: { readonly unreadable: readonly number[] };
}

const following = (...ids: number[]) => ({
  match: 'any',
  conditions: ids.map((value) => ({ field: 'playlist', op: 'in', value })),
});

/** The helpers of these tests, on one app. */
function people(t: () => TestApp) {
  const send = (...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) =>
    sendAs(t().app, ...args);
  return {
    send,
    person: async (prefix: string): Promise<Person> => {
      const name = `${prefix}_${randomBytes(4).toString('hex')}`;
      return { name, security: await t().addUser(name) };
    },
    share: async (owner: Person, id: number, member: Person, role: 'viewer' | 'editor') => {
      const response = await send('PUT', `/v3/playlist/${id}/members/${member.name}`, owner.security, { role });
      expect(response.statusCode, response.body).toBe(200);
    },
    unshare: async (owner: Person, id: number, member: Person) => {
      const response = await send('DELETE', `/v3/playlist/${id}/members/${member.name}`, owner.security);
      expect(response.statusCode, response.body).toBe(200);
    },
    smart: async (owner: Person, name: string, rules: unknown): Promise<number> => {
      const made = await send('POST', '/v3/playlist', owner.security, { name, rules });
      expect(made.statusCode, made.body).toBe(200);
      return made.json<PlaylistBody>().id;
    },
    read: async (who: Person, id: number): Promise<Smart> => {
      const read = await send('GET', `/v3/playlist/${id}`, who.security);
      expect(read.statusCode, read.body).toBe(200);
      return read.json<Smart>();
    },
    setSongs: async (who: Person, id: number, songIds: number[]) => {
      const edited = await send('PATCH', `/v3/playlist/${id}`, who.security, { songIds });
      expect(edited.statusCode, edited.body).toBe(200);
    },
  };
}

/** The number of revisions of these playlists of this kind, straight from the database. */
async function revisions(t: TestApp, ids: readonly number[], change: ChangeKind): Promise<number> {
  const row = await t.db.kysely
    .selectFrom('playlist_revisions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('playlist_id', 'in', ids)
    .where('change', '=', change)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** How many refreshes of smart playlists the app has done, whatever their outcome (its /metrics). */
async function refreshesDone(t: TestApp): Promise<number> {
  const metrics = await t.app.inject({ url: '/metrics' });
  expect(metrics.statusCode).toBe(200);
  let done = 0;
  for (const [, value] of metrics.body.matchAll(/^mixtape_smart_refreshes_total\{[^}]*\} (\d+)$/gm))
    done += Number(value);
  return done;
}

/** Waits (at most 20 s) until `count()` has stayed the same for half a second at least `least`; answers it. */
async function settled(count: () => Promise<number>, least: number): Promise<number> {
  const deadline = Date.now() + 20_000;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const now = await count();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (now >= least && Date.now() - since >= 500) {
      return now;
    }
    await sleep(25);
  }
  return last;
}

describeEachDatabase("smart playlists read with their owner's rights, on %s", (t) => {
  const { send, person, share, unshare, smart, read, setSongs } = people(() => t);

  it('stops following a playlist once its owner may no longer read it, and says so beside the rules', async () => {
    const [alice, bob] = [await person('alice'), await person('bob')];
    const p = await createPlaylist(t.app, alice.security, 'Private', [1, 2]);
    await share(alice, p.id, bob, 'viewer');
    const s = await smart(bob, 'Follows P', following(p.id));
    expect((await read(bob, s)).songs.map((song) => song.id)).toEqual([1, 2]);

    await unshare(alice, p.id, bob);
    expect((await send('GET', `/v3/playlist/${p.id}`, bob.security)).statusCode).toBe(404);
    await setSongs(alice, p.id, [3, 4, 5]);

    const after = await read(bob, s);
    expect(after.songs).toEqual([]);
    expect(after.rulesStatus).toEqual({ unreadable: [p.id] });
    expect(after).toHaveProperty('rules');
    // Alice's new songs never reached bob's history.
    const versions = await send('GET', `/v3/playlist/${s}/versions/${await newest(bob, s)}`, bob.security);
    expect(versions.statusCode, versions.body).toBe(200);
    expect(versions.json<PlaylistBody>().songs.map((song) => song.id)).not.toContain(3);

    // The right comes back: the condition matches again and the status goes.
    await share(alice, p.id, bob, 'viewer');
    const again = await read(bob, s);
    expect(again.songs.map((song) => song.id)).toEqual([3, 4, 5]);
    expect(again.rulesStatus).toBeUndefined();
  });

  async function newest(who: Person, id: number): Promise<number> {
    const listed = await send('GET', `/v3/playlist/${id}/versions`, who.security);
    return listed.json<{ version: number }[]>()[0]!.version;
  }

  it("checks rules an editor saves with the owner's rights, so they cannot carry another's playlist in", async () => {
    const [alice, bob, carol] = [await person('alice'), await person('bob'), await person('carol')];
    const p = await createPlaylist(t.app, alice.security, 'Shared with bob to edit', [1]);
    const q = await createPlaylist(t.app, carol.security, "Carol's own", [7, 8]);
    await share(alice, p.id, bob, 'editor');
    await share(carol, q.id, bob, 'viewer');

    const patched = await send('PATCH', `/v3/playlist/${p.id}`, bob.security, { rules: following(q.id) });
    expect(expectError(patched, 400).errormsg).toMatch(/rules\/conditions\/0/);
    const put = await send('PUT', `/v3/playlist/${p.id}`, bob.security, { name: 'x', rules: following(q.id) });
    expect(put.statusCode, put.body).toBe(400);
    // Nothing was written: P is as alice made it.
    expect((await read(alice, p.id)).songs.map((song) => song.id)).toEqual([1]);
    expect(await newest(alice, p.id)).toBe(1);
  });

  it('restores the rules of the version restored, checked as a save is', async () => {
    const [alice, bob] = [await person('alice'), await person('bob')];
    const p = await createPlaylist(t.app, alice.security, 'Private', [1, 2]);
    await share(alice, p.id, bob, 'viewer');
    const s = await smart(bob, 'Follows P', following(p.id));
    const deletedAt = await newest(bob, s);
    const deleted = await send('DELETE', `/v3/playlist/${s}`, bob.security);
    expect(deleted.statusCode, deleted.body).toBe(200);
    await unshare(alice, p.id, bob);

    const restored = await send('POST', `/v3/playlist/${s}/restore`, bob.security, { version: deletedAt });
    expect(restored.statusCode, restored.body).toBe(400);
    expect((await send('GET', `/v3/playlist/${s}`, bob.security)).statusCode).toBe(410);

    // A hand-made version of a playlist that later had rules comes back hand-made.
    const hand = await createPlaylist(t.app, bob.security, 'By hand', [4]);
    const ruled = await send('PATCH', `/v3/playlist/${hand.id}`, bob.security, {
      rules: { match: 'all', conditions: [], limit: 2 },
    });
    expect(ruled.statusCode, ruled.body).toBe(200);
    expect((await send('DELETE', `/v3/playlist/${hand.id}`, bob.security)).statusCode).toBe(200);
    const back = await send('POST', `/v3/playlist/${hand.id}/restore`, bob.security, { version: 1 });
    expect(back.statusCode, back.body).toBe(200);
    const body = back.json<Smart>();
    expect(body.songs.map((song) => song.id)).toEqual([4]);
    expect(body).not.toHaveProperty('rules');
  });

  it('answers a write before the other playlists that follow it refresh, and each of them refreshes once', async () => {
    const [alice, bob] = [await person('alice'), await person('bob')];
    const p = await createPlaylist(t.app, alice.security, 'Followed', [1]);
    await share(alice, p.id, bob, 'viewer');
    const followers: number[] = [];
    for (let i = 0; i < 30; i += 1) followers.push(await smart(bob, `Follower ${i}`, following(p.id)));

    await setSongs(alice, p.id, [1, 2]);
    // Answered before the 30 refreshes: with them inside the write, all 30 would be written by now.
    expect(await revisions(t, followers, 'refresh')).toBeLessThan(30);
    expect(await settled(() => revisions(t, followers, 'refresh'), 30)).toBe(30);
    expect((await read(bob, followers[29]!)).songs.map((song) => song.id)).toEqual([1, 2]);
  });

  it('refreshes layers of followers once each, not once for each path to them', async () => {
    const alice = await person('alice');
    const p = await createPlaylist(t.app, alice.security, 'Root', [1]);
    const layers: number[][] = [];
    let below = [p.id];
    for (let layer = 0; layer < 3; layer += 1) {
      const made: number[] = [];
      for (let i = 0; i < 6; i += 1) made.push(await smart(alice, `L${layer}.${i}`, following(...below)));
      layers.push(made);
      below = made;
    }
    const all = layers.flat();
    const before = await refreshesDone(t);
    await setSongs(alice, p.id, [1, 2, 3]);
    expect(await settled(() => revisions(t, all, 'refresh'), 18)).toBe(18);
    // Each of the 18 worked out once: along every path, 6 + 36 + 36.
    expect((await refreshesDone(t)) - before).toBe(18);
    for (const id of layers[2]!) expect((await read(alice, id)).songs.map((song) => song.id)).toEqual([1, 2, 3]);
  });
});

describeTwoInstances('a smart playlist read on another instance than the write it follows, on %s', (apps) => {
  const one = people(() => apps.one);
  it('answers the songs of the playlist it follows as they are now', async () => {
    const alice = await one.person('alice');
    const p = await createPlaylist(apps.one.app, alice.security, 'Source', [1]);
    const s = await one.smart(alice, 'Follower', following(p.id));
    const readTwo = async () => {
      const read = await sendAs(apps.two.app, 'GET', `/v3/playlist/${s}`, alice.security);
      expect(read.statusCode, read.body).toBe(200);
      return read.json<Smart>().songs.map((song) => song.id);
    };
    expect(await readTwo()).toEqual([1]);
    // Written on instance two, whose own queue refreshes it; read at once on instance one.
    const edited = await sendAs(apps.two.app, 'PATCH', `/v3/playlist/${p.id}`, alice.security, { songIds: [2, 1] });
    expect(edited.statusCode, edited.body).toBe(200);
    expect((await one.read(alice, s)).songs.map((song) => song.id)).toEqual([1, 2]);
    expect(await readTwo()).toEqual([1, 2]);
  });
});
