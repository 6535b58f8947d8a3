import { expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { describeEachDatabase } from '../helpers/each-database.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

/** The next page's path and query in a `Link` header, or undefined without one. */
const nextLink = (answer: LightMyRequestResponse): string | undefined => {
  const link = answer.headers.link;
  if (link === undefined) return undefined;
  const found = /^<([^>]+)>; rel="next"$/.exec(String(link));
  expect(found, String(link)).not.toBeNull();
  return found![1];
};

const SONGS = Array.from({ length: 25 }, (_, i) => 1 + ((i * 7) % 40));

describeEachDatabase('pages of entries, and writes answered in brief, on %s', (t) => {
  const send = (...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) => sendAs(t.app, ...args);
  const get = (url: string, security: string, headers: Record<string, string> = {}) =>
    send('GET', url, security, undefined, headers);
  const whole = async (id: number, security: string) => {
    const answer = await get(`/v3/playlist/${id}/entries`, security);
    expect(answer.statusCode, answer.body).toBe(200);
    return answer;
  };

  /** Every page from the first, following `Link`; the answers in order. */
  const allPages = async (first: string, security: string) => {
    const pages: LightMyRequestResponse[] = [];
    for (let url: string | undefined = first; url !== undefined; url = nextLink(pages[pages.length - 1]!)) {
      const page = await get(url, security);
      expect(page.statusCode, page.body).toBe(200);
      pages.push(page);
      expect(pages.length).toBeLessThan(10);
    }
    return pages;
  };

  it('pages 25 entries by 10, following Link to the end: together the whole list, each with its version and ETag', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(t.app, security, 'Paged', SONGS);
    const all = await whole(made.id, security);
    const list = all.json<EntriesBody>();
    for (const base of ['/v3/playlist', '/v3/playlists']) {
      const pages = await allPages(`${base}/${made.id}/entries?limit=10`, security);
      const bodies = pages.map((page) => page.json<EntriesBody>());
      expect(bodies.map((body) => body.entries.length)).toEqual([10, 10, 5]);
      expect(bodies.flatMap((body) => body.entries)).toEqual(list.entries);
      for (const body of bodies) {
        // The usual entries answer, its members in the usual order, with the page's entries only.
        expect(Object.keys(body)).toEqual(['id', 'name', 'version', 'entries']);
        expect(body).toMatchObject({ id: made.id, name: 'Paged', version: 1 });
      }
      // The links keep the path the client used, and name the last entry of the page.
      expect(nextLink(pages[0]!)).toBe(`${base}/${made.id}/entries?limit=10&after=${bodies[0]!.entries[9]!.entry}`);
      expect(pages[2]!.headers.link).toBeUndefined();
      // Each page has a strong ETag of its own, none the whole list's; each answers 304 to its own.
      const tags = pages.map((page) => String(page.headers.etag));
      for (const tag of tags) expect(tag).toMatch(/^"[^"]+"$/);
      expect(new Set([...tags, String(all.headers.etag)]).size).toBe(4);
      for (const [i, page] of pages.entries()) {
        const url = i === 0 ? `${base}/${made.id}/entries?limit=10` : nextLink(pages[i - 1]!)!;
        const again = await get(url, security, { 'if-none-match': tags[i]! });
        expect(again.statusCode, url).toBe(304);
        expect(again.headers.etag).toBe(page.headers.etag);
        expect(again.body).toBe('');
        // Another page's tag, or the whole list's, is not this page's.
        const other = await get(url, security, { 'if-none-match': tags[(i + 1) % 3]! });
        expect(other.statusCode).toBe(200);
      }
      expect((await get(`${base}/${made.id}/entries`, security, { 'if-none-match': tags[0]! })).statusCode).toBe(200);
    }
    // A page as long as the rest, or longer: no Link; a page past the last entry is empty.
    const rest = await get(`/v3/playlist/${made.id}/entries?limit=1000`, security);
    expect(rest.json<EntriesBody>().entries).toEqual(list.entries);
    expect(rest.headers.link).toBeUndefined();
    const last = list.entries[24]!.entry;
    const after = await get(`/v3/playlist/${made.id}/entries?limit=5&after=${last}`, security);
    expect(after.statusCode, after.body).toBe(200);
    expect(after.json<EntriesBody>()).toMatchObject({ version: 1, entries: [] });
    expect(after.headers.link).toBeUndefined();
    const exact = await get(`/v3/playlist/${made.id}/entries?limit=5&after=${list.entries[19]!.entry}`, security);
    expect(exact.json<EntriesBody>().entries).toEqual(list.entries.slice(20));
    expect(exact.headers.link).toBeUndefined();
  });

  it('answers the whole list without limit, exactly as before; an empty playlist has one empty page', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(t.app, security, 'Whole', [3, 1, 3]);
    const all = await whole(made.id, security);
    const body = all.json<EntriesBody>();
    expect(Object.keys(body)).toEqual(['id', 'name', 'version', 'entries']);
    expect(body.entries.map((e) => e.id)).toEqual([3, 1, 3]);
    expect(all.headers.etag).toMatch(/^"\d+\.1\.\d+\.entries"$/);
    expect(all.headers.link).toBeUndefined();
    expect(all.headers['cache-control']).toBe('private, no-cache');

    const empty = await createPlaylist(t.app, security, 'Empty', []);
    const page = await get(`/v3/playlist/${empty.id}/entries?limit=10`, security);
    expect(page.statusCode, page.body).toBe(200);
    expect(page.json<EntriesBody>()).toEqual({ id: empty.id, name: 'Empty', version: 1, entries: [] });
    expect(page.headers.link).toBeUndefined();
  });

  it('gives each page the version it was read at, and a new ETag once the playlist changed', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(t.app, security, 'Moving', SONGS);
    const first = await get(`/v3/playlist/${made.id}/entries?limit=10`, security);
    expect(first.json<EntriesBody>().version).toBe(1);
    const next = nextLink(first)!;
    expect((await send('POST', `/v3/playlist/${made.id}/songs`, security, { songIds: [9] })).statusCode).toBe(200);
    // The next page is read at the new version: the client whose pages differ starts again.
    const second = await get(next, security);
    expect(second.statusCode).toBe(200);
    expect(second.json<EntriesBody>().version).toBe(2);
    const again = await get(`/v3/playlist/${made.id}/entries?limit=10`, security, {
      'if-none-match': String(first.headers.etag),
    });
    expect(again.statusCode).toBe(200);
    expect(again.json<EntriesBody>()).toEqual({ ...first.json<EntriesBody>(), version: 2 });
    expect(again.headers.etag).not.toBe(first.headers.etag);
  });

  it('answers 409 for an after the playlist no longer has (or never had), and 400 for bad parameters', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(t.app, security, 'Refused', SONGS);
    const first = await get(`/v3/playlist/${made.id}/entries?limit=10`, security);
    const [, last] = /after=([^&]+)$/.exec(nextLink(first)!)!;
    // The last entry of the page is removed meanwhile.
    const removed = await send('POST', `/v3/playlist/${made.id}/edits`, security, {
      ops: [{ op: 'remove', entry: last }],
    });
    expect(removed.statusCode, removed.body).toBe(200);
    const gone = expectError(await get(nextLink(first)!, security), 409);
    expect(gone.errormsg).toContain(JSON.stringify(last));
    expect(gone.errormsg).toMatch(/from the first/);
    for (const never of ['e999999', 'x1', 'e0']) {
      expectError(await get(`/v3/playlist/${made.id}/entries?limit=10&after=${never}`, security), 409);
    }

    for (const limit of ['0', '1001', 'ten', '1.5', '-1', '']) {
      const bad = expectError(await get(`/v3/playlist/${made.id}/entries?limit=${limit}`, security), 400);
      expect(bad.errormsg, limit).toContain('limit');
    }
    for (const after of ['e%201', 'x'.repeat(33), 'e1%2Fe2']) {
      const bad = expectError(await get(`/v3/playlist/${made.id}/entries?limit=10&after=${after}`, security), 400);
      expect(bad.errormsg, after).toContain('after');
    }
    const alone = expectError(await get(`/v3/playlist/${made.id}/entries?after=e1`, security), 400);
    expect(alone.errormsg).toContain('after');
    // Access first: a stranger's playlist is 404, whatever the page.
    const stranger = await t.addUser();
    expectError(await get(`/v3/playlist/${made.id}/entries?limit=10&after=e999999`, stranger), 404);
  });

  it("pages a smart playlist's entries with its rules, refreshed first as the whole list is", async () => {
    const security = await t.addUser();
    const source = await createPlaylist(t.app, security, 'Source', [1, 2, 3]);
    const rules = { match: 'all', conditions: [{ field: 'playlist', op: 'in', value: source.id }] };
    const made = await send('POST', '/v3/playlist', security, { name: 'Follower', rules });
    expect(made.statusCode, made.body).toBe(200);
    const { id } = made.json<PlaylistBody>();
    const list = (await whole(id, security)).json<EntriesBody>();
    const [first] = await allPages(`/v3/playlist/${id}/entries?limit=2`, security);
    expect(Object.keys(first!.json())).toEqual(Object.keys(list));
    expect(first!.json()).toMatchObject({ rules: (list as unknown as { rules: unknown }).rules });
    // What it follows changes: the next read of a page refreshes it first, as a read of the whole list does.
    expect((await send('POST', `/v3/playlist/${source.id}/songs`, security, { songIds: [4] })).statusCode).toBe(200);
    const pages = await allPages(`/v3/playlist/${id}/entries?limit=2`, security);
    const now = (await whole(id, security)).json<EntriesBody>();
    expect(now.entries.map((e) => e.id).sort()).toEqual([1, 2, 3, 4]);
    expect(pages.flatMap((page) => page.json<EntriesBody>().entries)).toEqual(now.entries);
    expect(new Set(pages.map((page) => page.json<EntriesBody>().version))).toEqual(new Set([now.version]));
  });

  it("answers a member's page as a member's entries, with a tag of their own", async () => {
    const owner = await t.addUser();
    const viewer = await t.addUser('paged-viewer');
    const made = await createPlaylist(t.app, owner, 'Shared pages', SONGS);
    const share = await send('PUT', `/v3/playlist/${made.id}/members/paged-viewer`, owner, { role: 'viewer' });
    expect(share.statusCode, share.body).toBe(200);
    const mine = await get(`/v3/playlist/${made.id}/entries?limit=10`, owner);
    const theirs = await get(`/v3/playlist/${made.id}/entries?limit=10`, viewer);
    expect(theirs.statusCode, theirs.body).toBe(200);
    expect(theirs.json()).toEqual({ ...mine.json<EntriesBody>(), owner: expect.any(String) as string, role: 'viewer' });
    expect(theirs.headers.etag).not.toBe(mine.headers.etag);
    expect(theirs.headers.link).toBe(mine.headers.link);
  });

  {
    const MINIMAL = { prefer: 'return=minimal' };

    /** Asserts a minimal answer: `{"version"}` (and more), its ETag, `Preference-Applied`. */
    const expectMinimal = (answer: LightMyRequestResponse, body: Record<string, unknown>) => {
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toEqual(body);
      expect(answer.headers['preference-applied']).toBe('return=minimal');
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(String(answer.headers.etag)).toMatch(/^"[^"]+"$/);
      return String(answer.headers.etag);
    };
    const jsonTag = async (id: number, security: string) =>
      String((await get(`/v3/playlist/${id}`, security)).headers.etag);
    const entriesTag = async (id: number, security: string) => String((await whole(id, security)).headers.etag);

    it('answers PATCH, PUT, POST …/songs and POST …/restore with Prefer: return=minimal as {"version"}', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Brief', SONGS);
      const url = `/v3/playlist/${made.id}`;

      const patched = await send('PATCH', url, security, { name: 'Brief 2' }, MINIMAL);
      expect(expectMinimal(patched, { version: 2 })).toBe(await jsonTag(made.id, security));
      const jsonPatch = await t.app.inject({
        method: 'PATCH',
        url,
        headers: { security, 'content-type': 'application/json-patch+json', prefer: 'wait=5, return=minimal' },
        payload: JSON.stringify([{ op: 'remove', path: '/songs/0' }]),
      });
      expect(expectMinimal(jsonPatch, { version: 3 })).toBe(await jsonTag(made.id, security));
      const put = await send('PUT', url, security, { name: 'Brief 3', songIds: [1, 2, 3] }, MINIMAL);
      expect(expectMinimal(put, { version: 4 })).toBe(await jsonTag(made.id, security));
      const added = await send('POST', `${url}/songs`, security, { songIds: [4], position: 0 }, MINIMAL);
      expect(expectMinimal(added, { version: 5 })).toBe(await jsonTag(made.id, security));
      const restored = await send('POST', `${url}/restore`, security, { version: 1 }, MINIMAL);
      expect(expectMinimal(restored, { version: 6 })).toBe(await jsonTag(made.id, security));
      // The writes were made: the playlist is version 1's again.
      const now = (await get(url, security)).json<PlaylistBody>();
      expect(now.songs.map((song) => song.id)).toEqual(SONGS);
      expect(now.name).toBe('Brief');
      // The tag works in the next write's If-Match, as the whole answer's does.
      const next = await send(
        'PATCH',
        url,
        security,
        { name: 'Brief 4' },
        { ...MINIMAL, 'if-match': String(restored.headers.etag) },
      );
      expectMinimal(next, { version: 7 });
      const stale = await send(
        'PATCH',
        url,
        security,
        { name: 'Lost' },
        { ...MINIMAL, 'if-match': String(restored.headers.etag) },
      );
      expectError(stale, 412);
      expect(stale.headers['preference-applied']).toBeUndefined();

      // A deleted playlist restored in brief.
      expect((await send('DELETE', url, security)).statusCode).toBe(200);
      const back = await send('POST', `${url}/restore`, security, { version: 2 }, MINIMAL);
      expect(expectMinimal(back, { version: 9 })).toBe(await jsonTag(made.id, security));
    });

    it('answers POST …/edits with Prefer: return=minimal as {"version", "results"}, with the entries ETag', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Brief edits', SONGS);
      const [first] = (await whole(made.id, security)).json<EntriesBody>().entries;
      const edited = await send(
        'POST',
        `/v3/playlist/${made.id}/edits`,
        security,
        {
          ops: [
            { op: 'insert', songIds: [5], after: first!.entry },
            { op: 'remove', entry: first!.entry },
            { op: 'remove', entry: first!.entry },
            { op: 'rename', name: 'Brief edits 2' },
          ],
        },
        { prefer: 'return=minimal; foo=bar, wait=3' },
      );
      const results = [
        { applied: true, entries: ['e26'] },
        { applied: true },
        { applied: false, reason: 'removed', message: expect.any(String) as string },
        { applied: true },
      ];
      expect(edited.statusCode, edited.body).toBe(200);
      expect(expectMinimal(edited, { version: 2, results })).toBe(await entriesTag(made.id, security));
      expect(edited.headers['content-location']).toBeUndefined();
      // A key sent again answers the first results, in brief too.
      const keyed = { key: 'brief-1', ops: [{ op: 'rename', name: 'Brief edits 3' }] };
      const once = await send('POST', `/v3/playlist/${made.id}/edits`, security, keyed, MINIMAL);
      expectMinimal(once, { version: 3, results: [{ applied: true }] });
      const twice = await send('POST', `/v3/playlist/${made.id}/edits`, security, keyed, MINIMAL);
      expect(expectMinimal(twice, { version: 3, results: [{ applied: true }] })).toBe(once.headers.etag);
    });

    it("answers a member's write in brief with the member's ETag", async () => {
      const owner = await t.addUser();
      const editor = await t.addUser('brief-editor');
      const made = await createPlaylist(t.app, owner, 'Brief shared', [1, 2]);
      const share = await send('PUT', `/v3/playlist/${made.id}/members/brief-editor`, owner, { role: 'editor' });
      expect(share.statusCode, share.body).toBe(200);
      const patched = await send('PATCH', `/v3/playlist/${made.id}`, editor, { name: 'Theirs' }, MINIMAL);
      expect(expectMinimal(patched, { version: 2 })).toBe(await jsonTag(made.id, editor));
      expect(patched.headers.etag).not.toBe(await jsonTag(made.id, owner));
      const edited = await send(
        'POST',
        `/v3/playlist/${made.id}/edits`,
        editor,
        { ops: [{ op: 'rename', name: 'X' }] },
        MINIMAL,
      );
      expect(expectMinimal(edited, { version: 3, results: [{ applied: true }] })).toBe(
        await entriesTag(made.id, editor),
      );
    });

    it('answers every write as before without the preference, or with another value of return', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Whole answers', [1, 2, 3]);
      const url = `/v3/playlist/${made.id}`;
      const variants: Record<string, string>[] = [
        {},
        { prefer: 'return=representation' },
        { prefer: 'return=small, wait=2' },
      ];
      for (const headers of variants) {
        const patched = await send('PATCH', url, security, { name: 'Whole answers' }, headers);
        expect(patched.statusCode, patched.body).toBe(200);
        expect(patched.headers['preference-applied']).toBeUndefined();
        const got = await get(url, security);
        expect(patched.body).toBe(got.body);
        expect(patched.headers.etag).toBe(got.headers.etag);
        for (const [method, path, body] of [
          ['PUT', url, { name: 'Whole answers', songIds: [1, 2, 3] }],
          ['POST', `${url}/songs`, { songIds: [4] }],
          ['POST', `${url}/restore`, { version: 1 }],
        ] as const) {
          const answer = await send(method, path, security, body, headers);
          expect(answer.statusCode, answer.body).toBe(200);
          expect(answer.headers['preference-applied']).toBeUndefined();
          const now = await get(url, security);
          expect(answer.body, `${method} ${path}`).toBe(now.body);
          expect(answer.headers.etag).toBe(now.headers.etag);
        }
        const edited = await send(
          'POST',
          `${url}/edits`,
          security,
          { ops: [{ op: 'rename', name: 'Whole' }] },
          headers,
        );
        expect(edited.statusCode, edited.body).toBe(200);
        expect(edited.headers['preference-applied']).toBeUndefined();
        expect(edited.headers['content-location']).toBe(`${url}/entries`);
        const entries = await whole(made.id, security);
        expect(edited.json<EditsBody>().playlist).toEqual(entries.json());
        expect(edited.headers.etag).toBe(entries.headers.etag);
      }
    });
  }
});
