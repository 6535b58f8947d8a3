import { isDeepStrictEqual } from 'node:util';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError } from '../helpers/requests.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, sleep } from '../helpers/traffic.js';

interface Entry {
  id: number;
  version?: number;
  change: string;
  at: string;
  by?: string;
}
interface Page {
  changes: Entry[];
  next: string;
  more: boolean;
}

describeEachDatabase('the change feed on %s', (t) => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const feed = async (security: string, query = '') => {
    const response = await t.app.inject({ method: 'GET', url: `/v3/changes${query}`, headers: { security } });
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Page>();
  };
  /**
   * The feed once it shows `expected` (or after 15 s, for the assertion to tell what it shows): on PostgreSQL a read
   * delivers only what every older transaction has let through, and other test files' transactions on the same
   * server count too, so acknowledged writes may show a moment later, never skipped.
   */
  const feedShowing = async (security: string, query: string, expected: readonly object[]) => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const page = await feed(security, query);
      const shown = page.changes.map(({ at: _, by: _by, ...e }) => e);
      if (isDeepStrictEqual(shown, expected) || Date.now() > deadline) return page;
      await sleep(100);
    }
  };
  /**
   * A token past `expected`, the changes since `start`. A token made while an older transaction holds the horizon
   * back would deliver them again (at least once, by design); a page that shows them has its token past them.
   */
  const settled = async (security: string, start: string, expected: readonly object[]) => {
    const page = await feedShowing(security, `?since=${start}`, expected);
    expect(page.changes.map(({ at: _, by: _by, ...e }) => e)).toEqual(expected);
    return page.next;
  };
  const send = (method: 'PATCH' | 'DELETE', url: string, security: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: { security, 'content-type': 'application/json' },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });

  it('lists every playlist once without a token, a page at a time, then only what changed, deletes included', async () => {
    const security = await t.addUser();
    const start = (await feed(security)).next;
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await createPlaylist(t.app, security, `Sync ${i}`, [i + 1]));
    await send('PATCH', `/v3/playlist/${made[0]!.id}`, security, { name: 'Renamed' });
    await settled(security, start, [
      ...made.slice(1).map((p) => ({ id: p.id, version: 1, change: 'create' })),
      { id: made[0]!.id, version: 2, change: 'edit' },
    ]);

    const seen: Entry[] = [];
    let page = await feed(security, '?limit=2');
    seen.push(...page.changes);
    for (let i = 0; page.more && i < 10; i++) {
      page = await feed(security, `?limit=2&since=${page.next}`);
      seen.push(...page.changes);
    }
    expect(page.more).toBe(false);
    expect(seen.map((e) => e.id)).toEqual(made.map((p) => p.id));
    expect(seen[0]).toMatchObject({ version: 2, change: 'edit' });
    expect(seen[1]).toMatchObject({ version: 1, change: 'create' });
    expect(Date.parse(seen[1]!.at)).toBeGreaterThan(Date.now() - 60_000);

    const quiet = await feed(security, `?since=${page.next}`);
    expect(quiet.changes).toEqual([]);

    await send('PATCH', `/v3/playlist/${made[1]!.id}`, security, { songIds: [7, 8] });
    expect((await send('DELETE', `/v3/playlist/${made[2]!.id}`, security)).statusCode).toBe(200);
    const later = await createPlaylist(t.app, security, 'Later', []);
    const changedExpected = [
      { id: made[1]!.id, version: 2, change: 'edit' },
      { id: made[2]!.id, change: 'delete' },
      { id: later.id, version: 1, change: 'create' },
    ];
    const changed = await feedShowing(security, `?since=${quiet.next}`, changedExpected);
    expect(changed.changes.map(({ at: _, by: _by, ...e }) => e)).toEqual(changedExpected);
    expect(changed.more).toBe(false);
    // Another user's writes are not in it.
    const other = await t.addUser();
    await createPlaylist(t.app, other, 'Not yours', []);
    expect((await feed(security, `?since=${changed.next}`)).changes).toEqual([]);
  });

  it('gives several revisions of one playlist in a page as one entry, its latest, where that latest stands', async () => {
    const security = await t.addUser();
    const start = (await feed(security)).next;
    const a = await createPlaylist(t.app, security, 'A', [1]);
    const b = await createPlaylist(t.app, security, 'B', [2]);
    const next = await settled(security, start, [
      { id: a.id, version: 1, change: 'create' },
      { id: b.id, version: 1, change: 'create' },
    ]);
    await send('PATCH', `/v3/playlist/${a.id}`, security, { name: 'A2' });
    await send('PATCH', `/v3/playlist/${b.id}`, security, { name: 'B2' });
    await send('PATCH', `/v3/playlist/${a.id}`, security, { name: 'A3' });
    expect((await send('DELETE', `/v3/playlist/${b.id}`, security)).statusCode).toBe(200);
    await send('PATCH', `/v3/playlist/${a.id}`, security, { name: 'A4' });

    const wholeExpected = [
      { id: b.id, change: 'delete' },
      { id: a.id, version: 4, change: 'edit' },
    ];
    const whole = await feedShowing(security, `?since=${next}`, wholeExpected);
    expect(whole.changes.map(({ at: _, by: _by, ...e }) => e)).toEqual(wholeExpected);
    expect(whole.more).toBe(false);
    // A page coalesces only what it read: the token moves past all of it, and nothing is lost across pages.
    const firstExpected = [
      { id: b.id, version: 2, change: 'edit' },
      { id: a.id, version: 3, change: 'edit' },
    ];
    const first = await feedShowing(security, `?limit=3&since=${next}`, firstExpected);
    expect(first.changes.map(({ at: _, by: _by, ...e }) => e)).toEqual(firstExpected);
    expect(first.more).toBe(true);
    const secondExpected = [
      { id: b.id, change: 'delete' },
      { id: a.id, version: 4, change: 'edit' },
    ];
    const second = await feedShowing(security, `?limit=3&since=${first.next}`, secondExpected);
    expect(second.changes.map(({ at: _, by: _by, ...e }) => e)).toEqual(secondExpected);
    expect(second.more).toBe(false);
  });

  it('answers 400 to a malformed, altered or another user’s token, and 410 once it is older than the history', async () => {
    const security = await t.addUser();
    const other = await t.addUser();
    const { next } = await feed(security);
    const bad = (query: string, who = security) =>
      t.app.inject({ method: 'GET', url: `/v3/changes${query}`, headers: { security: who } });
    expectError(await bad('?since=nonsense'), 400);
    expectError(await bad(`?since=${next}x`), 400);
    const [body, mac] = next.split('.');
    const altered = Buffer.from(
      Buffer.from(body!, 'base64url')
        .toString('latin1')
        .replace(/\.(\d+)$/, '.1$1'),
    ).toString('base64url');
    expectError(await bad(`?since=${altered}.${mac}`), 400);
    expectError(await bad(`?since=${next}`, other), 400);
    expectError(await bad('?limit=0'), 400);
    expectError(await bad('?limit=1001'), 400);

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 31 * 24 * 60 * 60 * 1000 });
    const old = expectError(await bad(`?since=${next}`), 410);
    expect(old.errormsg).toContain('without since');
  });
});

// Writes on several instances commit out of order on PostgreSQL: a reader following the feed must still see every
// write that was acknowledged.
describe('the change feed across instances on postgres', () => {
  const WRITERS = 6;
  const WRITES = 25;
  let database: TestDatabase | undefined;
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await killAllServers();
    await database?.drop();
  });

  it('never skips an acknowledged write while concurrent writers commit on three instances', async () => {
    database = await createTestDatabase('postgres');
    const security = `Basic ${Buffer.from('feed:pw').toString('base64')}`;
    for (let i = 0; i < 3; i++) {
      servers.push(await startServer({ databaseUrl: database.url, bootstrapUser: 'feed:pw' }));
    }
    const at = (i: number) => servers[i % servers.length]!.url;
    const headers = { security };
    // The reader starts before any write, so that all of them come as changes.
    const first = await call(`${at(0)}/v3/changes`, { headers });
    expect(first.status, first.body).toBe(200);
    let next = (JSON.parse(first.body) as Page).next;

    const acknowledged = new Set<string>();
    const seen = new Set<string>();
    let writing = true;
    const writer = async (w: number) => {
      const created = await call(`${at(w)}/v3/playlist`, {
        method: 'POST',
        headers,
        body: { name: `w${w}`, songIds: [] },
      });
      expect(created.status, created.body).toBe(200);
      const { id } = JSON.parse(created.body) as { id: number };
      acknowledged.add(`${id}:1`);
      for (let k = 1; k <= WRITES; k++) {
        const appended = await call(`${at(w + k)}/v3/playlist/${id}/songs`, {
          method: 'POST',
          headers,
          body: { songIds: [(k % 200) + 1] },
        });
        expect(appended.status, appended.body).toBe(200);
        acknowledged.add(`${id}:${k + 1}`);
      }
    };
    const reader = async () => {
      const deadline = Date.now() + 60_000;
      for (let i = 0; Date.now() < deadline && i < 100_000; i++) {
        const done = !writing;
        // One revision a page, so that each acknowledged version is an entry of its own (a page coalesces them).
        const page = await call(`${at(i)}/v3/changes?limit=1&since=${encodeURIComponent(next)}`, { headers });
        expect(page.status, page.body).toBe(200);
        const body = JSON.parse(page.body) as Page;
        for (const entry of body.changes) seen.add(`${entry.id}:${entry.version ?? 'deleted'}`);
        next = body.next;
        if (done && !body.more && [...acknowledged].every((key) => seen.has(key))) return;
      }
    };
    const readDone = reader();
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    writing = false;
    await readDone;
    expect(acknowledged.size).toBe(WRITERS * (WRITES + 1));
    expect([...acknowledged].filter((key) => !seen.has(key))).toEqual([]);
  }, 120_000);
});
