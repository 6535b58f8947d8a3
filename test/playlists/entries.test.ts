import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/databases.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPlaylist, type PlaylistBody } from '../helpers/requests.js';

interface EntriesBody {
  id: number;
  name: string;
  version: number;
  entries: { entry: string; id: number; title: string; artist: string }[];
}
interface EditsBody {
  playlist: EntriesBody;
  results: { applied: boolean; entries?: string[]; reason?: string; message?: string }[];
}

for (const dialect of DIALECTS) {
  describe(`entries and merged edits on ${dialect}`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(dialect);
    });
    afterAll(async () => {
      await t.close();
    });

    const entries = (id: number, security: string, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'GET', url: `/v3/playlist/${id}/entries`, headers: { security, ...headers } });
    const send = (id: number, security: string, body: unknown, headers: Record<string, string> = {}) =>
      t.app.inject({
        method: 'POST',
        url: `/v3/playlist/${id}/edits`,
        headers: { security, 'content-type': 'application/json', ...headers },
        payload: JSON.stringify(body),
      });
    const request = (method: 'PATCH' | 'PUT' | 'POST', url: string, security: string, body: unknown, type?: string) =>
      t.app.inject({
        method,
        url,
        headers: { security, 'content-type': type ?? 'application/json' },
        payload: JSON.stringify(body),
      });
    const read = async (id: number, security: string) => {
      const answer = await entries(id, security);
      expect(answer.statusCode, answer.body).toBe(200);
      return answer.json<EntriesBody>();
    };
    const pairs = (body: EntriesBody) => body.entries.map((e) => [e.entry, e.id]);

    it('answers each slot with an entry, a strong ETag and 304', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Slots', [3, 1, 3]);
      const answer = await entries(made.id, security);
      expect(answer.statusCode).toBe(200);
      const body = answer.json<EntriesBody>();
      expect(body).toMatchObject({ id: made.id, name: 'Slots', version: 1 });
      expect(body.entries.map((e) => e.id)).toEqual([3, 1, 3]);
      expect(new Set(body.entries.map((e) => e.entry)).size).toBe(3);
      expect(body.entries[0]!.title).toEqual(expect.any(String));
      const etag = String(answer.headers.etag);
      expect(etag).toMatch(/^"[^W]/);
      expect((await entries(made.id, security, { 'if-none-match': etag })).statusCode).toBe(304);
      const stranger = await t.addUser();
      expect((await entries(made.id, stranger)).statusCode).toBe(404);
    });

    it('keeps every entry through a JSON Patch move, a merge patch that keeps songs, songs added and a restore', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Kept', [1, 2, 3, 4]);
      const [a, b, c, d] = (await read(made.id, security)).entries.map((e) => e.entry);
      const moved = await request(
        'PATCH',
        `/v3/playlist/${made.id}`,
        security,
        [{ op: 'move', from: '/songs/3', path: '/songs/0' }],
        'application/json-patch+json',
      );
      expect(moved.statusCode, moved.body).toBe(200);
      expect(pairs(await read(made.id, security))).toEqual([
        [d, 4],
        [a, 1],
        [b, 2],
        [c, 3],
      ]);
      const merged = await request('PATCH', `/v3/playlist/${made.id}`, security, { songIds: [4, 2, 9, 3] });
      expect(merged.statusCode, merged.body).toBe(200);
      const after = await read(made.id, security);
      expect(after.entries.map((e) => e.entry).filter((e) => [a, b, c, d].includes(e))).toEqual([d, b, c]);
      const added = await request('POST', `/v3/playlist/${made.id}/songs`, security, { songIds: [5], position: 0 });
      expect(added.statusCode).toBe(200);
      const withAdded = await read(made.id, security);
      expect(withAdded.entries.slice(1).map((e) => e.entry)).toEqual(after.entries.map((e) => e.entry));
      const restored = await request('POST', `/v3/playlist/${made.id}/restore`, security, { version: 2 });
      expect(restored.statusCode, restored.body).toBe(200);
      expect(pairs(await read(made.id, security))).toEqual([
        [d, 4],
        [a, 1],
        [b, 2],
        [c, 3],
      ]);
    });

    it('merges edits made on an old version: inserts land by their anchors, removed ones report it, renames conflict', async () => {
      const owner = await t.addUser();
      const made = await createPlaylist(t.app, owner, 'Road trip', [1, 2, 3, 4]);
      const base = await read(made.id, owner);
      const [a, b, c, d] = base.entries.map((e) => e.entry);
      // Someone removes b and renames, on version 1.
      const first = await send(made.id, owner, {
        base: 1,
        ops: [
          { op: 'remove', entry: b },
          { op: 'rename', name: 'Road trip 2' },
        ],
      });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json<EditsBody>().results).toEqual([{ applied: true }, { applied: true }]);
      // The answer is the entries form, with its ETag.
      expect(first.headers.etag).toBe((await entries(made.id, owner)).headers.etag);
      // Another edit made on version 1: insert after b (removed since), remove b again, move d first, rename.
      const second = await send(made.id, owner, {
        base: 1,
        ops: [
          { op: 'insert', songIds: [7], after: b },
          { op: 'remove', entry: b },
          { op: 'move', entry: d, after: null },
          { op: 'rename', name: 'Roadtrip' },
          { op: 'insert', songIds: [8] },
        ],
      });
      expect(second.statusCode, second.body).toBe(200);
      const body = second.json<EditsBody>();
      const [inserted, removed, move, rename, appended] = body.results;
      expect(inserted).toMatchObject({ applied: true, entries: [expect.any(String)] });
      expect(removed).toMatchObject({ applied: false, reason: 'removed' });
      expect(move).toEqual({ applied: true });
      expect(rename).toMatchObject({ applied: false, reason: 'conflict' });
      expect(rename!.message).toContain('Road trip 2');
      expect(pairs(body.playlist)).toEqual([
        [d, 4],
        [a, 1],
        [inserted!.entries![0], 7],
        [c, 3],
        [appended!.entries![0], 8],
      ]);
      expect(body.playlist).toMatchObject({ name: 'Road trip 2', version: 3 });
      // One revision for what was applied.
      const versions = await t.app.inject({
        method: 'GET',
        url: `/v3/playlist/${made.id}/versions`,
        headers: { security: owner },
      });
      expect(versions.json<unknown[]>()).toHaveLength(3);
    });

    it('answers a resent key as the first time, applying nothing again; atomic refuses all; bad input', async () => {
      const owner = await t.addUser();
      const made = await createPlaylist(t.app, owner, 'Keys', [1, 2]);
      const [a] = (await read(made.id, owner)).entries.map((e) => e.entry);
      const edit = { base: 1, key: 'phone-42', ops: [{ op: 'insert', songIds: [5], after: a }] };
      const once = await send(made.id, owner, edit);
      expect(once.statusCode, once.body).toBe(200);
      const again = await send(made.id, owner, edit);
      expect(again.statusCode).toBe(200);
      expect(again.json<EditsBody>().results).toEqual(once.json<EditsBody>().results);
      expect((await read(made.id, owner)).entries.map((e) => e.id)).toEqual([1, 5, 2]);

      const atomic = await send(made.id, owner, {
        base: 1,
        atomic: true,
        ops: [
          { op: 'rename', name: 'Fine' },
          { op: 'remove', entry: 'e999999' },
        ],
      });
      expect(atomic.statusCode).toBe(422);
      // Once the inserted entry is removed, an atomic request that removes it again applies none of its ops.
      const inserted = once.json<EditsBody>().results[0]!.entries![0]!;
      expect((await send(made.id, owner, { ops: [{ op: 'remove', entry: inserted }] })).statusCode).toBe(200);
      const refused = await send(made.id, owner, {
        base: 2,
        atomic: true,
        ops: [
          { op: 'insert', songIds: [6] },
          { op: 'remove', entry: inserted },
        ],
      });
      expect(refused.statusCode, refused.body).toBe(409);
      expect(refused.json<{ results: unknown[] }>().results).toHaveLength(2);
      expect((await read(made.id, owner)).entries.map((e) => e.id)).toEqual([1, 2]);

      const malformed = await send(made.id, owner, {
        ops: [
          { op: 'insert', songIds: [1] },
          { op: 'move', after: a },
        ],
      });
      expect(malformed.statusCode).toBe(400);
      expect(malformed.json<{ errormsg: string }>().errormsg).toContain('ops/1');
      const unknownSong = await send(made.id, owner, { ops: [{ op: 'insert', songIds: [987654321] }] });
      expect(unknownSong.statusCode).toBe(422);
      const stale = await send(made.id, owner, { ops: [{ op: 'rename', name: 'x' }] }, { 'if-match': '"nope"' });
      expect(stale.statusCode).toBe(412);
      const future = await send(made.id, owner, { base: 99, ops: [{ op: 'rename', name: 'x' }] });
      expect(future.statusCode).toBe(400);
      const stranger = await t.addUser();
      expect((await send(made.id, stranger, { ops: [{ op: 'rename', name: 'x' }] })).statusCode).toBe(404);
      expect((await read(made.id, owner)).name).toBe('Keys');
    });

    it('merges concurrent edits on one base: every insert lands exactly once, none refused', async () => {
      const owner = await t.addUser();
      const made = await createPlaylist(t.app, owner, 'Busy', [1, 2, 3]);
      const [first] = (await read(made.id, owner)).entries.map((e) => e.entry);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          send(made.id, owner, { base: 1, ops: [{ op: 'insert', songIds: [10 + i], after: first }] }),
        ),
      );
      expect(answers.map((answer) => answer.statusCode)).toEqual(answers.map(() => 200));
      const songs = (await read(made.id, owner)).entries.map((e) => e.id);
      expect(songs).toHaveLength(23);
      expect([...songs].sort((x, y) => x - y)).toEqual([1, 2, 3, ...Array.from({ length: 20 }, (_, i) => 10 + i)]);
      expect(songs[0]).toBe(1);
      const plain = await t.app.inject({ method: 'GET', url: `/v3/playlist/${made.id}`, headers: { security: owner } });
      expect(plain.json<PlaylistBody>().songs.map((s) => s.id)).toEqual(songs);
    });
  });
}
