import { afterEach, expect, it, vi } from 'vitest';
import { pruneHistory } from '../../src/history/pruning.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

const DAY_MS = 24 * 60 * 60 * 1000;

type EntryDiffOp =
  | { op: 'insert'; songIds: number[]; after: string | null; entries: string[] }
  | { op: 'remove'; entry: string }
  | { op: 'move'; entry: string; after: string | null }
  | { op: 'rename'; name: string };

interface EntriesDiffBody {
  from: number;
  to: number;
  ops: EntryDiffOp[];
}

/** What a test compares of an entries answer: the name, and each slot's entry and song. */
const slots = (body: EntriesBody) => ({ name: body.name, entries: body.entries.map((e) => [e.entry, e.id]) });

describeEachDatabase('history in entries on %s', (t) => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const send = (...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) => sendAs(t.app, ...args);
  const entriesNow = async (id: number, security: string) => {
    const answer = await send('GET', `/v3/playlist/${id}/entries`, security);
    expect(answer.statusCode, answer.body).toBe(200);
    return answer;
  };
  const edit = async (id: number, security: string, ops: unknown[]) => {
    const answer = await send('POST', `/v3/playlist/${id}/edits`, security, { ops });
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json<EditsBody>();
  };
  const entriesDiff = async (id: number, security: string, from: number, to: number) => {
    const answer = await send('GET', `/v3/playlist/${id}/diff?from=${from}&to=${to}&form=entries`, security);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.headers['cache-control']).toBe('no-store');
    return answer.json<EntriesDiffBody>();
  };

  /** A playlist taken through inserts, removes, moves, a rename and the other edits, and its entries at each version. */
  async function history(security: string) {
    const made = await createPlaylist(t.app, security, 'Mix', [1, 2, 3, 4]);
    const id = made.id;
    const answers = [await entriesNow(id, security)];
    const [e1, e2, e3, e4] = answers[0]!.json<EntriesBody>().entries.map((e) => e.entry) as [string, ...string[]];
    const steps: (() => Promise<unknown>)[] = [
      () => edit(id, security, [{ op: 'insert', songIds: [5, 6], after: e2 }]),
      () => edit(id, security, [{ op: 'remove', entry: e3 }]),
      () =>
        edit(id, security, [
          { op: 'move', entry: e1, after: e4 },
          { op: 'move', entry: e4!, after: null },
        ]),
      () => edit(id, security, [{ op: 'rename', name: 'Road trip' }]),
      () => send('POST', `/v3/playlist/${id}/songs`, security, { songIds: [7, 2], position: 1 }),
      () =>
        send('PATCH', `/v3/playlist/${id}`, security, [{ op: 'move', from: '/songs/0', path: '/songs/-' }], {
          'content-type': 'application/json-patch+json',
        }),
      () =>
        edit(id, security, [
          { op: 'insert', songIds: [8] },
          { op: 'remove', entry: e2 },
        ]),
    ];
    for (const step of steps) {
      await step();
      answers.push(await entriesNow(id, security));
    }
    return { id, answers };
  }

  it("answers each version's entries as GET …/entries answered them then, with its ETag and 304", async () => {
    const security = await t.addUser();
    const { id, answers } = await history(security);
    expect(answers.map((answer) => answer.json<EntriesBody>().version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const [i, then] of answers.entries()) {
      const read = await send('GET', `/v3/playlist/${id}/versions/${i + 1}/entries`, security);
      expect(read.statusCode, read.body).toBe(200);
      expect(read.body).toBe(then.body);
      expect(read.headers.etag).toBe(then.headers.etag);
      const again = await send('GET', `/v3/playlist/${id}/versions/${i + 1}/entries`, security, undefined, {
        'if-none-match': String(read.headers.etag),
      });
      expect(again.statusCode).toBe(304);
    }
    // At the plural path too.
    const plural = await send('GET', `/v3/playlists/${id}/versions/3/entries`, security);
    expect(plural.body).toBe(answers[2]!.body);
  });

  it('answers a member as their GET …/entries does, and a delete’s version as the version before it', async () => {
    const owner = await t.addUser();
    const name = `member${process.pid}x${Date.now()}`;
    const member = await t.addUser(name);
    const made = await createPlaylist(t.app, owner, 'Shared', [1, 2]);
    expect((await send('PUT', `/v3/playlist/${made.id}/members/${name}`, owner, { role: 'viewer' })).statusCode).toBe(
      200,
    );
    const then = await entriesNow(made.id, member);
    expect((await send('POST', `/v3/playlist/${made.id}/songs`, owner, { songIds: [3] })).statusCode).toBe(200);
    const read = await send('GET', `/v3/playlist/${made.id}/versions/1/entries`, member);
    expect(read.body).toBe(then.body);
    expect(read.headers.etag).toBe(then.headers.etag);

    const last = await entriesNow(made.id, owner);
    expect((await send('DELETE', `/v3/playlist/${made.id}`, owner)).statusCode).toBe(200);
    const deleted = await send('GET', `/v3/playlist/${made.id}/versions/3/entries`, owner);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.body).toBe(last.body);
  });

  it("diffs any two versions into ops that turn the first one's entries into the second one's", async () => {
    const security = await t.addUser();
    const { id, answers } = await history(security);
    const bodies = answers.map((answer) => answer.json<EntriesBody>());
    const pairs = [
      [1, 8],
      [8, 1],
      [2, 5],
      [5, 4],
      [4, 3],
      [5, 7],
      [3, 3],
    ] as const;
    const diffs = [];
    for (const [from, to] of pairs) diffs.push(await entriesDiff(id, security, from, to));
    expect(diffs.at(-1)).toEqual({ from: 3, to: 3, ops: [] });
    // Version 2: e1 e2 e5 e6 e3 e4, named Mix; 4 and 5: e4 e2 e5 e6 e1, 5 named Road trip.
    expect(bodies[1]!.entries.map((e) => e.entry)).toEqual(['e1', 'e2', 'e5', 'e6', 'e3', 'e4']);
    expect(diffs[2]!.ops).toEqual([
      { op: 'rename', name: 'Road trip' },
      { op: 'remove', entry: 'e3' },
      { op: 'move', entry: 'e4', after: null },
      { op: 'move', entry: 'e1', after: 'e6' },
    ]);
    expect(diffs[3]!.ops).toEqual([{ op: 'rename', name: 'Mix' }]);
    // Applied through POST …/edits to the playlist restored to the first version (its entries as they were), they
    // give the second, the entries each insert made standing for those the op names.
    for (const [k, [from, to]] of pairs.entries()) {
      const { ops } = diffs[k]!;
      expect((await send('POST', `/v3/playlist/${id}/restore`, security, { version: from })).statusCode).toBe(200);
      expect(slots((await entriesNow(id, security)).json<EntriesBody>())).toEqual(slots(bodies[from - 1]!));
      if (ops.length === 0) continue;
      const edited = await send('POST', `/v3/playlist/${id}/edits`, security, {
        ops: ops.map((op) => {
          if (op.op !== 'insert') return op;
          const { entries: _, ...insert } = op;
          return insert;
        }),
        atomic: true,
      });
      expect(edited.statusCode, edited.body).toBe(200);
      const { playlist, results } = edited.json<EditsBody>();
      const named = new Map<string, string>();
      ops.forEach((op, i) => {
        const result = results[i]!;
        if (op.op !== 'insert' || !result.applied) return;
        result.entries!.forEach((made, j) => named.set(made, op.entries[j]!));
      });
      const applied = {
        ...playlist,
        entries: playlist.entries.map((e) => ({ ...e, entry: named.get(e.entry) ?? e.entry })),
      };
      expect(slots(applied)).toEqual(slots(bodies[to - 1]!));
    }
  });

  it('diffs long versions on a worker thread, as short ones', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(
      t.app,
      security,
      'Long',
      Array.from({ length: 150 }, (_, i) => 1 + (i % 200)),
    );
    await edit(made.id, security, [
      { op: 'move', entry: 'e150', after: null },
      { op: 'remove', entry: 'e70' },
      { op: 'insert', songIds: [9, 8], after: 'e100' },
      { op: 'rename', name: 'Longer' },
    ]);
    expect((await entriesDiff(made.id, security, 1, 2)).ops).toEqual([
      { op: 'rename', name: 'Longer' },
      { op: 'remove', entry: 'e70' },
      { op: 'move', entry: 'e150', after: null },
      { op: 'insert', songIds: [9, 8], after: 'e100', entries: ['e151', 'e152'] },
    ]);
  });

  it('answers the JSON Patch by default and for form=patch, and 400 for another form', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(t.app, security, 'Forms', [1]);
    expect((await send('POST', `/v3/playlist/${made.id}/songs`, security, { songIds: [2] })).statusCode).toBe(200);
    const patch = [{ op: 'add', path: '/songs/1', value: { id: 2 } }];
    for (const query of ['', '&form=patch']) {
      const answer = await send('GET', `/v3/playlist/${made.id}/diff?from=1${query}`, security);
      expect(answer.headers['content-type']).toMatch(/^application\/json-patch\+json/);
      expect(answer.json()).toEqual(patch);
    }
    const entries = await send('GET', `/v3/playlist/${made.id}/diff?from=1&form=entries`, security);
    expect(entries.json<EntriesDiffBody>()).toEqual({
      from: 1,
      to: 2,
      ops: [{ op: 'insert', songIds: [2], after: 'e1', entries: ['e2'] }],
    });
    const bad = expectError(await send('GET', `/v3/playlist/${made.id}/diff?from=1&form=songs`, security), 400);
    expect(bad.errormsg).toContain('"form"');
    expect(bad.errormsg).toContain('entries');
    expectError(await send('GET', `/v3/playlist/${made.id}/diff?from=3&form=entries`, security), 400);
  });

  it('answers 404 to a stranger and past the newest version, 410 for a version no longer kept', async () => {
    const security = await t.addUser();
    const stranger = await t.addUser();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 40 * DAY_MS });
    const made = await createPlaylist(t.app, security, 'Old', [1, 2]);
    vi.useRealTimers();
    expect((await send('POST', `/v3/playlist/${made.id}/songs`, security, { songIds: [3] })).statusCode).toBe(200);
    expect((await send('POST', `/v3/playlist/${made.id}/songs`, security, { songIds: [4] })).statusCode).toBe(200);
    while ((await pruneHistory(t.db, Date.now() - 30 * DAY_MS)) > 0);

    const url = `/v3/playlist/${made.id}`;
    const asStranger = expectError(await send('GET', `${url}/versions/2/entries`, stranger), 404);
    expect(asStranger.errormsg).toBe(expectError(await send('GET', url, stranger), 404).errormsg);
    expectError(await send('GET', `${url}/diff?from=2&form=entries`, stranger), 404);
    expect(expectError(await send('GET', `${url}/versions/4/entries`, security), 404).errormsg).toContain(
      'no version 4',
    );
    expectError(await send('GET', `${url}/versions/0/entries`, security), 400);
    expect(expectError(await send('GET', `${url}/versions/1/entries`, security), 410).errormsg).toContain(
      'no longer kept',
    );
    expectError(await send('GET', `${url}/diff?from=1&form=entries`, security), 410);
    expect((await send('GET', `${url}/versions/2/entries`, security)).statusCode).toBe(200);
    expect((await entriesDiff(made.id, security, 2, 3)).ops).toEqual([
      { op: 'insert', songIds: [4], after: 'e3', entries: ['e4'] },
    ]);
  });

  it('answers 410 for a version recorded before entries were, whose songs its JSON still answers', async () => {
    const security = await t.addUser();
    const made = await createPlaylist(t.app, security, 'Before entries', [1, 2]);
    expect((await send('POST', `/v3/playlist/${made.id}/songs`, security, { songIds: [3] })).statusCode).toBe(200);
    // As migration 2026-12-06-entries left the revisions written before it: songs, and no entries.
    await t.db.kysely
      .updateTable('playlist_revisions')
      .set({ entries: '' })
      .where('playlist_id', '=', made.id)
      .where('version', '=', 1)
      .execute();
    const url = `/v3/playlist/${made.id}`;
    expect((await send('GET', `${url}/versions/1`, security)).statusCode).toBe(200);
    expect(expectError(await send('GET', `${url}/versions/1/entries`, security), 410).errormsg).toContain(
      'before entries',
    );
    expectError(await send('GET', `${url}/diff?from=1&form=entries`, security), 410);
    expect((await send('GET', `${url}/diff?from=1`, security)).statusCode).toBe(200);
  });
});
