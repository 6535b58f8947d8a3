import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';
import { describeEachDatabase, describeTwoInstances } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface Page {
  readonly changes: { id: number; change: string; version?: number }[];
  readonly next: string;
  readonly more: boolean;
}

/** A feed request and how long it took to be answered. */
async function timed(app: TestApp, security: string, query: string) {
  const started = Date.now();
  const answer = await sendAs(app.app, 'GET', `/v3/changes?${query}`, security);
  return { answer, ms: Date.now() - started };
}

type Change = Page['changes'][number];

/**
 * Long polls from `since` (each `wait=20`) until the changes answered hold one `wanted` accepts, or 15 s pass: every
 * change answered, and how long until the last answer. (On PostgreSQL the feed may hand out a change made just
 * before `since` a little late, once older transactions elsewhere on the server have ended: it comes first.)
 */
async function waitFor(app: TestApp, security: string, since: string, wanted: (change: Change) => boolean) {
  const started = Date.now();
  const changes: Change[] = [];
  let token = since;
  while (!changes.some(wanted) && Date.now() - started < 15_000) {
    const answer = await sendAs(app.app, 'GET', `/v3/changes?since=${encodeURIComponent(token)}&wait=20`, security);
    expect(answer.statusCode, answer.body).toBe(200);
    const page = answer.json<Page>();
    changes.push(...page.changes);
    token = page.next;
  }
  return { changes, ms: Date.now() - started, next: token };
}

/** The requests the app holds waiting (its /metrics). */
async function waitingRequests(app: TestApp): Promise<number> {
  const metrics = await app.app.inject({ url: '/metrics' });
  return Number(/^mixtape_waiting_requests (\d+)$/m.exec(metrics.body)?.[1] ?? '0');
}

/**
 * The caller's current point in the feed, with nothing listed: `since=now`, then past what it still lists (on
 * PostgreSQL the current point is behind transactions still open when it is read, so it may list a change just made).
 */
async function now(app: TestApp, security: string): Promise<string> {
  let answer = await sendAs(app.app, 'GET', '/v3/changes?since=now', security);
  for (let tries = 0; tries < 20; tries += 1) {
    expect(answer.statusCode, answer.body).toBe(200);
    const page = answer.json<Page>();
    if (page.changes.length === 0) return page.next;
    answer = await sendAs(app.app, 'GET', `/v3/changes?since=${encodeURIComponent(page.next)}`, security);
  }
  throw new Error('the feed kept listing changes');
}

describeEachDatabase('the change feed that waits, on %s', { MIXTAPE_WAITS_PER_USER: '2' }, (t) => {
  it('answers a waiting request at the commit of a change it lists, and not at another user’s', async () => {
    const alice = await t.addUser();
    const bob = await t.addUser();
    const mine = await createPlaylist(t.app, alice, 'Watched', [1]);
    const since = await now(t, alice);
    const waiting = waitFor(t, alice, since, (change) => change.change === 'edit');
    await sleep(300);
    // Bob's own change is not in alice's feed: she still waits.
    const his = await createPlaylist(t.app, bob, 'Not hers', [2]);
    await sleep(300);
    const edited = await sendAs(t.app, 'PATCH', `/v3/playlist/${mine.id}`, alice, { name: 'Watched, renamed' });
    expect(edited.statusCode, edited.body).toBe(200);
    const { changes, ms } = await waiting;
    expect(changes).toContainEqual(expect.objectContaining({ id: mine.id, change: 'edit', version: 2 }));
    expect(changes.map((change) => change.id)).not.toContain(his.id);
    // It waited for the edit (600 ms in), and was answered well before its 20 s.
    expect(ms).toBeGreaterThanOrEqual(500);
    expect(ms).toBeLessThan(10_000);
  });

  it('answers an empty page and a token to wait from when nothing changes in time', async () => {
    const alice = await t.addUser();
    const since = await now(t, alice);
    const { answer, ms } = await timed(t, alice, `since=${encodeURIComponent(since)}&wait=1`);
    expect(answer.statusCode, answer.body).toBe(200);
    const page = answer.json<Page>();
    expect(page.changes).toEqual([]);
    expect(page.more).toBe(false);
    expect(typeof page.next).toBe('string');
    expect(ms).toBeGreaterThanOrEqual(900);
    // The token it gave waits from there: a change after it is the next answer.
    const mine = await createPlaylist(t.app, alice, 'Later', [3]);
    const after = await timed(t, alice, `since=${encodeURIComponent(page.next)}&wait=5`);
    expect(after.answer.json<Page>().changes).toEqual([expect.objectContaining({ id: mine.id, change: 'create' })]);
  });

  it('wakes a member at a change of a playlist shared with them, and at their removal', async () => {
    const [aliceName, bobName] = [`alice_${Date.now()}`, `bob_${Date.now()}`];
    const alice = await t.addUser(aliceName);
    const bob = await t.addUser(bobName);
    const shared = await createPlaylist(t.app, alice, 'Shared', [1]);
    const put = await sendAs(t.app, 'PUT', `/v3/playlist/${shared.id}/members/${bobName}`, alice, { role: 'viewer' });
    expect(put.statusCode, put.body).toBe(200);
    const since = await now(t, bob);
    const waiting = waitFor(t, bob, since, (change) => change.change === 'edit');
    await sleep(200);
    await sendAs(t.app, 'PATCH', `/v3/playlist/${shared.id}`, alice, { songIds: [1, 2] });
    const first = await waiting;
    // Each change of a playlist says who made it.
    expect(first.changes).toContainEqual(expect.objectContaining({ id: shared.id, change: 'edit', by: aliceName }));
    expect(first.ms).toBeLessThan(10_000);

    const waitingAgain = waitFor(t, bob, first.next, (change) => change.change === 'unshared');
    await sleep(200);
    const removed = await sendAs(t.app, 'DELETE', `/v3/playlist/${shared.id}/members/${bobName}`, alice);
    expect(removed.statusCode, removed.body).toBe(200);
    const second = await waitingAgain;
    expect(second.changes).toContainEqual(expect.objectContaining({ id: shared.id, change: 'unshared' }));
    expect(second.ms).toBeLessThan(10_000);
  });

  it("answers a user's oldest wait at once when they open one more than MIXTAPE_WAITS_PER_USER", async () => {
    const alice = await t.addUser();
    const since = encodeURIComponent(await now(t, alice));
    const first = timed(t, alice, `since=${since}&wait=30`);
    await sleep(100);
    const second = timed(t, alice, `since=${since}&wait=30`);
    await sleep(100);
    const third = timed(t, alice, `since=${since}&wait=30`);
    const oldest = await first;
    expect(oldest.answer.statusCode).toBe(200);
    expect(oldest.answer.json<Page>().changes).toEqual([]);
    expect(oldest.ms).toBeLessThan(10_000);
    // The two others are answered by the next change.
    await createPlaylist(t.app, alice, 'Wakes both', [1]);
    for (const waiting of [await second, await third]) {
      expect(waiting.answer.json<Page>().changes).toHaveLength(1);
      expect(waiting.ms).toBeLessThan(10_000);
    }
  });

  it('refuses a wait that is not 1 to 60 whole seconds, naming it', async () => {
    const alice = await t.addUser();
    for (const wait of ['0', '61', '1.5', 'soon']) {
      const answer = await sendAs(t.app, 'GET', `/v3/changes?since=now&wait=${wait}`, alice);
      expect(expectError(answer, 400).errormsg).toMatch(/wait/);
    }
  });
});

describeTwoInstances('the change feed that waits, across two instances on %s', (apps) => {
  it('answers a request waiting on one instance at a commit on the other', async () => {
    const alice = await apps.one.addUser();
    const mine = await createPlaylist(apps.one.app, alice, 'Across', [1]);
    const since = await now(apps.two, alice);
    const waiting = waitFor(apps.two, alice, since, (change) => change.change === 'edit');
    await sleep(500);
    const edited = await sendAs(apps.one.app, 'PATCH', `/v3/playlist/${mine.id}`, alice, { name: 'Across, renamed' });
    expect(edited.statusCode, edited.body).toBe(200);
    const { changes, ms } = await waiting;
    expect(changes).toContainEqual(expect.objectContaining({ id: mine.id, change: 'edit' }));
    expect(ms).toBeGreaterThanOrEqual(400);
    expect(ms).toBeLessThan(10_000);
  });
});

for (const dialect of DIALECTS) {
  it(`answers every waiting request at once when the service closes (${dialect})`, async () => {
    const app = await createTestApp(dialect);
    let closing: Promise<void> | undefined;
    try {
      const alice = await app.addUser();
      const since = await now(app, alice);
      const waiting = timed(app, alice, `since=${encodeURIComponent(since)}&wait=60`);
      // Until it waits (its /metrics say so), then the close.
      for (let tries = 0; tries < 100 && (await waitingRequests(app)) < 1; tries += 1) await sleep(50);
      expect(await waitingRequests(app)).toBe(1);
      // Past its first read of the feed.
      await sleep(300);
      closing = app.close();
      const { answer, ms } = await waiting;
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json<Page>().changes).toEqual([]);
      expect(ms).toBeLessThan(10_000);
    } finally {
      await (closing ?? app.close());
    }
  });
}

for (const dialect of DIALECTS) {
  it(`stops a wait whose client left, so it no longer holds one of its user's places (${dialect})`, async () => {
    const app = await createTestApp(dialect);
    try {
      const alice = await app.addUser();
      const since = await now(app, alice);
      await app.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = app.app.server.address() as AddressInfo;
      const request = http.get({
        host: '127.0.0.1',
        port,
        path: `/v3/changes?since=${encodeURIComponent(since)}&wait=30`,
        headers: { security: alice },
      });
      request.on('error', () => {});
      for (let tries = 0; tries < 100 && (await waitingRequests(app)) < 1; tries += 1) await sleep(50);
      expect(await waitingRequests(app)).toBe(1);
      request.destroy();
      for (let tries = 0; tries < 100 && (await waitingRequests(app)) > 0; tries += 1) await sleep(50);
      expect(await waitingRequests(app)).toBe(0);
    } finally {
      await app.close();
    }
  });
}
