import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { addUser, createThrough, uniqueWord } from '../helpers/live-data.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, type Answer } from '../helpers/traffic.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { seededRandom } from '../helpers/seeded-random.js';

/**
 * The contract of merged edits (`POST …/edits`) between instances: edits made on one old version, sent at once by
 * several editors to two service processes on one database, all answer 200 (never 412, never 5xx for being
 * concurrent), and none is lost: the playlist, read from either instance, holds every insert exactly once where its
 * anchor put it, and the originals in their order. Of concurrent removes of one entry exactly one applies; the others
 * answer `removed`. A request sent with a key applies once, however often and wherever it is sent.
 */

/** The owner and this many editors send the edits, in turn. */
const EDITORS = 3;
/** Edits sent to each instance at once. */
const PER_INSTANCE = 15;

describeEachEmptyDatabase('merged edits sent at once to two instances of one %s database', (database) => {
  let db: Db;
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startServer({ databaseUrl: database.url }),
      startServer({ databaseUrl: database.url }),
    ]);
    db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
  });
  afterAll(async () => {
    await killAllServers();
    await db.close();
  });

  const entries = async (server: ServerProcess, security: string, id: number): Promise<EntriesBody> => {
    const answer = await call(`${server.url}/v3/playlist/${id}/entries`, { headers: { security } });
    expect(answer.status, answer.body).toBe(200);
    return JSON.parse(answer.body) as EntriesBody;
  };

  const send = (server: ServerProcess, security: string, id: number, body: unknown): Promise<Answer> =>
    call(`${server.url}/v3/playlist/${id}/edits`, { method: 'POST', headers: { security }, body });

  /**
   * The owner's playlist of these songs, shared with `editors` new users as editors (the shares alternate between
   * the instances); the `security` headers of the owner and the editors, the owner first.
   */
  async function sharedPlaylist(
    name: string,
    songIds: number[],
    editors = EDITORS,
  ): Promise<{ id: number; people: string[] }> {
    const owner = await addUser(db);
    const made = await createThrough(a, owner, name, songIds);
    const people = [owner];
    for (let i = 0; i < editors; i++) {
      const user = uniqueWord('editor');
      people.push(await addUser(db, user));
      const shared = await call(`${(i % 2 === 0 ? a : b).url}/v3/playlist/${made.id}/members/${user}`, {
        method: 'PUT',
        headers: { security: owner },
        body: { role: 'editor' },
      });
      expect(shared.status, shared.body).toBe(200);
    }
    // Each person signs in on each instance first, one at a time: the sign-in throttle checks at most 4 new
    // credentials from one address at once (429 beyond, docs/security.md), which is not what these tests are about.
    // This also shows that both instances see every membership before the edits.
    for (const security of people) {
      for (const server of [a, b]) expect((await entries(server, security, made.id)).version).toBe(1);
    }
    return { id: made.id, people };
  }

  /** Every request's index whose answer was not 200, with its status and body: none is expected. */
  function refusals(answers: readonly Answer[]): string[] {
    return answers.flatMap((answer, i) => (answer.status === 200 ? [] : [`#${i}: ${answer.status} ${answer.body}`]));
  }

  /** Both instances answer the same entries, each entry once. */
  async function readBoth(people: readonly string[], id: number): Promise<EntriesBody> {
    const [fromA, fromB] = await Promise.all([entries(a, people[1]!, id), entries(b, people.at(-1)!, id)]);
    expect(fromB).toEqual(fromA);
    const names = fromA.entries.map((e) => e.entry);
    expect(new Set(names).size).toBe(names.length);
    return fromA;
  }

  it(`lands all ${2 * PER_INSTANCE} inserts made on version 1 after one entry by ${EDITORS + 1} people, each once`, async () => {
    const originals = [1, 2, 3, 4];
    const { id, people } = await sharedPlaylist('Everyone adds one', originals);
    const base = await entries(b, people[0]!, id);
    expect(base.version).toBe(1);
    const [first, anchor, third, fourth] = base.entries;
    // Distinct songs, none of them an original, so that each insert can be found again by its song.
    const inserted = Array.from({ length: 2 * PER_INSTANCE }, (_v, i) => 101 + i);

    const answers = await Promise.all(
      inserted.map((songId, i) =>
        send(i % 2 === 0 ? a : b, people[i % people.length]!, id, {
          base: 1,
          ops: [{ op: 'insert', songIds: [songId], after: anchor!.entry }],
        }),
      ),
    );

    expect(refusals(answers)).toEqual([]);
    const bodies = answers.map((answer) => JSON.parse(answer.body) as EditsBody);
    const madeEntries = bodies.map((body, i) => {
      expect(body.results, `#${i}`).toEqual([{ applied: true, entries: [expect.any(String)] }]);
      const [result] = body.results;
      const entry = result!.applied ? result!.entries![0]! : '';
      // The answer shows the playlist with this insert in it, right after the anchor or after other inserts.
      expect(body.playlist.entries.find((e) => e.entry === entry)?.id, `#${i}`).toBe(inserted[i]);
      return entry;
    });
    expect(new Set(madeEntries).size).toBe(inserted.length);
    // Each edit is one revision of its own: the answers' versions are 2, 3, … with none twice.
    expect(bodies.map((body) => body.playlist.version).sort((x, y) => x - y)).toEqual(
      inserted.map((_songId, i) => 2 + i),
    );

    const after = await readBoth(people, id);
    expect(after.version).toBe(1 + inserted.length);
    // The originals keep their entries and their order; every insert stands between the anchor and the one after.
    expect(after.entries.slice(0, 2)).toEqual([first, anchor]);
    expect(after.entries.slice(-2)).toEqual([third, fourth]);
    const between = after.entries.slice(2, -2);
    expect(between.map((e) => e.id).sort((x, y) => x - y)).toEqual(inserted);
    expect(between.map((e) => e.entry).sort()).toEqual([...madeEntries].sort());
    for (const entry of between) {
      expect(entry.entry, `song ${entry.id}`).toBe(madeEntries[inserted.indexOf(entry.id)]);
    }
  }, 60_000);

  it('applies exactly one of concurrent removes of one entry; the others say removed, inserts at it all land', async () => {
    const originals = [5, 6, 7, 8, 9];
    const { id, people } = await sharedPlaylist('One goes', originals);
    const base = await entries(a, people[0]!, id);
    const [first, doomed, ...rest] = base.entries;
    // Half the requests remove the same entry, the other half insert after it, each on version 1.
    const inserted = Array.from({ length: PER_INSTANCE }, (_v, i) => 151 + i);
    const requests = Array.from({ length: 2 * PER_INSTANCE }, (_v, i) =>
      i % 2 === 0
        ? { op: 'remove', entry: doomed!.entry }
        : { op: 'insert', songIds: [inserted[(i - 1) / 2]!], after: doomed!.entry },
    );

    const answers = await Promise.all(
      requests.map((op, i) =>
        // Removes and inserts both go to both instances: the instance turns every fourth request.
        send(Math.floor(i / 2) % 2 === 0 ? a : b, people[i % people.length]!, id, { base: 1, ops: [op] }),
      ),
    );

    expect(refusals(answers)).toEqual([]);
    const results = answers.map((answer) => (JSON.parse(answer.body) as EditsBody).results);
    const removes = results.filter((_r, i) => i % 2 === 0).map(([result]) => result!);
    const inserts = results.filter((_r, i) => i % 2 === 1).map(([result]) => result!);
    expect(removes.filter((result) => result.applied)).toEqual([{ applied: true }]);
    const notApplied = removes.filter((result) => !result.applied);
    expect(notApplied).toHaveLength(PER_INSTANCE - 1);
    for (const result of notApplied) expect(result).toMatchObject({ applied: false, reason: 'removed' });
    for (const result of inserts) expect(result).toEqual({ applied: true, entries: [expect.any(String)] });

    const after = await readBoth(people, id);
    // One revision per insert and one for the remove that applied; none for those that did not.
    expect(after.version).toBe(1 + PER_INSTANCE + 1);
    expect(after.entries.map((e) => e.entry)).not.toContain(doomed!.entry);
    // The inserts stand where the removed entry stood: after the first entry, before the rest, in the same order.
    expect(after.entries[0]).toEqual(first);
    expect(after.entries.slice(-rest.length)).toEqual(rest);
    const between = after.entries.slice(1, -rest.length);
    expect(between.map((e) => e.id).sort((x, y) => x - y)).toEqual(inserted);
    const madeEntries = inserts.map((result) => (result.applied ? result.entries![0]! : ''));
    expect(between.map((e) => e.entry).sort()).toEqual([...madeEntries].sort());
  }, 60_000);

  it('applies a request sent with one key to both instances at once exactly once; every answer is the same', async () => {
    const { id, people } = await sharedPlaylist('Sent twice', [10, 11, 12], 1);
    const editor = people[1]!;
    const [, anchor] = (await entries(a, editor, id)).entries;
    const request = { base: 1, key: 'flaky-network-7', ops: [{ op: 'insert', songIds: [200], after: anchor!.entry }] };

    const answers = await Promise.all(
      Array.from({ length: 8 }, (_v, i) => send(i % 2 === 0 ? a : b, editor, id, request)),
    );

    expect(refusals(answers)).toEqual([]);
    const results = answers.map((answer) => (JSON.parse(answer.body) as EditsBody).results);
    expect(results[0]).toEqual([{ applied: true, entries: [expect.any(String)] }]);
    for (const result of results) expect(result).toEqual(results[0]);
    const after = await readBoth(people, id);
    expect(after.version).toBe(2);
    expect(after.entries.map((e) => e.id)).toEqual([10, 11, 200, 12]);
    const [first] = results[0]!;
    expect(after.entries[2]!.entry).toBe(first!.applied ? first!.entries![0] : undefined);
  });

  it('merges random inserts, removes, moves and renames sent at once to both; every one sent again changes nothing', async () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const random = seededRandom(seed);
    const originals = Array.from({ length: 40 }, (_v, i) => 1 + i);
    const { id, people } = await sharedPlaylist('Everything at once', originals);
    const base = (await entries(a, people[0]!, id)).entries.map((e) => e.entry);
    const pick = () => base[Math.floor(random() * base.length)]!;
    const anchor = () => (random() < 0.5 ? { after: pick() } : { before: pick() });
    // Songs 41, 42, … one per insert (the demo catalog has 240), so that no two inserts are alike.
    let nextSong = 41;
    const requests = Array.from({ length: 2 * PER_INSTANCE }, (_v, i) => ({
      base: 1,
      key: `random-${i}`,
      ops: Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
        const draw = random();
        if (draw < 0.35) return { op: 'insert', songIds: [nextSong++], ...anchor() };
        if (draw < 0.6) return { op: 'remove', entry: pick() };
        if (draw < 0.9) return { op: 'move', entry: pick(), ...anchor() };
        return { op: 'rename', name: `Renamed by ${i}` };
      }),
    }));
    const sender = (i: number) => people[i % people.length]!;

    const answers = await Promise.all(requests.map((body, i) => send(i % 2 === 0 ? a : b, sender(i), id, body)));

    expect(refusals(answers), `seed ${seed}`).toEqual([]);
    const results = answers.map((answer) => (JSON.parse(answer.body) as EditsBody).results);
    const inserted: string[] = [];
    const removes = new Map<string, number>();
    let changing = 0;
    for (const [i, found] of results.entries()) {
      const ops = requests[i]!.ops;
      expect(found, `seed ${seed}: request ${i}`).toHaveLength(ops.length);
      let changes = false;
      for (const [k, result] of found.entries()) {
        const op = ops[k]!;
        const what = `seed ${seed}: request ${i}, op ${k}`;
        if (op.op === 'insert') {
          expect(result, what).toEqual({ applied: true, entries: [expect.any(String)] });
          if (result.applied) inserted.push(...result.entries!);
          changes = true;
        } else if (op.op === 'remove') {
          if (result.applied) {
            removes.set(op.entry!, (removes.get(op.entry!) ?? 0) + 1);
            changes = true;
          } else expect(result, what).toMatchObject({ reason: 'removed' });
        } else if (op.op === 'move' && !result.applied) expect(result, what).toMatchObject({ reason: 'removed' });
      }
      if (changes) changing++;
    }

    const after = await readBoth(people, id);
    const now = after.entries.map((e) => e.entry);
    // Each entry removed by exactly one request, the others kept; every insert there.
    for (const [entry, times] of removes) expect(times, `seed ${seed}: removes of ${entry}`).toBe(1);
    expect(now.filter((entry) => base.includes(entry)).sort(), `seed ${seed}`).toEqual(
      base.filter((entry) => !removes.has(entry)).sort(),
    );
    expect(now.filter((entry) => !base.includes(entry)).sort(), `seed ${seed}`).toEqual([...inserted].sort());
    // A revision for each request that inserted or removed, and none for one that applied nothing.
    const applying = results.filter((found) => found.some((result) => result.applied)).length;
    expect(after.version, `seed ${seed}`).toBeGreaterThanOrEqual(1 + changing);
    expect(after.version, `seed ${seed}`).toBeLessThanOrEqual(1 + applying);

    // Each request sent again, to the other instance: the same results, and the playlist as it was.
    const again = await Promise.all(requests.map((body, i) => send(i % 2 === 0 ? b : a, sender(i), id, body)));
    expect(refusals(again), `seed ${seed}`).toEqual([]);
    again.forEach((answer, i) => {
      expect((JSON.parse(answer.body) as EditsBody).results, `seed ${seed}: request ${i} again`).toEqual(results[i]);
    });
    expect(await readBoth(people, id), `seed ${seed}`).toEqual(after);
  }, 60_000);
});
