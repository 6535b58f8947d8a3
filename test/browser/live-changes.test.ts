import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers/app.js';
import { runCli } from '../helpers/cli-process.js';
import { startBrowserRig, type BrowserRig, type WatchedPage } from './rig.js';

/**
 * Live changes (docs/api.md, "Live changes") in a page of another origin: the page is bob's, alice shares her
 * playlist with him as a viewer and edits it from the test, and the page hears of each edit through the stream it
 * opened with a ticket (`EventSource`), a long poll (`fetch` with `wait`), and a `GET` that waits (`Prefer: wait`).
 */

const BOB = { name: 'bob', password: 'staple battery horse' } as const;

/** A generous bound on how long a change may take to reach the page once its write is acknowledged. */
const PROMPT_MS = 5000;

/** What the page keeps of its stream, on `window.live`. */
interface LiveState {
  /** Each change the stream brought, in order, as the page shows it. */
  seen: { id: number; change: string; version: number }[];
  /** Each `changes` event: its `lastEventId` and the `next` of its data. */
  events: { lastEventId: string; next: string }[];
  /** Errors the `EventSource` reported. */
  errors: number;
  source: EventSource;
}

/** What the page saw of one answer to its `fetch`. */
interface Seen {
  status: number;
  ms: number;
  preferenceApplied: string | null;
  etag: string | null;
  body: string;
}

interface Change {
  id: number;
  change: string;
  version: number;
}

describe('live changes in a page on another origin, in Chromium', () => {
  let rig: BrowserRig;
  // Nothing to stop if the rig did not start (no Chromium): the failure says why.
  let stop = () => Promise.resolve();
  let client: WatchedPage;
  let alice: Record<string, string>;
  let bobCredential: string;
  let playlistId: number;

  /** Alice's edit of the shared playlist, through the API from Node; answers when it is acknowledged. */
  const aliceRenames = async (name: string): Promise<number> => {
    const response = await fetch(`${rig.api}/v3/playlist/${playlistId}`, {
      method: 'PATCH',
      headers: alice,
      body: JSON.stringify({ name }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    return Date.now();
  };

  beforeAll(async () => {
    rig = await startBrowserRig();
    stop = () => rig.close();
    const added = await runCli(rig.databaseUrl, ['user', 'add', BOB.name, '--password-stdin'], {
      input: `${BOB.password}\n`,
    });
    expect(added.code, added.stderr).toBe(0);
    bobCredential = basic(BOB.name, BOB.password);
    alice = { security: rig.credential, 'content-type': 'application/json' };

    const created = await fetch(`${rig.api}/v3/playlist`, {
      method: 'POST',
      headers: alice,
      body: JSON.stringify({ name: 'Shared with bob', songIds: [5, 8, 13] }),
    });
    expect(created.status).toBe(200);
    playlistId = ((await created.json()) as { id: number }).id;
    const shared = await fetch(`${rig.api}/v3/playlist/${playlistId}/members/${BOB.name}`, {
      method: 'PUT',
      headers: alice,
      body: JSON.stringify({ role: 'viewer' }),
    });
    expect(shared.status, await shared.text()).toBe(200);

    client = await rig.newPage();
    await client.page.goto(`${rig.pageOrigin}/`);
  });
  afterAll(async () => {
    await stop();
  });

  it('opens the stream with a ticket and shows another user’s edit within seconds', async () => {
    const opened = await client.page.evaluate(
      async ({ api, security }) => {
        const made = await fetch(`${api}/v3/changes/tickets`, { method: 'POST', headers: { security } });
        if (made.status !== 200) return `ticket: ${made.status} ${await made.text()}`;
        const { ticket } = (await made.json()) as { ticket: string };
        const list = document.createElement('ol');
        list.id = 'changes';
        document.body.append(list);
        const url = `${api}/v3/changes/stream?since=now&ticket=${encodeURIComponent(ticket)}`;
        const source = new EventSource(url);
        const live: LiveState = { seen: [], events: [], errors: 0, source };
        (window as unknown as { live: LiveState }).live = live;
        source.addEventListener('changes', (event) => {
          const page = JSON.parse(event.data as string) as { changes: Change[]; next: string };
          live.events.push({ lastEventId: event.lastEventId, next: page.next });
          for (const change of page.changes) {
            live.seen.push(change);
            const item = document.createElement('li');
            item.className = 'change';
            item.dataset.id = String(change.id);
            item.dataset.change = change.change;
            item.dataset.version = String(change.version);
            item.textContent = `playlist ${change.id}: ${change.change}, version ${change.version}`;
            list.append(item);
          }
        });
        return new Promise<string>((resolve) => {
          const timer = setTimeout(() => {
            resolve('not open after 10 s');
          }, 10_000);
          source.addEventListener('open', () => {
            clearTimeout(timer);
            resolve('open');
          });
          source.addEventListener('error', () => {
            live.errors += 1;
            clearTimeout(timer);
            resolve(`error, readyState ${source.readyState}`);
          });
        });
      },
      { api: rig.api, security: bobCredential },
    );
    expect(opened).toBe('open');

    // The stream started from now: it lists nothing of what bob had when it opened.
    expect(await client.page.locator('li.change').count()).toBe(0);

    const first = await aliceRenames('Shared with bob, renamed');
    const edit = client.page.locator(`li.change[data-id="${playlistId}"][data-change="edit"]`);
    await edit.first().waitFor({ timeout: 20_000 });
    const firstMs = Date.now() - first;
    expect(firstMs, `the edit reached the page after ${firstMs} ms`).toBeLessThan(PROMPT_MS);

    // A second edit is shown as a second change: each change once, in order.
    const second = await aliceRenames('Shared with bob, renamed again');
    await expect.poll(() => edit.count(), { timeout: 20_000, interval: 50 }).toBe(2);
    const secondMs = Date.now() - second;
    expect(secondMs, `the second edit reached the page after ${secondMs} ms`).toBeLessThan(PROMPT_MS);
    expect(await edit.allInnerTexts()).toEqual([
      expect.stringMatching(new RegExp(`^playlist ${playlistId}: edit, version \\d+$`)),
      expect.stringMatching(new RegExp(`^playlist ${playlistId}: edit, version \\d+$`)),
    ]);

    const live = await client.page.evaluate(() => {
      const { seen, events, errors, source } = (window as unknown as { live: LiveState }).live;
      return { seen, events, errors, readyState: source.readyState };
    });
    expect(live.errors).toBe(0);
    expect(live.readyState).toBe(1); // OPEN
    expect(live.seen.map((change) => [change.id, change.change])).toEqual([
      [playlistId, 'edit'],
      [playlistId, 'edit'],
    ]);
    expect(live.seen[1]!.version).toBeGreaterThan(live.seen[0]!.version);
    // Each event's id is its page's `next`, what the browser sends back as Last-Event-ID.
    for (const event of live.events) expect(event.lastEventId).toBe(event.next);
  });

  it('answers a long poll from the page when another user’s change commits', async () => {
    const started = await client.page.evaluate(
      async ({ api, security }) => {
        const now = await fetch(`${api}/v3/changes?since=now`, { headers: { security } });
        if (now.status !== 200) return `since=now: ${now.status} ${await now.text()}`;
        const { next } = (await now.json()) as { next: string };
        const begun = performance.now();
        const state = window as unknown as { poll: Promise<Seen>; pollDone: boolean };
        state.pollDone = false;
        state.poll = fetch(`${api}/v3/changes?since=${encodeURIComponent(next)}&wait=20`, {
          headers: { security },
        }).then(async (response) => {
          state.pollDone = true;
          return {
            status: response.status,
            ms: performance.now() - begun,
            preferenceApplied: null,
            etag: null,
            body: await response.text(),
          };
        });
        return 'waiting';
      },
      { api: rig.api, security: bobCredential },
    );
    expect(started).toBe('waiting');
    // Long enough for the request to reach the service and wait there.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await client.page.evaluate(() => (window as unknown as { pollDone: boolean }).pollDone)).toBe(false);

    const edited = await aliceRenames('Shared with bob, heard by a long poll');
    const answer = await client.page.evaluate(() => (window as unknown as { poll: Promise<Seen> }).poll);
    const afterEditMs = Date.now() - edited;
    expect(answer.status, answer.body).toBe(200);
    const page = JSON.parse(answer.body) as { changes: Change[]; more: boolean };
    expect(page.changes).toEqual([expect.objectContaining({ id: playlistId, change: 'edit' })]);
    expect(afterEditMs, `answered ${afterEditMs} ms after the edit`).toBeLessThan(PROMPT_MS);
    expect(answer.ms).toBeGreaterThan(1000);
    expect(answer.ms).toBeLessThan(20_000);

    // The stream, still open, showed it too.
    const edits = client.page.locator(`li.change[data-id="${playlistId}"][data-change="edit"]`);
    await expect.poll(() => edits.count(), { timeout: 20_000, interval: 50 }).toBe(3);
  });

  it('reads Preference-Applied on a GET that waits (Prefer: wait with If-None-Match), 304 then 200', async () => {
    const seen = await client.page.evaluate(
      async ({ url, security }) => {
        const read = async (response: Response, begun: number): Promise<Seen> => ({
          status: response.status,
          ms: performance.now() - begun,
          preferenceApplied: response.headers.get('preference-applied'),
          etag: response.headers.get('etag'),
          body: await response.text(),
        });
        let begun = performance.now();
        const plain = await read(await fetch(url, { headers: { security } }), begun);
        begun = performance.now();
        const headers = { security, 'if-none-match': plain.etag ?? '', prefer: 'wait=1' };
        const waited = await read(await fetch(url, { headers }), begun);
        return { plain, waited };
      },
      { url: `${rig.api}/v3/playlist/${playlistId}`, security: bobCredential },
    );
    expect(seen.plain.status, seen.plain.body).toBe(200);
    expect(seen.plain.etag).toMatch(/^"/);
    expect(seen.plain.preferenceApplied).toBeNull();
    expect(seen.waited.status).toBe(304);
    expect(seen.waited.preferenceApplied).toBe('wait=1');
    expect(seen.waited.etag).toBe(seen.plain.etag);
    expect(seen.waited.ms).toBeGreaterThan(900);

    // Waiting longer, it is answered 200 with the new playlist as soon as alice's edit commits.
    await client.page.evaluate(
      ({ url, security, etag }) => {
        const begun = performance.now();
        const state = window as unknown as { waiting: Promise<Seen> };
        state.waiting = fetch(url, { headers: { security, 'if-none-match': etag, prefer: 'wait=20' } }).then(
          async (response) => ({
            status: response.status,
            ms: performance.now() - begun,
            preferenceApplied: response.headers.get('preference-applied'),
            etag: response.headers.get('etag'),
            body: await response.text(),
          }),
        );
      },
      { url: `${rig.api}/v3/playlist/${playlistId}/entries`, security: bobCredential, etag: await entriesTag() },
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const edited = await aliceRenames('Shared with bob, seen by a GET that waits');
    const changed = await client.page.evaluate(() => (window as unknown as { waiting: Promise<Seen> }).waiting);
    const afterEditMs = Date.now() - edited;
    expect(changed.status, changed.body).toBe(200);
    expect(changed.preferenceApplied).toBe('wait=20');
    expect((JSON.parse(changed.body) as { name: string }).name).toBe('Shared with bob, seen by a GET that waits');
    expect(afterEditMs, `answered ${afterEditMs} ms after the edit`).toBeLessThan(PROMPT_MS);
    expect(changed.ms).toBeLessThan(20_000);
  });

  it('reported nothing wrong on the page; the stream stayed open until the page closed it', async () => {
    expect(client.problems).toEqual([]);
    const state = await client.page.evaluate(() => {
      const { errors, source } = (window as unknown as { live: LiveState }).live;
      return { errors, readyState: source.readyState };
    });
    expect(state).toEqual({ errors: 0, readyState: 1 });

    // Closed by the page, it stops waiting on the service.
    expect(await waiting()).toBe(1);
    await client.page.evaluate(() => {
      (window as unknown as { live: LiveState }).live.source.close();
    });
    await expect.poll(waiting, { timeout: 5000, interval: 100 }).toBe(0);
  });

  /** How many requests wait for a change on the service (`mixtape_waiting_requests`). */
  async function waiting(): Promise<number> {
    const text = await (await fetch(`${rig.api}/metrics`)).text();
    const line = /^mixtape_waiting_requests (\d+)$/m.exec(text);
    if (line === null) throw new Error('no mixtape_waiting_requests in /metrics');
    return Number(line[1]);
  }

  /** The current ETag of the shared playlist's entries, as bob reads it. */
  async function entriesTag(): Promise<string> {
    const response = await fetch(`${rig.api}/v3/playlist/${playlistId}/entries`, {
      headers: { security: bobCredential },
    });
    expect(response.status).toBe(200);
    return response.headers.get('etag') ?? '';
  }
});
