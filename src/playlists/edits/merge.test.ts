import { describe, expect, it } from 'vitest';
import { UnknownEntry, merge, type EditOp, type Entry, type MergeInput, type MergeOutput } from './merge.js';

/** Builds `formerList` from the entry lists of the versions from the base to the one before current, oldest first. */
function formerListFrom(lists: readonly (readonly number[])[]): (entry: number) => readonly number[] | undefined {
  const newest = new Map<number, number>();
  lists.forEach((list, version) => {
    for (const entry of list) newest.set(entry, version);
  });
  return (entry) => {
    const version = newest.get(entry);
    return version === undefined ? undefined : lists[version];
  };
}

/** Each entry's song is 100 + its id, so a test can tell an entry's song from its id. */
const song = (entry: number): number => 100 + entry;

function playlist(...ids: number[]): readonly Entry[] {
  return Object.freeze(ids.map((entry) => Object.freeze({ entry, songId: song(entry) })));
}

/**
 * A formerList that holds merge to its contract (asked only about entries not in the current list) and is built from
 * the lists of the versions before current, oldest first.
 */
function history(current: readonly Entry[], lists: readonly (readonly number[])[] = []): MergeInput['formerList'] {
  const now = new Set(current.map((e) => e.entry));
  const former = formerListFrom(lists);
  return (entry) => {
    if (now.has(entry)) throw new Error(`formerList was asked about entry ${entry}, which is in the current list.`);
    return former(entry);
  };
}

interface Options {
  readonly name?: string;
  readonly baseName?: string;
  readonly nextEntry?: number;
  readonly versions?: readonly (readonly number[])[];
}

/** Merges onto a playlist of these entry ids; nextEntry defaults to one past the largest id seen in any version. */
function run(ids: readonly number[], ops: readonly EditOp[], options: Options = {}): MergeOutput {
  const current = playlist(...ids);
  const versions = options.versions ?? [];
  return merge({
    current,
    name: options.name ?? 'Mix',
    baseName: options.baseName ?? options.name ?? 'Mix',
    nextEntry: options.nextEntry ?? Math.max(0, ...ids, ...versions.flat()) + 1,
    formerList: history(current, versions),
    ops: Object.freeze(ops),
  });
}

const ids = (output: MergeOutput): number[] => output.entries.map((e) => e.entry);

// The anchorless ops: `& Record<string, never>` leaves no object literal with an `op` assignable, so these are cast.
const atEnd = (op: { op: 'insert'; songIds: number[] } | { op: 'move'; entry: number }): EditOp => op;
const insert = (songIds: number[], anchor?: { after: number | null } | { before: number }): EditOp =>
  anchor === undefined ? atEnd({ op: 'insert', songIds }) : { op: 'insert', songIds, ...anchor };
const move = (entry: number, anchor?: { after: number | null } | { before: number }): EditOp =>
  anchor === undefined ? atEnd({ op: 'move', entry }) : { op: 'move', entry, ...anchor };
const remove = (entry: number): EditOp => ({ op: 'remove', entry });
const rename = (name: string): EditOp => ({ op: 'rename', name });

const applied = { applied: true };

describe('merge: insert', () => {
  it('places new entries after an entry, at the start, before an entry and at the end, with ids from nextEntry', () => {
    const output = run(
      [1, 2, 3],
      [insert([7], { after: 1 }), insert([8, 9], { after: null }), insert([10], { before: 3 }), insert([11])],
    );
    expect(ids(output)).toEqual([5, 6, 1, 4, 2, 7, 3, 8]);
    expect(output.entries.filter((e) => e.entry > 3).map((e) => e.songId)).toEqual([8, 9, 7, 10, 11]);
    expect(output.results).toEqual([
      { applied: true, entries: [4] },
      { applied: true, entries: [5, 6] },
      { applied: true, entries: [7] },
      { applied: true, entries: [8] },
    ]);
    expect(output.nextEntry).toBe(9);
    expect(output.entries.filter((e) => e.entry <= 3)).toEqual(playlist(1, 2, 3));
  });

  it("lands two people's concurrent inserts after the same anchor, the later one right after the anchor", () => {
    // Both edited the base [1, 2, 3]; Alice's request was merged first.
    const alice = run([1, 2, 3], [insert([50], { after: 1 })]);
    expect(ids(alice)).toEqual([1, 4, 2, 3]);
    const bob = run(ids(alice), [insert([60], { after: 1 })], { versions: [[1, 2, 3]] });
    expect(ids(bob)).toEqual([1, 5, 4, 2, 3]);
    expect(bob.results).toEqual([{ applied: true, entries: [5] }]);
  });

  it('keeps songs repeated within an insert as entries of their own', () => {
    const output = run([1], [insert([7, 7, 7])]);
    expect(output.entries).toEqual([
      ...playlist(1),
      { entry: 2, songId: 7 },
      { entry: 3, songId: 7 },
      { entry: 4, songId: 7 },
    ]);
  });

  it('places a long insert (more songs than are spliced in at once) in one piece', () => {
    const songIds = Array.from({ length: 2500 }, (_, i) => i);
    const output = run([1, 2, 3], [insert(songIds, { before: 2 }), insert([9], { before: 2 })]);
    expect(ids(output)).toEqual([1, ...songIds.map((i) => 4 + i), 2504, 2, 3]);
    expect(output.entries[2500]).toEqual({ entry: 2503, songId: 2499 });
  });

  it('an insert of no songs applies, makes no entries and takes no id', () => {
    const output = run([1, 2], [insert([], { after: 1 })]);
    expect(output).toMatchObject({ nextEntry: 3, results: [{ applied: true, entries: [] }] });
    expect(ids(output)).toEqual([1, 2]);
  });
});

describe('merge: an anchor removed since the base', () => {
  it('an insert after an entry someone else removed lands where it stood', () => {
    // Base [1, 2, 3, 4]; someone removed 2.
    const output = run([1, 3, 4], [insert([9], { after: 2 })], { versions: [[1, 2, 3, 4]] });
    expect(ids(output)).toEqual([1, 5, 3, 4]);
  });

  it('after a removed entry: after the nearest entry before it that still stands, the start if none', () => {
    const versions = [
      [1, 2, 3, 4, 5],
      [1, 3, 4, 5],
      [3, 4, 5],
    ];
    expect(ids(run([4, 5], [insert([9], { after: 3 })], { versions }))).toEqual([6, 4, 5]);
    expect(ids(run([1, 5], [insert([9], { after: 4 })], { versions: [[1, 2, 3, 4, 5]] }))).toEqual([1, 6, 5]);
  });

  it('before a removed entry: before the nearest entry after it that still stands, the end if none', () => {
    const versions = [[1, 2, 3, 4, 5]];
    expect(ids(run([1, 4, 5], [insert([9], { before: 2 })], { versions }))).toEqual([1, 6, 4, 5]);
    expect(ids(run([1, 2], [insert([9], { before: 4 })], { versions }))).toEqual([1, 2, 6]);
  });

  it('reads where the entry stood last, from the newest version that held it', () => {
    // 3 was moved to the front, then removed: it stood before 1.
    const versions = [
      [1, 2, 3],
      [3, 1, 2],
    ];
    expect(ids(run([1, 2], [insert([9], { after: 3 })], { versions }))).toEqual([4, 1, 2]);
    expect(ids(run([1, 2], [insert([9], { before: 3 })], { versions }))).toEqual([4, 1, 2]);
  });

  it('with no record of where it stood (formerList undefined), both after and before it mean the end', () => {
    // Entry 2 was removed before the base: no version since holds it.
    expect(ids(run([1, 3], [insert([9], { after: 2 })], { versions: [[1, 3]] }))).toEqual([1, 3, 4]);
    expect(ids(run([1, 3], [insert([9], { before: 2 })], { versions: [[1, 3]] }))).toEqual([1, 3, 4]);
  });

  it('an anchor an earlier op of the request removed places the op where it stood, without asking formerList', () => {
    expect(ids(run([1, 2, 3, 4], [remove(2), insert([9], { after: 2 })]))).toEqual([1, 5, 3, 4]);
    expect(ids(run([1, 2, 3, 4], [remove(3), insert([9], { before: 3 })]))).toEqual([1, 2, 5, 4]);
    // Its neighbours removed as well: the walk goes on through them.
    expect(ids(run([1, 2, 3, 4], [remove(2), remove(1), insert([9], { after: 2 })]))).toEqual([5, 3, 4]);
    expect(ids(run([1, 2, 3, 4], [remove(3), remove(4), insert([9], { before: 3 })]))).toEqual([1, 2, 5]);
  });

  it('a removed anchor whose former neighbour an earlier op removed walks on past it', () => {
    const versions = [[1, 2, 3, 4]];
    // 3 removed by someone else; 2, which stood before it, by this request.
    expect(ids(run([1, 2, 4], [remove(2), insert([9], { after: 3 })], { versions }))).toEqual([1, 5, 4]);
  });
});

describe('merge: remove', () => {
  it('removes an entry and reports it applied', () => {
    const output = run([1, 2, 3], [remove(2)]);
    expect(ids(output)).toEqual([1, 3]);
    expect(output.results).toEqual([applied]);
  });

  it('an entry removed already is not applied ("removed"): the current state wins', () => {
    const output = run([1, 3], [remove(12), remove(1)], { nextEntry: 13, versions: [[1, 3, 12]] });
    expect(output.results).toEqual([
      { applied: false, reason: 'removed', message: 'Entry e12 was removed already.' },
      applied,
    ]);
    expect(ids(output)).toEqual([3]);
  });

  it('the second remove of one entry in a request is not applied', () => {
    expect(run([1, 2], [remove(1), remove(1)]).results).toEqual([
      applied,
      { applied: false, reason: 'removed', message: 'Entry e1 was removed already.' },
    ]);
  });
});

describe('merge: move', () => {
  it('moves after an entry, to the start, before an entry and to the end', () => {
    expect(ids(run([1, 2, 3, 4], [move(1, { after: 3 })]))).toEqual([2, 3, 1, 4]);
    expect(ids(run([1, 2, 3, 4], [move(3, { after: null })]))).toEqual([3, 1, 2, 4]);
    expect(ids(run([1, 2, 3, 4], [move(4, { before: 2 })]))).toEqual([1, 4, 2, 3]);
    expect(ids(run([1, 2, 3, 4], [move(1)]))).toEqual([2, 3, 4, 1]);
    const output = run([1, 2, 3, 4], [move(2, { before: 1 })]);
    expect(output.results).toEqual([applied]);
    expect(output.entries).toEqual(playlist(2, 1, 3, 4));
    expect(output.nextEntry).toBe(5);
  });

  it('moving after itself or before itself leaves it where it was', () => {
    expect(run([1, 2, 3], [move(2, { after: 2 })])).toMatchObject({ entries: playlist(1, 2, 3), results: [applied] });
    expect(ids(run([1, 2, 3], [move(2, { before: 2 })]))).toEqual([1, 2, 3]);
    expect(ids(run([1, 2, 3], [move(1, { after: 1 })]))).toEqual([1, 2, 3]);
    expect(ids(run([1, 2, 3], [move(3, { before: 3 })]))).toEqual([1, 2, 3]);
  });

  it('a move of a removed entry is not applied ("removed")', () => {
    const output = run([1, 3], [move(2, { after: 3 })], { versions: [[1, 2, 3]] });
    expect(output.results).toEqual([
      { applied: false, reason: 'removed', message: 'Entry e2 was removed; it cannot be moved.' },
    ]);
    expect(ids(output)).toEqual([1, 3]);
  });

  it("of two moves of one entry the later wins: the request's move applies over one made meanwhile", () => {
    // Someone moved 1 to the end meanwhile; this request, made against the base, moves it after 2.
    expect(ids(run([2, 3, 1], [move(1, { after: 2 })], { versions: [[1, 2, 3]] }))).toEqual([2, 1, 3]);
  });

  it('passes over the entry moved when walking where a removed anchor stood: it is out while the anchor is read', () => {
    // Someone moved 2 to the front and removed 3; 3 stood after 1 and 2.
    expect(ids(run([2, 1], [move(2, { after: 3 })], { versions: [[1, 2, 3]] }))).toEqual([1, 2]);
  });

  it('moves next to an anchor removed since the base, where it stood', () => {
    const versions = [[1, 2, 3, 4]];
    expect(ids(run([1, 3, 4], [move(4, { after: 2 })], { versions }))).toEqual([1, 4, 3]);
    expect(ids(run([1, 3, 4], [move(1, { before: 2 })], { versions }))).toEqual([1, 3, 4]);
  });
});

describe('merge: rename', () => {
  it('applies when the name is still the base one', () => {
    expect(run([1], [rename('Road trip')], { name: 'Mix' })).toMatchObject({ name: 'Road trip', results: [applied] });
  });

  it('is a conflict when the name was changed meanwhile to another', () => {
    const output = run([1], [rename('Road trip')], { name: 'Summer', baseName: 'Mix' });
    expect(output.name).toBe('Summer');
    expect(output.results).toEqual([
      { applied: false, reason: 'conflict', message: 'The name was changed to "Summer" meanwhile.' },
    ]);
  });

  it('is no conflict when the name was changed meanwhile to the one asked for', () => {
    expect(run([1], [rename('Road trip')], { name: 'Road trip', baseName: 'Mix' })).toMatchObject({
      name: 'Road trip',
      results: [applied],
    });
  });

  it("the request's own rename is the base of its next one", () => {
    expect(run([1], [rename('B'), rename('C')], { name: 'A' })).toMatchObject({
      name: 'C',
      results: [applied, applied],
    });
  });
});

describe('merge: ops of one request', () => {
  it('an op may refer to an entry an earlier op of the request inserted', () => {
    const output = run(
      [1, 2],
      [
        insert([7, 8], { after: 1 }),
        insert([9], { after: 4 }),
        move(3, { after: null }),
        remove(4),
        insert([6], { before: 5 }),
      ],
    );
    // 3: song 7, 4: song 8 (removed), 5: song 9, 6: song 6
    expect(output.entries).toEqual([
      { entry: 3, songId: 7 },
      { entry: 1, songId: song(1) },
      { entry: 6, songId: 6 },
      { entry: 5, songId: 9 },
      { entry: 2, songId: song(2) },
    ]);
    expect(output.results).toEqual([
      { applied: true, entries: [3, 4] },
      { applied: true, entries: [5] },
      applied,
      applied,
      { applied: true, entries: [6] },
    ]);
    expect(output.nextEntry).toBe(7);
  });

  it('leaves its input as it was', () => {
    const current = playlist(1, 2, 3);
    const ops = [insert([9], { after: 1 }), remove(2), move(3, { after: null })];
    merge({ current, name: 'Mix', baseName: 'Mix', nextEntry: 4, formerList: () => undefined, ops });
    expect(current).toEqual(playlist(1, 2, 3));
    expect(ops).toEqual([insert([9], { after: 1 }), remove(2), move(3, { after: null })]);
  });
});

describe('merge: UnknownEntry', () => {
  /** The UnknownEntry the merge throws; fails the test otherwise. */
  function unknown(ids_: readonly number[], ops: readonly EditOp[], nextEntry?: number): UnknownEntry {
    try {
      run(ids_, ops, nextEntry === undefined ? {} : { nextEntry });
    } catch (error) {
      if (error instanceof UnknownEntry) return error;
      throw error;
    }
    throw new Error('The merge succeeded where it should have thrown UnknownEntry.');
  }

  it('names the op and the member for an entry id at or past nextEntry', () => {
    expect(unknown([1, 2], [remove(1), remove(3)])).toMatchObject({ index: 1, path: 'ops/1/entry', entry: 3 });
    expect(unknown([1, 2], [insert([5], { after: 9 })])).toMatchObject({ index: 0, path: 'ops/0/after' });
    expect(unknown([1, 2], [rename('x'), rename('y'), rename('z'), move(1, { before: 3 })])).toMatchObject({
      index: 3,
      path: 'ops/3/before',
    });
    expect(unknown([1, 2], [move(7, { after: 1 })]).path).toBe('ops/0/entry');
    expect(unknown([1, 2], [move(7, { after: 1 })]).message).toMatch(/ops\/0\/entry.*never had entry 7/);
  });

  it('counts nextEntry at the time of the op: an insert cannot anchor on its own new entries', () => {
    expect(unknown([1, 2], [insert([5], { after: 3 })]).path).toBe('ops/0/after');
    expect(unknown([1, 2], [insert([5]), remove(4)]).path).toBe('ops/1/entry');
  });

  it('throws for ids below 1 and for ids that are not integers', () => {
    expect(unknown([1, 2], [remove(0)]).path).toBe('ops/0/entry');
    expect(unknown([1, 2], [insert([5], { before: -1 })]).path).toBe('ops/0/before');
    expect(unknown([1, 2], [move(1, { after: 1.5 })]).path).toBe('ops/0/after');
  });

  it('throws for an unknown anchor even when the entry moved was removed', () => {
    expect(unknown([1], [move(2, { after: 8 })], 3).path).toBe('ops/0/after');
  });

  it('an id removed before is known, not a reason to throw', () => {
    expect(run([1], [remove(2)], { nextEntry: 3 }).results[0]).toMatchObject({ applied: false, reason: 'removed' });
  });
});

/** A small seeded generator (mulberry32), so that a failure repeats. */
function random(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}

describe('merge: random ops', () => {
  it('every insert lands exactly once, no entry id repeats, and only absent entries are reported removed', () => {
    let merged = 0;
    for (let seed = 1; seed <= 300; seed += 1) {
      const next = random(seed);
      // A history: the base (some entries gone before it), a few versions with removals and inserts, then the current one.
      let nextEntry = 1;
      let list: number[] = Array.from({ length: next(12) }, () => nextEntry++).filter(() => next(5) > 0);
      const versions: number[][] = [];
      for (let v = next(4); v > 0; v -= 1) {
        versions.push(list);
        list = list.filter(() => next(4) > 0);
        for (let n = next(3); n > 0; n -= 1) list.splice(next(list.length + 1), 0, nextEntry++);
      }
      let unknownDrawn = false;
      /** An anchor on an id below `limit` (the request's nextEntry then), now and then on `limit` itself. */
      const anchor = (limit: number): { after: number | null } | { before: number } | undefined => {
        const kind = next(4);
        const id = next(30) === 0 || limit === 1 ? limit : 1 + next(limit - 1);
        if (kind === 0) return undefined;
        if (kind === 1 && next(5) === 0) return { after: null };
        unknownDrawn ||= id >= limit;
        return kind === 1 ? { after: id } : { before: id };
      };
      // Ops whose ids may be standing, removed, made by an earlier op, or (rarely) never had.
      let expected = nextEntry;
      const ops: EditOp[] = [];
      for (let n = next(15); n > 0; n -= 1) {
        const id = 1 + next(expected - 1);
        const kind = expected === 1 ? 0 : next(4);
        if (kind === 0) {
          const songIds = Array.from({ length: next(4) }, () => next(1000));
          ops.push(insert(songIds, anchor(expected)));
          expected += songIds.length;
        } else ops.push(kind === 1 ? remove(id) : kind === 2 ? move(id, anchor(expected)) : rename(`n${next(3)}`));
      }

      let output: MergeOutput;
      try {
        output = run(list, ops, { nextEntry, versions });
        merged += 1;
      } catch (error) {
        // Only an anchor drawn on an id not made by then may throw.
        expect(error, `seed ${seed}`).toBeInstanceOf(UnknownEntry);
        expect(unknownDrawn, `seed ${seed}`).toBe(true);
        continue;
      }
      const outIds = ids(output);
      expect(new Set(outIds).size, `seed ${seed}`).toBe(outIds.length);

      // A model of which entries stand, op by op.
      const standing = new Set(list);
      output.results.forEach((result, i) => {
        const op = ops[i]!;
        if (op.op === 'insert') {
          expect(result.applied && result.entries?.length, `seed ${seed}`).toBe(op.songIds.length);
          if (result.applied) for (const e of result.entries ?? []) standing.add(e);
        } else if (op.op === 'remove' || op.op === 'move') {
          expect(result.applied, `seed ${seed} op ${i}`).toBe(standing.has(op.entry as number));
          if (op.op === 'remove') standing.delete(op.entry as number);
        }
      });
      expect(new Set(outIds), `seed ${seed}`).toEqual(standing);
      const inserted = output.results.flatMap((r) => (r.applied ? (r.entries ?? []) : []));
      expect(inserted.filter((e) => outIds.includes(e)).length + removedInserts(ops, inserted)).toBe(inserted.length);
      expect(output.nextEntry).toBe(nextEntry + inserted.length);
      for (const e of output.entries) if (e.entry < nextEntry) expect(e.songId).toBe(song(e.entry));
    }
    // Most requests merge rather than throw, so the checks above ran on them.
    expect(merged).toBeGreaterThan(250);
  });
});

/** How many of the inserted entries a later remove of the request took out again. */
function removedInserts(ops: readonly EditOp[], inserted: readonly number[]): number {
  const made = new Set(inserted);
  return new Set(ops.flatMap((op) => (op.op === 'remove' && made.has(op.entry as number) ? [op.entry as number] : [])))
    .size;
}
