import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';
import { seededRandom } from '../helpers/seeded-random.js';

type Op = Record<string, unknown> & { op: string };

/**
 * A random queue an app could have made offline on a playlist of entries e1..e`length`: inserts (each declaring refs),
 * removes, moves (of entries it had or made, by ref) and renames.
 */
function randomQueue(random: () => number, length: number, ops: number): Op[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const known = Array.from({ length }, (_, i) => `e${i + 1}`);
  const queue: Op[] = [];
  for (let i = 0; i < ops; i++) {
    const kind = pick(['insert', 'insert', 'remove', 'move', 'move', 'rename']);
    const anchor = () =>
      random() < 0.2 ? { after: null } : random() < 0.5 ? { after: pick(known) } : { before: pick(known) };
    if (kind === 'insert' || known.length === 0) {
      const refs = [`r${i}a`, `r${i}b`].slice(0, 1 + Math.floor(random() * 2));
      queue.push({ op: 'insert', songIds: refs.map(() => 1 + Math.floor(random() * 50)), refs, ...anchor() });
      known.push(...refs.map((ref) => `#${ref}`));
    } else if (kind === 'remove') queue.push({ op: 'remove', entry: pick(known) });
    else if (kind === 'move') queue.push({ op: 'move', entry: pick(known), ...anchor() });
    else queue.push({ op: 'rename', name: `Name ${i}` });
  }
  return queue;
}

/** The ops of a later request of a split queue: refs declared by earlier requests become the entries they made. */
function resolved(ops: readonly Op[], made: ReadonlyMap<string, string>): Op[] {
  const named = (value: unknown) =>
    typeof value === 'string' && made.has(value.slice(1)) ? made.get(value.slice(1)) : value;
  return ops.map((op) => {
    const out: Op = { ...op };
    for (const member of ['entry', 'after', 'before']) if (member in out) out[member] = named(out[member]);
    return out;
  });
}

describeEachDatabase('offline queues: refs for new entries, and a queue across requests, on %s', (t) => {
  const entries = async (id: number, security: string) => {
    const answer = await sendAs(t.app, 'GET', `/v3/playlist/${id}/entries`, security);
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json<EntriesBody>();
  };
  const edit = (id: number, security: string, body: unknown) =>
    sendAs(t.app, 'POST', `/v3/playlist/${id}/edits`, security, body);
  const edited = async (id: number, security: string, body: unknown) => {
    const answer = await edit(id, security, body);
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json<EditsBody>();
  };
  const songs = (body: EntriesBody) => body.entries.map((e) => e.id);

  it('lets later ops of a request name the entries its inserts made, by ref', async () => {
    const alice = await t.addUser();
    const made = await createPlaylist(t.app, alice, 'Refs', [1, 2, 3]);
    const before = await entries(made.id, alice);
    const [e1] = before.entries.map((e) => e.entry);
    const answer = await edited(made.id, alice, {
      base: before.version,
      ops: [
        { op: 'insert', songIds: [10, 11], after: e1, refs: ['n1', 'n2'] },
        { op: 'move', entry: '#n2', after: null },
        { op: 'insert', songIds: [12], before: '#n1', refs: ['n3'] },
        { op: 'remove', entry: '#n1' },
        { op: 'remove', entry: '#n1' },
      ],
    });
    expect(answer.results.map((r) => r.applied)).toEqual([true, true, true, true, false]);
    const [n1, n2] = (answer.results[0] as { entries: string[] }).entries;
    expect(songs(answer.playlist)).toEqual([11, 1, 12, 2, 3]);
    expect(answer.playlist.entries[0]!.entry).toBe(n2);
    expect(answer.results[4]).toMatchObject({ reason: 'removed', message: `Entry ${n1!} was removed already.` });
  });

  it('refuses a ref declared twice, used before its insert, or not one per song, naming the op; writes nothing', async () => {
    const alice = await t.addUser();
    const made = await createPlaylist(t.app, alice, 'Bad refs', [1, 2]);
    const { version } = await entries(made.id, alice);
    const cases: [unknown[], RegExp][] = [
      [
        [
          { op: 'insert', songIds: [5], refs: ['n1'] },
          { op: 'insert', songIds: [6], refs: ['n1'] },
        ],
        /^ops\/1\/refs\/0: /,
      ],
      [
        [
          { op: 'move', entry: 'e1', after: '#n1' },
          { op: 'insert', songIds: [6], refs: ['n1'] },
        ],
        /^ops\/0\/after: /,
      ],
      [[{ op: 'insert', songIds: [5, 6], refs: ['n1'] }], /^ops\/0\/refs: /],
      [[{ op: 'insert', songIds: [5], after: '#n1', refs: ['n1'] }], /^ops\/0\/after: /],
    ];
    for (const [ops, message] of cases) {
      const refused = await edit(made.id, alice, { base: version, ops });
      expect(expectError(refused, 400).errormsg).toMatch(message);
    }
    expect((await entries(made.id, alice)).version).toBe(version);
  });

  it('merges a queue sent as several requests naming the ones before in `seen` as the whole queue at once', async () => {
    const alice = await t.addUser();
    const queue = [
      { op: 'rename', name: 'Road trip, day 1' },
      { op: 'insert', songIds: [20], after: 'e1', refs: ['a'] },
      { op: 'rename', name: 'Road trip, day 2' },
      { op: 'move', entry: 'e3', after: null },
    ];
    // The whole queue, as one request.
    const whole = await createPlaylist(t.app, alice, 'Road trip', [1, 2, 3]);
    const base = (await entries(whole.id, alice)).version;
    const once = await edited(whole.id, alice, { base, key: 'all', ops: queue });

    // The same queue in two requests on the same base, the second naming the first in `seen`.
    const split = await createPlaylist(t.app, alice, 'Road trip', [1, 2, 3]);
    const first = await edited(split.id, alice, { base, key: 'q1', ops: queue.slice(0, 2) });
    const second = await edited(split.id, alice, { base, key: 'q2', seen: ['q1'], ops: queue.slice(2) });
    expect([...first.results, ...second.results].map((r) => r.applied)).toEqual(once.results.map((r) => r.applied));
    expect(second.playlist.name).toBe(once.playlist.name);
    expect(songs(second.playlist)).toEqual(songs(once.playlist));

    // Without `seen`, the second request's rename meets the first one's as another's change.
    const blind = await createPlaylist(t.app, alice, 'Road trip', [1, 2, 3]);
    await edited(blind.id, alice, { base, key: 'b1', ops: queue.slice(0, 2) });
    const conflicted = await edited(blind.id, alice, { base, key: 'b2', ops: queue.slice(2) });
    expect(conflicted.results[0]).toMatchObject({ applied: false, reason: 'conflict' });
    expect(conflicted.playlist.name).toBe('Road trip, day 1');
  });

  it('merges random queues split at random places exactly as each whole queue', async () => {
    const alice = await t.addUser();
    const random = seededRandom(20261129);
    for (let round = 0; round < 12; round++) {
      const queue = randomQueue(random, 5, 4 + Math.floor(random() * 8));
      const cuts = [
        ...new Set([1 + Math.floor(random() * (queue.length - 1)), 1 + Math.floor(random() * (queue.length - 1))]),
      ].sort((a, b) => a - b);
      const whole = await createPlaylist(t.app, alice, 'Queue', [1, 2, 3, 4, 5]);
      const split = await createPlaylist(t.app, alice, 'Queue', [1, 2, 3, 4, 5]);
      const base = (await entries(whole.id, alice)).version;
      const once = await edited(whole.id, alice, { base, key: `w${round}`, ops: queue });
      const made = new Map<string, string>();
      const keys: string[] = [];
      const results: EditsBody['results'] = [];
      let last: EditsBody | undefined;
      for (const [from, to] of [0, ...cuts].map((cut, i, all) => [cut, all[i + 1] ?? queue.length] as const)) {
        const part = queue.slice(from, to);
        const key = `s${round}-${from}`;
        last = await edited(split.id, alice, { base, key, seen: keys, ops: resolved(part, made) });
        keys.push(key);
        last.results.forEach((result, k) => {
          const refs = part[k]!.refs as string[] | undefined;
          if (refs !== undefined && result.applied) refs.forEach((ref, j) => made.set(ref, result.entries![j]!));
        });
        results.push(...last.results);
      }
      const context = `round ${round}: ${JSON.stringify({ queue, cuts })}`;
      expect(
        results.map((r) => (r.applied ? 'applied' : r.reason)),
        context,
      ).toEqual(once.results.map((r) => (r.applied ? 'applied' : r.reason)));
      expect(last!.playlist.name, context).toBe(once.playlist.name);
      expect(songs(last!.playlist), context).toEqual(songs(once.playlist));
    }
  });

  it('still refuses a rename over another user’s made after the requests in `seen`', async () => {
    const alice = await t.addUser();
    const name = `carol_${process.pid}_${Date.now()}`;
    const carol = await t.addUser(name);
    const made = await createPlaylist(t.app, alice, 'Shared trip', [1, 2, 3]);
    const shared = await sendAs(t.app, 'PUT', `/v3/playlist/${made.id}/members/${name}`, alice, { role: 'editor' });
    expect(shared.statusCode, shared.body).toBe(200);
    const base = (await entries(made.id, alice)).version;
    await edited(made.id, alice, { base, key: 's1', ops: [{ op: 'rename', name: 'Alice’s name' }] });
    await edited(made.id, carol, { ops: [{ op: 'rename', name: 'Carol’s name' }] });
    const late = await edited(made.id, alice, {
      base,
      key: 's2',
      seen: ['s1'],
      ops: [{ op: 'rename', name: 'Alice’s second name' }],
    });
    expect(late.results[0]).toMatchObject({ applied: false, reason: 'conflict' });
    expect(late.playlist.name).toBe('Carol’s name');
  });

  it('refuses a `seen` key that is not one of the caller’s here, and a key sent again with another `seen`', async () => {
    const alice = await t.addUser();
    const bob = await t.addUser();
    const made = await createPlaylist(t.app, alice, 'Keys', [1, 2]);
    const other = await createPlaylist(t.app, alice, 'Other', [1]);
    const bobs = await createPlaylist(t.app, bob, 'Bob’s', [1]);
    const base = (await entries(made.id, alice)).version;
    await edited(made.id, alice, { base, key: 'k1', ops: [{ op: 'insert', songIds: [4] }] });
    await edited(other.id, alice, { key: 'elsewhere', ops: [{ op: 'insert', songIds: [4] }] });
    await edited(bobs.id, bob, { key: 'bobs', ops: [{ op: 'insert', songIds: [4] }] });
    const version = (await entries(made.id, alice)).version;
    for (const key of ['never', 'elsewhere', 'bobs']) {
      const refused = await edit(made.id, alice, { base, seen: ['k1', key], ops: [{ op: 'insert', songIds: [5] }] });
      expect(expectError(refused, 422).errormsg).toMatch(new RegExp(`^seen/1: "${key}" is not a key`));
    }
    expect((await entries(made.id, alice)).version).toBe(version);

    await edited(made.id, alice, { base, key: 'k2', seen: ['k1'], ops: [{ op: 'insert', songIds: [6] }] });
    const again = await edit(made.id, alice, { base, key: 'k2', ops: [{ op: 'insert', songIds: [6] }] });
    expect(expectError(again, 422).errormsg).toMatch(/another request/);
    const same = await edit(made.id, alice, { base, key: 'k2', seen: ['k1'], ops: [{ op: 'insert', songIds: [6] }] });
    expect(same.statusCode, same.body).toBe(200);
    expect((await entries(made.id, alice)).version).toBe(version + 1);
  });
});
