import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface EditsBody {
  playlist: { id: number; name: string; version: number; entries: { entry: string; id: number }[] };
  results: { applied: boolean; entries?: string[]; reason?: string; message?: string }[];
}

const KEYS_PER_USER = 3;

describeEachDatabase(
  'the keys of merged edits on %s',
  { MIXTAPE_EDIT_KEYS_PER_USER: String(KEYS_PER_USER) },
  (t, dialect) => {
    const edit = (id: number, security: string, body: unknown) =>
      sendAs(t.app, 'POST', `/v3/playlist/${id}/edits`, security, body);
    const edited = async (id: number, security: string, body: unknown) => {
      const answer = await edit(id, security, body);
      expect(answer.statusCode, answer.body).toBe(200);
      return answer.json<EditsBody>();
    };
    const entriesOf = async (id: number, security: string) => {
      const answer = await sendAs(t.app, 'GET', `/v3/playlist/${id}/entries`, security);
      expect(answer.statusCode, answer.body).toBe(200);
      return answer.json<EditsBody['playlist']>();
    };
    /** The user's keys as kept, and the bytes each takes (key, results and digest), by key. */
    const keptOf = async (name: string) => {
      const bytes = dialect === 'postgres' ? 'octet_length' : 'length';
      const { rows } = await sql<{ key: string; bytes: number | string }>`
        SELECT k.key, ${sql.raw(bytes)}(k.key) + ${sql.raw(bytes)}(k.results)
          + coalesce(${sql.raw(bytes)}(${sql.ref('k.digest')}), 0) AS bytes
        FROM edit_keys k JOIN users u ON u.id = k.user_id WHERE u.name = ${name}`.execute(t.db.kysely);
      return new Map(rows.map((row) => [row.key, Number(row.bytes)]));
    };

    it('answers a key sent again with the same request as the first time, and refuses it with another (422)', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Keyed', [1, 2, 3]);
      const [e1, e2] = (await entriesOf(made.id, security)).entries.map((e) => e.entry);
      const request = { key: 'phone-1', ops: [{ op: 'insert', songIds: [4, 5], after: e1 }] };
      const first = await edited(made.id, security, request);
      expect(first.playlist.version).toBe(2);
      expect(first.results).toEqual([{ applied: true, entries: [expect.any(String), expect.any(String)] }]);

      // The same request, its members in another order: the first answer, nothing applied again.
      const again = await edited(made.id, security, {
        ops: [{ after: e1, songIds: [4, 5], op: 'insert' }],
        key: 'phone-1',
      });
      expect(again).toEqual(first);

      // Another request with that key: other ops, another base, `atomic`, the base left out or given.
      for (const other of [
        { ...request, ops: [{ op: 'insert', songIds: [4], after: e1 }] },
        { ...request, ops: [{ op: 'remove', entry: e2 }] },
        { ...request, base: 1 },
        { ...request, atomic: true },
      ]) {
        const refused = expectError(await edit(made.id, security, other), 422);
        expect(refused.errormsg).toMatch(/key .*another request/i);
      }
      expect(await entriesOf(made.id, security)).toEqual(first.playlist);

      // The first request given with its base: another body, though it names the version it was made on.
      const withBase = { ...request, key: 'phone-2', base: 2 };
      const second = await edited(made.id, security, withBase);
      expect(second.playlist.version).toBe(3);
      expectError(await edit(made.id, security, { ...withBase, base: undefined }), 422);
      expect(await edited(made.id, security, withBase)).toEqual(second);
    });

    it(`keeps at most MIXTAPE_EDIT_KEYS_PER_USER (${KEYS_PER_USER}) keys of a user, forgetting the oldest first`, async () => {
      const name = `keys-${process.pid}-${dialect}`;
      const security = await t.addUser(name);
      const other = await t.addUser();
      const one = await createPlaylist(t.app, security, 'One', []);
      const two = await createPlaylist(t.app, security, 'Two', []);
      const theirs = await createPlaylist(t.app, other, 'Theirs', []);
      const insert = (key: string, songId: number) => ({ key, ops: [{ op: 'insert', songIds: [songId] }] });
      // Keys on both of the user's playlists count together.
      const answers = [];
      for (const [i, playlist] of [one, two, one, two].entries()) {
        answers.push(await edited(playlist.id, security, insert(`k${i}`, i + 1)));
      }
      expect([...(await keptOf(name)).keys()].sort()).toEqual(['k1', 'k2', 'k3']);
      // Another user's keys leave the user's as they are.
      for (let i = 0; i < KEYS_PER_USER + 1; i++) await edited(theirs.id, other, insert(`k${i}`, 9));

      // The newest three are answered as they were; the oldest is a new request again.
      const versions = [(await entriesOf(one.id, security)).version, (await entriesOf(two.id, security)).version];
      for (const i of [1, 2, 3]) {
        const playlist = i % 2 === 0 ? one : two;
        expect((await edited(playlist.id, security, insert(`k${i}`, i + 1))).results).toEqual(answers[i]!.results);
      }
      expect([(await entriesOf(one.id, security)).version, (await entriesOf(two.id, security)).version]).toEqual(
        versions,
      );
      const resent = await edited(one.id, security, insert('k0', 1));
      expect(resent.playlist.version).toBe(versions[0]! + 1);
      expect(resent.results[0]!.entries).not.toEqual(answers[0]!.results[0]!.entries);
      expect([...(await keptOf(name)).keys()].sort()).toEqual(['k0', 'k2', 'k3']);
    });

    it('answers a key kept before digests were whatever request comes with it, as it did then', async () => {
      const name = `legacy-${process.pid}-${dialect}`;
      const security = await t.addUser(name);
      const made = await createPlaylist(t.app, security, 'Legacy', [1]);
      const first = await edited(made.id, security, { key: 'old', ops: [{ op: 'insert', songIds: [2] }] });
      // As a key was kept before this version, or by an instance of the one before while a new one rolls out.
      await t.db.kysely
        .updateTable('edit_keys')
        .set({ results: JSON.stringify(first.results), digest: null })
        .where('key', '=', 'old')
        .where('playlist_id', '=', made.id)
        .execute();
      const again = await edited(made.id, security, { key: 'old', ops: [{ op: 'insert', songIds: [3] }] });
      expect(again).toEqual(first);
    });

    it('keeps a few bytes for a request of 100 ops that applied nothing, and answers it again the same', async () => {
      const name = `noop-${process.pid}-${dialect}`;
      const security = await t.addUser(name);
      const made = await createPlaylist(t.app, security, 'Gone', [1, 2, 3, 4]);
      const [e1, e2, e3, e4] = (await entriesOf(made.id, security)).entries.map((e) => e.entry);
      await edited(made.id, security, {
        ops: [
          { op: 'remove', entry: e1 },
          { op: 'remove', entry: e2 },
        ],
      });
      // Removes and moves of entries removed already, by turns.
      const ops = Array.from({ length: 100 }, (_, i) =>
        i % 3 === 2 ? { op: 'move', entry: e2, after: e4 } : { op: 'remove', entry: i % 2 === 0 ? e1 : e2 },
      );
      const first = await edit(made.id, security, { key: 'noop', ops });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json<EditsBody>().results.every((r) => !r.applied && r.reason === 'removed')).toBe(true);
      expect(first.json<EditsBody>().results[2]!.message).toMatch(/cannot be moved/);
      const kept = (await keptOf(name)).get('noop')!;
      expect(kept).toBeLessThan(100);
      const again = await edit(made.id, security, { key: 'noop', ops });
      expect(again.body).toBe(first.body);

      // Inserts, a rename that applied, moves, and a rename met by a name changed meanwhile: answered byte for byte.
      const mixed = {
        key: 'mixed',
        base: 2,
        ops: [
          { op: 'insert', songIds: [5, 6, 7], before: e3 },
          { op: 'move', entry: e4, after: null },
          { op: 'remove', entry: e1 },
          { op: 'insert', songIds: [8] },
          { op: 'rename', name: 'Renamed' },
        ],
      };
      await edited(made.id, security, { ops: [{ op: 'rename', name: 'Meanwhile "quoted" ✓' }] });
      const mixedFirst = await edit(made.id, security, mixed);
      expect(mixedFirst.statusCode, mixedFirst.body).toBe(200);
      expect(mixedFirst.json<EditsBody>().results.map((r) => r.reason ?? 'applied')).toEqual([
        'applied',
        'applied',
        'removed',
        'applied',
        'conflict',
      ]);
      const mixedAgain = await edit(made.id, security, mixed);
      expect(mixedAgain.json<EditsBody>().results).toEqual(mixedFirst.json<EditsBody>().results);
      expect(JSON.stringify(mixedAgain.json<EditsBody>().results)).toBe(
        JSON.stringify(mixedFirst.json<EditsBody>().results),
      );
      expect((await keptOf(name)).get('mixed')!).toBeLessThan(200);
    });
  },
);
