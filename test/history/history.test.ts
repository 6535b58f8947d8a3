import { describe, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

interface RevisionBody {
  version: number;
  at: string;
  by: string;
  change: string;
  name: string;
  songCount: number;
}

const ids = (body: PlaylistBody) => body.songs.map((s) => s.id);

describeEachDatabase('playlist history on %s', (t) => {
  const send = (...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) => sendAs(t.app, ...args);
  const append = (id: number, security: string, songIds: number[]) =>
    send('POST', `/v3/playlist/${id}/songs`, security, { songIds });

  it('records every create, edit, restore and delete, newest first, paged as lists are', async () => {
    const security = await t.addUser('historian');
    const created = await createPlaylist(t.app, security, 'Road', [1, 2]);
    expect((await append(created.id, security, [3])).statusCode).toBe(200);
    expect((await send('PATCH', `/v3/playlist/${created.id}`, security, { name: 'Road trip' })).statusCode).toBe(200);

    const listed = await send('GET', `/v3/playlist/${created.id}/versions`, security);
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.headers['x-total-count']).toBe('3');
    const revisions = listed.json<RevisionBody[]>();
    expect(revisions.map((r) => [r.version, r.change, r.name, r.songCount, r.by])).toEqual([
      [3, 'edit', 'Road trip', 3, 'historian'],
      [2, 'edit', 'Road', 3, 'historian'],
      [1, 'create', 'Road', 2, 'historian'],
    ]);
    expect(revisions[0]!.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(revisions[0]!.at) - Date.now())).toBeLessThan(60_000);

    const page = await send('GET', `/v3/playlist/${created.id}/versions?limit=1&offset=1`, security);
    expect(page.json<RevisionBody[]>().map((r) => r.version)).toEqual([2]);
    expect(page.headers.link).toContain('rel="next"');
    expect(page.headers.link).toContain('rel="prev"');
  });

  it('answers any kept version in every form the playlist is served, with a strong ETag and 304', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Forms', [4, 5, 6]);
    await append(created.id, security, [7]);

    const first = await send('GET', `/v3/playlist/${created.id}/versions/1`, security);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json<PlaylistBody>()).toEqual(created);
    expect(first.headers.etag).toMatch(/^"[^"]+"$/);
    const again = await send('GET', `/v3/playlist/${created.id}/versions/1`, security, undefined, {
      'if-none-match': String(first.headers.etag),
    });
    expect(again.statusCode).toBe(304);
    // The current version answers what the playlist answers, with the same ETag.
    const current = await send('GET', `/v3/playlist/${created.id}`, security);
    const second = await send('GET', `/v3/playlist/${created.id}/versions/2`, security);
    expect(second.body).toBe(current.body);
    expect(second.headers.etag).toBe(current.headers.etag);

    for (const [format, type] of [
      ['xspf', 'application/xspf+xml'],
      ['jspf', 'application/jspf+json'],
      ['m3u8', 'audio/mpegurl'],
    ] as const) {
      const file = await send('GET', `/v3/playlist/${created.id}/versions/1?format=${format}`, security);
      expect(file.statusCode, file.body).toBe(200);
      expect(file.headers['content-type']).toContain(type);
      const now = await send('GET', `/v3/playlist/${created.id}?format=${format}`, security);
      expect(file.body).not.toBe(now.body);
      expect(file.headers.etag).not.toBe(now.headers.etag);
    }
    const negotiated = await send('GET', `/v3/playlist/${created.id}/versions/2`, security, undefined, {
      accept: 'application/xspf+xml',
    });
    const direct = await send('GET', `/v3/playlist/${created.id}`, security, undefined, {
      accept: 'application/xspf+xml',
    });
    expect(negotiated.body).toBe(direct.body);
  });

  it('answers a stranger 404 as for the playlist, a version never made 404, and bad ids 400', async () => {
    const owner = await t.addUser();
    const stranger = await t.addUser();
    const created = await createPlaylist(t.app, owner, 'Mine', [1]);
    const asStranger = expectError(await send('GET', `/v3/playlist/${created.id}/versions`, stranger), 404);
    const playlistAnswer = expectError(await send('GET', `/v3/playlist/${created.id}`, stranger), 404);
    expect(asStranger.errormsg).toBe(playlistAnswer.errormsg);
    expectError(await send('GET', `/v3/playlist/${created.id}/versions/1`, stranger), 404);
    expectError(await send('POST', `/v3/playlist/${created.id}/restore`, stranger, { version: 1 }), 404);
    expectError(await send('GET', `/v3/playlist/999999/versions/1`, owner), 404);
    expect(expectError(await send('GET', `/v3/playlist/${created.id}/versions/2`, owner), 404).errormsg).toContain(
      'no version 2',
    );
    expectError(await send('GET', `/v3/playlist/${created.id}/versions/0`, owner), 400);
    expectError(await send('POST', `/v3/playlist/${created.id}/restore`, owner, { version: 'one' }), 400);
  });

  it('restores a version under If-Match, and undo is a restore of the version before', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Undo me', [1, 2, 3]);
    const wiped = await send('PATCH', `/v3/playlist/${created.id}`, security, { name: 'Oops', songIds: [] });
    expect(wiped.statusCode).toBe(200);
    const stale = await send(
      'POST',
      `/v3/playlist/${created.id}/restore`,
      security,
      { version: 1 },
      { 'if-match': '"nope"' },
    );
    expectError(stale, 412);
    expect(stale.headers.etag).toBe(wiped.headers.etag);

    const undone = await send(
      'POST',
      `/v3/playlist/${created.id}/restore`,
      security,
      { version: 1 },
      {
        'if-match': String(wiped.headers.etag),
      },
    );
    expect(undone.statusCode, undone.body).toBe(200);
    expect(undone.json<PlaylistBody>()).toEqual(created);
    const read = await send('GET', `/v3/playlist/${created.id}`, security);
    expect(read.json()).toEqual(created);
    expect(undone.headers.etag).toBe(read.headers.etag);
    // Search sees the restored songs and name.
    const found = await send('GET', `/v3/playlist?search=${encodeURIComponent('Undo me')}`, security);
    expect(found.json<PlaylistBody[]>().map((p) => p.id)).toEqual([created.id]);
    const versions = (await send('GET', `/v3/playlist/${created.id}/versions`, security)).json<RevisionBody[]>();
    expect(versions[0]).toMatchObject({ version: 3, change: 'restore', name: 'Undo me', songCount: 3 });
  });

  it('brings a deleted playlist back under its id, for its owner; its history stays readable meanwhile', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Lost', [8, 9]);
    await append(created.id, security, [10]);
    expect((await send('DELETE', `/v3/playlist/${created.id}`, security)).statusCode).toBe(200);
    expectError(await send('GET', `/v3/playlist/${created.id}`, security), 410);
    const versions = (await send('GET', `/v3/playlist/${created.id}/versions`, security)).json<RevisionBody[]>();
    expect(versions[0]).toMatchObject({ version: 3, change: 'delete', name: 'Lost', songCount: 3 });
    expectError(
      await send('POST', `/v3/playlist/${created.id}/restore`, security, { version: 2 }, { 'if-match': '*' }),
      412,
    );

    const restored = await send('POST', `/v3/playlist/${created.id}/restore`, security, { version: 2 });
    expect(restored.statusCode, restored.body).toBe(200);
    expect(ids(restored.json())).toEqual([8, 9, 10]);
    const read = await send('GET', `/v3/playlist/${created.id}`, security);
    expect(read.statusCode).toBe(200);
    expect(read.headers.etag).toBe(restored.headers.etag);
    const listed = (await send('GET', '/v3/playlist', security)).json<PlaylistBody[]>();
    expect(listed.map((p) => p.id)).toEqual([created.id]);
    expect(
      (await send('GET', `/v3/playlist/${created.id}/versions?limit=1`, security)).json<RevisionBody[]>()[0],
    ).toMatchObject({
      version: 4,
      change: 'restore',
    });
    // And it can be edited and deleted again.
    expect((await append(created.id, security, [11])).statusCode).toBe(200);
    expect((await send('DELETE', `/v3/playlist/${created.id}`, security)).statusCode).toBe(200);
  });
});

describeEachDatabase('diffs of versions on %s', (t) => {
  const get = (url: string, security: string) => t.app.inject({ method: 'GET', url, headers: { security } });

  it("computes a long diff on a worker thread, and answers one user's burst of them 429 past their share", async () => {
    const security = await t.addUser();
    const other = await t.addUser();
    const songs = Array.from({ length: 150 }, (_v, i) => 1 + (i % 200));
    const created = await createPlaylist(t.app, security, 'Long', songs);
    const edited = await t.app.inject({
      method: 'PUT',
      url: `/v3/playlist/${created.id}`,
      headers: { security, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'Long', songIds: [...songs.slice(1), 239] }),
    });
    expect(edited.statusCode, edited.body).toBe(200);
    const mine = await createPlaylist(t.app, other, 'Mine', [1, 2]);
    const expected = [
      { op: 'remove', path: '/songs/0' },
      { op: 'add', path: '/songs/149', value: { id: 239 } },
    ];

    const url = `/v3/playlist/${created.id}/diff?from=1&to=2`;
    const [burst, others] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => get(url, security))),
      get(`/v3/playlist/${mine.id}/diff?from=1`, other),
    ]);
    const statuses = burst.map((answer) => answer.statusCode);
    // One in progress and eight waiting; the rest of the burst is refused at once, and only that user's.
    expect(statuses.filter((status) => status === 429).length, statuses.join()).toBeGreaterThan(0);
    for (const answer of burst) {
      if (answer.statusCode === 429) {
        expect(answer.headers['retry-after']).toBe('1');
        continue;
      }
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toEqual(expected);
    }
    expect(others.statusCode, others.body).toBe(200);
    expect((await get(url, security)).json()).toEqual(expected);
  });

  it('answers the JSON Patch that turns one version into another, small for a small change', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Diffed', [1, 2, 3, 4]);
    const edited = await t.app.inject({
      method: 'PUT',
      url: `/v3/playlist/${created.id}`,
      headers: { security, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'Diffed again', songIds: [1, 2, 9, 3, 4] }),
    });
    expect(edited.statusCode).toBe(200);
    const diff = await get(`/v3/playlist/${created.id}/diff?from=1`, security);
    expect(diff.statusCode, diff.body).toBe(200);
    expect(diff.headers['content-type']).toContain('application/json-patch+json');
    const operations = diff.json<unknown[]>();
    expect(operations).toEqual([
      { op: 'replace', path: '/name', value: 'Diffed again' },
      { op: 'add', path: '/songs/2', value: { id: 9 } },
    ]);
    expect((await get(`/v3/playlist/${created.id}/diff?from=2&to=2`, security)).json()).toEqual([]);

    // Sent with PATCH to the playlist at version 1, it gives version 2.
    const copy = await createPlaylist(t.app, security, 'Diffed', [1, 2, 3, 4]);
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/v3/playlist/${copy.id}`,
      headers: { security, 'content-type': 'application/json-patch+json' },
      payload: diff.body,
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json<PlaylistBody>().songs).toEqual(edited.json<PlaylistBody>().songs);
    expect(patched.json<PlaylistBody>().name).toBe('Diffed again');
  });

  it('answers 400 for a version past the newest, 404 for a stranger', async () => {
    const security = await t.addUser();
    const stranger = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Bounds', [1]);
    expectError(await get(`/v3/playlist/${created.id}/diff?from=2`, security), 400);
    expectError(await get(`/v3/playlist/${created.id}/diff?from=1&to=5`, security), 400);
    expectError(await get(`/v3/playlist/${created.id}/diff?from=0`, security), 400);
    expectError(await get(`/v3/playlist/${created.id}/diff`, security), 400);
    expectError(await get(`/v3/playlist/${created.id}/diff?from=1`, stranger), 404);
  });
});

describeEachDatabase('revision storage on %s', (t) => {
  it('costs what a change changed, not the playlist: an appended song is one small row', async () => {
    const security = await t.addUser();
    const songIds = Array.from({ length: 990 }, (_, i) => (i % 100) + 1);
    const created = await createPlaylist(t.app, security, 'Long', songIds);
    for (let i = 0; i < 5; i++) {
      const response = await t.app.inject({
        method: 'POST',
        url: `/v3/playlist/${created.id}/songs`,
        headers: { security, 'content-type': 'application/json' },
        payload: JSON.stringify({ songIds: [150 + i], position: i * 100 }),
      });
      expect(response.statusCode).toBe(200);
    }
    const rows = await t.db.kysely
      .selectFrom('playlist_revisions')
      .select(['version', 'songs', 'splice_at'])
      .where('playlist_id', '=', created.id)
      .orderBy('version')
      .execute();
    expect(rows).toHaveLength(6);
    expect(rows[0]!.songs.split(',')).toHaveLength(990);
    for (const [i, row] of rows.slice(1).entries()) {
      expect(row.splice_at).toBe(i * 100);
      expect(row.songs).toBe(String(150 + i));
    }
    // Every version reads back whole.
    const last = await t.app.inject({
      method: 'GET',
      url: `/v3/playlist/${created.id}/versions/6`,
      headers: { security },
    });
    const now = await t.app.inject({ method: 'GET', url: `/v3/playlist/${created.id}`, headers: { security } });
    expect(last.body).toBe(now.body);
  });
});

describeEachDatabase('revision storage at 10 000 songs on %s', { MIXTAPE_SONGS_MAX: '10000' }, (t) => {
  it('stores one small row for a change of one entry, whatever the length', async () => {
    const security = await t.addUser();
    // One short of the limit, which the insert reaches.
    const songIds = Array.from({ length: 9_999 }, (_, i) => (i % 100) + 1);
    const created = await createPlaylist(t.app, security, 'Very long', songIds);
    const url = `/v3/playlist/${created.id}`;
    const entries = (await t.app.inject({ method: 'GET', url: `${url}/entries?limit=3`, headers: { security } })).json<{
      entries: { entry: string }[];
    }>().entries;
    const ops = [
      // A move is stored as the span it crosses (here the entry before it).
      [{ op: 'move', entry: entries[1]!.entry, before: entries[0]!.entry }],
      [{ op: 'insert', songIds: [7], after: entries[0]!.entry }],
      [{ op: 'remove', entry: entries[2]!.entry }],
      [{ op: 'rename', name: 'Very long, renamed' }],
    ];
    const count = async (table: 'playlist_revisions' | 'playlist_entry_origins') =>
      Number(
        (
          await t.db.kysely
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('playlist_id', '=', created.id)
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count('playlist_entry_origins')).toBe(9_999);
    for (const [i, edit] of ops.entries()) {
      const answer = await t.app.inject({
        method: 'POST',
        url: `${url}/edits`,
        headers: { security, 'content-type': 'application/json', prefer: 'return=minimal' },
        payload: JSON.stringify({ ops: edit }),
      });
      expect(answer.statusCode, answer.body).toBe(200);
      const row = await t.db.kysely
        .selectFrom('playlist_revisions')
        .select(['songs', 'entries', 'song_count'])
        .where('playlist_id', '=', created.id)
        .where('version', '=', i + 2)
        .executeTakeFirstOrThrow();
      // A splice: the entries it changed (a move, the two it swapped), not the list.
      expect(row.songs.split(',').filter(Boolean).length).toBeLessThanOrEqual(2);
      expect(row.entries.split(',').filter(Boolean).length).toBeLessThanOrEqual(2);
    }
    expect(await count('playlist_revisions')).toBe(1 + ops.length);
    // One origin more: the inserted entry's.
    expect(await count('playlist_entry_origins')).toBe(10_000);
  });
});

describe('splices', () => {
  it('are found by trimming the common prefix and suffix', async () => {
    const { spliceOf } = await import('../../src/history/revision.repository.js');
    expect(spliceOf([1, 2, 3], [1, 2, 3, 4])).toEqual({ at: 3, deleted: 0, inserted: [4] });
    expect(spliceOf([1, 2, 3], [1, 3])).toEqual({ at: 1, deleted: 1, inserted: [] });
    expect(spliceOf([1, 1, 1], [1, 1])).toEqual({ at: 2, deleted: 1, inserted: [] });
    expect(spliceOf([], [5])).toEqual({ at: 0, deleted: 0, inserted: [5] });
    expect(spliceOf([1, 2, 3], [3, 2, 1])).toEqual({ at: 0, deleted: 3, inserted: [3, 2, 1] });
  });
});
