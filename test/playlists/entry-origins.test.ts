import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, sendAs } from '../helpers/requests.js';

interface ShownEntry {
  entry: string;
  id: number;
  addedBy: string | null;
  addedAt: string | null;
}
interface EntriesBody {
  version: number;
  entries: ShownEntry[];
}

const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describeEachDatabase('who added each entry, and when, on %s', (t) => {
  it('records who made each entry and when, keeps it through moves and restores, and shows it in every entries form', async () => {
    const alice = `alice_${process.pid}`;
    const bob = `bob_${process.pid}`;
    const aliceSecurity = await t.addUser(alice);
    const bobSecurity = await t.addUser(bob);
    const before = Date.now();
    const made = await createPlaylist(t.app, aliceSecurity, 'Together', [1, 2]);
    const url = `/v3/playlist/${made.id}`;
    const read = async (who = aliceSecurity, path = '/entries') => {
      const answer = await sendAs(t.app, 'GET', `${url}${path}`, who);
      expect(answer.statusCode, answer.body).toBe(200);
      return answer.json<EntriesBody>();
    };

    const first = await read();
    expect(first.entries.map((e) => e.addedBy)).toEqual([alice, alice]);
    for (const entry of first.entries) {
      expect(entry.addedAt).toMatch(RFC3339_MS);
      expect(Date.parse(entry.addedAt!)).toBeGreaterThanOrEqual(before);
    }

    const shared = await sendAs(t.app, 'PUT', `${url}/members/${bob}`, aliceSecurity, { role: 'editor' });
    expect(shared.statusCode, shared.body).toBe(200);
    // Bob's insert: his entry, in the merged edit's answer as in the entries read after it.
    const inserted = await sendAs(t.app, 'POST', `${url}/edits`, bobSecurity, {
      ops: [{ op: 'insert', songIds: [3], after: first.entries[0]!.entry }],
    });
    expect(inserted.statusCode, inserted.body).toBe(200);
    const answered = inserted.json<{ playlist: EntriesBody }>().playlist;
    expect(answered.entries.map((e) => [e.id, e.addedBy])).toEqual([
      [1, alice],
      [3, bob],
      [2, alice],
    ]);
    expect(answered).toEqual(await read(bobSecurity));
    const bobs = answered.entries[1]!;

    // A move keeps who made the entry and when.
    const moved = await sendAs(t.app, 'POST', `${url}/edits`, aliceSecurity, {
      ops: [{ op: 'move', entry: first.entries[0]!.entry, after: first.entries[1]!.entry }],
    });
    expect(moved.statusCode, moved.body).toBe(200);
    const afterMove = await read();
    expect(afterMove.entries.map((e) => [e.id, e.addedBy])).toEqual([
      [3, bob],
      [2, alice],
      [1, alice],
    ]);
    expect(afterMove.entries.find((e) => e.entry === first.entries[0]!.entry)!.addedAt).toBe(first.entries[0]!.addedAt);

    // Removed by Alice, then given back by a restore of the version that had it: still Bob's, from when he made it.
    const removed = await sendAs(t.app, 'POST', `${url}/edits`, aliceSecurity, {
      ops: [{ op: 'remove', entry: bobs.entry }],
    });
    expect(removed.statusCode, removed.body).toBe(200);
    const restored = await sendAs(t.app, 'POST', `${url}/restore`, aliceSecurity, { version: afterMove.version });
    expect(restored.statusCode, restored.body).toBe(200);
    const back = (await read()).entries.find((e) => e.entry === bobs.entry);
    expect(back).toEqual(bobs);

    // A kept version's entries and a page of entries show the same.
    const kept = await read(aliceSecurity, `/versions/${answered.version}/entries`);
    expect(kept.entries).toEqual(answered.entries);
    const page = await read(aliceSecurity, '/entries?limit=1');
    expect(page.entries).toEqual([(await read()).entries[0]]);

    // A new song added by PUT is the writer's, now; the songs it keeps keep their entries and origins.
    const later = Date.now();
    const put = await sendAs(t.app, 'PUT', url, bobSecurity, { name: 'Together', songIds: [3, 2, 1, 4] });
    expect(put.statusCode, put.body).toBe(200);
    const afterPut = (await read()).entries;
    const fourth = afterPut.find((e) => e.id === 4)!;
    expect(fourth.addedBy).toBe(bob);
    expect(Date.parse(fourth.addedAt!)).toBeGreaterThanOrEqual(later);
    expect(afterPut.find((e) => e.id === 1)).toEqual(afterMove.entries.find((e) => e.id === 1));
  });

  it("writes them in JSPF as ListenBrainz's track extension, and names no user but the owner through a link", async () => {
    const carol = `carol_${process.pid}`;
    const dave = `dave_${process.pid}`;
    const carolSecurity = await t.addUser(carol);
    const daveSecurity = await t.addUser(dave);
    const made = await createPlaylist(t.app, carolSecurity, 'Filed', [1]);
    const url = `/v3/playlist/${made.id}`;
    expect((await sendAs(t.app, 'PUT', `${url}/members/${dave}`, carolSecurity, { role: 'editor' })).statusCode).toBe(
      200,
    );
    expect((await sendAs(t.app, 'POST', `${url}/songs`, daveSecurity, { songIds: [2] })).statusCode).toBe(200);
    const extension = 'https://musicbrainz.org/doc/jspf#track';
    type Jspf = { playlist: { track: { extension?: Record<string, { added_by?: string; added_at?: string }> }[] } };
    const added = (body: Jspf) => body.playlist.track.map((track) => track.extension?.[extension]);

    const file = await sendAs(t.app, 'GET', `${url}?format=jspf`, carolSecurity);
    expect(file.statusCode, file.body).toBe(200);
    const tracks = added(file.json<Jspf>());
    expect(tracks.map((a) => a?.added_by)).toEqual([carol, dave]);
    for (const a of tracks) expect(a?.added_at).toMatch(RFC3339_MS);

    const link = await sendAs(t.app, 'POST', `${url}/links`, carolSecurity, {});
    expect(link.statusCode, link.body).toBe(200);
    const path = new URL(link.json<{ url: string }>().url).pathname;
    const shared = await t.app.inject({ method: 'GET', url: `${path}?format=jspf` });
    expect(shared.statusCode, shared.body).toBe(200);
    const throughLink = added(shared.json<Jspf>());
    expect(throughLink.map((a) => a?.added_by)).toEqual([carol, undefined]);
    expect(throughLink.map((a) => a?.added_at)).toEqual(tracks.map((a) => a?.added_at));
  });
});
