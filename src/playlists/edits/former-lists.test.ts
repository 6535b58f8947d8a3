import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../test/helpers/seeded-random.js';
import { formerLists, merge, type EditOp, type Entry, type EntryRevision, type MergeInput } from './merge.js';

/**
 * The lists `formerList` answered from before it was replayed in blocks: the base's list rebuilt as `versionContent`
 * does, then, for each revision after it that removed entries (a splice's range, or what a whole copy left out), a
 * copy of the whole list before it, for each entry removed.
 */
function copiedLists(revisions: readonly EntryRevision[], base: number): Map<number, readonly number[]> {
  const lists = new Map<number, readonly number[]>();
  let list: number[] | undefined;
  const held = (removed: readonly number[]) => {
    const copy = [...list!];
    for (const entry of removed) lists.set(entry, copy);
  };
  for (const revision of revisions) {
    const after = revision.version > base;
    if (revision.entries === undefined) {
      list = undefined;
      continue;
    }
    const entries = revision.entries === '' ? [] : revision.entries.split(',').map(Number);
    if (revision.at === undefined) {
      if (list !== undefined && after) {
        const kept = new Set(entries);
        held(list.filter((entry) => !kept.has(entry)));
      }
      list = entries;
      continue;
    }
    if (list === undefined) continue;
    if (after && revision.deleted > 0) held(list.slice(revision.at, revision.at + revision.deleted));
    list.splice(revision.at, revision.deleted, ...entries);
  }
  return lists;
}

/** A revision as the history keeps it: its entries' ids comma-separated (undefined: not recorded). */
const revision = (version: number, at: number | undefined, deleted: number, entries?: readonly number[]) => ({
  version,
  at,
  deleted,
  entries: entries?.join(','),
});

/** A history: revisions from a whole copy on, the base among them, and the list they leave. */
interface History {
  readonly revisions: EntryRevision[];
  readonly base: number;
  readonly current: number[];
  readonly nextEntry: number;
}

/**
 * A random history: a whole copy, then splices (removes, inserts, moves as a range taken out and put back in another
 * order), whole copies (some bringing removed entries back, as a restore does) and, now and then, a revision of
 * unknown entries; the list is `length` long or so.
 */
function randomHistory(random: () => number, length: number, count: number): History {
  const pick = (n: number) => Math.floor(random() * n);
  let next = 1;
  const fresh = (n: number) => Array.from({ length: n }, () => next++);
  let list = fresh(length);
  const gone: number[] = [];
  const revisions: EntryRevision[] = [revision(1, undefined, 0, list)];
  for (let version = 2; version <= count; version++) {
    const kind = random();
    if (kind < 0.03) {
      revisions.push(revision(version, undefined, 0));
      // What a whole copy or a splice of unknown entries leaves is not known: the next whole copy says.
      continue;
    }
    if (kind < 0.12) {
      const back = gone.splice(0, pick(4));
      list = [...list.filter(() => random() < 0.9), ...back, ...fresh(pick(3))].sort(() => random() - 0.5);
      revisions.push(revision(version, undefined, 0, list));
      continue;
    }
    const at = pick(list.length + 1);
    const deleted = Math.min(list.length - at, pick(kind < 0.5 ? 3 : 30));
    const taken = list.slice(at, at + deleted);
    // Some of what is taken out is put back (a move within the range), the rest removed; some new entries.
    const back = taken.filter(() => random() < 0.4).sort(() => random() - 0.5);
    for (const entry of taken) if (!back.includes(entry)) gone.push(entry);
    const inserted = [...back, ...fresh(pick(3))].sort(() => random() - 0.5);
    list.splice(at, deleted, ...inserted);
    revisions.push(revision(version, at, deleted, inserted));
  }
  // Every revision after an unknown one and before the next whole copy leaves the list unknown; the current list is
  // what the revisions say all the same (the playlist's own rows), so it is replayed here ignoring that.
  return { revisions, base: 1 + pick(Math.max(1, count - 1)), current: list, nextEntry: next };
}

/** Random ops on the playlist: anchors on current entries, on removed ones, and on none; removes and moves. */
function randomOps(random: () => number, history: History): EditOp[] {
  const pick = (n: number) => Math.floor(random() * n);
  const any = () => 1 + pick(history.nextEntry - 1);
  const standing = () => history.current[pick(history.current.length)] ?? any();
  const anchor = (): { after: number | null } | { before: number } | Record<string, never> => {
    const choice = random();
    if (choice < 0.1) return {};
    if (choice < 0.15) return { after: null };
    const entry = random() < 0.6 ? any() : standing();
    return random() < 0.5 ? { after: entry } : { before: entry };
  };
  return Array.from({ length: 1 + pick(12) }, (): EditOp => {
    const choice = random();
    if (choice < 0.45) return { op: 'insert', songIds: [1 + pick(5)], ...anchor() };
    if (choice < 0.7) return { op: 'remove', entry: random() < 0.7 ? standing() : any() };
    return { op: 'move', entry: random() < 0.8 ? standing() : any(), ...anchor() };
  });
}

/** The merge as the service makes it: first asking, then with the lists `formerLists` answers for what it asked. */
function mergeInTwo(input: Omit<MergeInput, 'formerList'>, history: History) {
  const asked = new Set<number>();
  const first = merge({ ...input, formerList: (entry) => (asked.add(entry), undefined) });
  const touched = new Set<number>();
  for (const op of input.ops) if (op.op === 'remove' || op.op === 'move') touched.add(op.entry as number);
  const lists = formerLists({
    revisions: history.revisions,
    base: history.base,
    asked,
    current: new Set(input.current.map((e) => e.entry)),
    touched,
  });
  return { first, second: merge({ ...input, formerList: (entry) => lists.get(entry) }), lists, asked };
}

describe('formerLists', () => {
  it('places every op as the copied lists did, on random histories of short and long lists', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const random = seededRandom(seed);
      const length = [0, 3, 20, 300, 1300][seed % 5]!;
      const history = randomHistory(random, length, 2 + Math.floor(random() * 120));
      const copied = copiedLists(history.revisions, history.base);
      for (let round = 0; round < 5; round++) {
        const input = {
          current: history.current.map((entry): Entry => ({ entry, songId: 1 })),
          name: 'Mix',
          baseName: 'Mix',
          nextEntry: history.nextEntry,
          ops: randomOps(random, history),
        };
        const expected = merge({ ...input, formerList: (entry) => copied.get(entry) });
        const { first, second, lists, asked } = mergeInTwo(input, history);
        expect(second, `seed ${seed}, round ${round}`).toEqual(expected);
        // What applies and how many songs it leaves is known before the history is read.
        expect(first.results).toEqual(expected.results);
        expect(first.entries.length).toBe(expected.entries.length);
        // An answer for an entry asked about, and only for those the copied lists had one for.
        for (const entry of lists.keys()) expect(asked.has(entry) && copied.has(entry)).toBe(true);
      }
    }
  });

  it('answers the entry with its current neighbours then, up to one no op takes out, on each side', () => {
    // 1 2 3 4 5 6 7, then 4 removed, then 3 and 5 removed, then 8 inserted where 4 stood.
    const revisions = [revision(1, undefined, 0, [1, 2, 3, 4, 5, 6, 7]), revision(2, 3, 1, []), revision(3, 2, 2, [8])];
    const lists = formerLists({
      revisions,
      base: 1,
      asked: new Set([4, 5]),
      current: new Set([1, 2, 8, 6, 7]),
      touched: new Set([2]),
    });
    expect(lists.get(4)).toEqual([1, 2, 4, 6]);
    expect(lists.get(5)).toEqual([1, 2, 5, 6]);
    expect(lists.has(3)).toBe(false);
  });

  it('knows nothing of entries removed before the base, or while the entries were not recorded', () => {
    const revisions = [
      revision(1, undefined, 0, [1, 2, 3]),
      revision(2, 0, 1, []),
      revision(3, undefined, 0),
      revision(4, 0, 1, []),
      revision(5, undefined, 0, [3, 4]),
    ];
    const all = { asked: new Set([1, 2]), current: new Set([3, 4]), touched: new Set<number>() };
    expect(formerLists({ revisions, base: 2, ...all }).size).toBe(0);
    expect([...formerLists({ revisions, base: 1, ...all })]).toEqual([[1, [1, 3]]]);
  });

  it('reads what a whole copy left out as removed by it, an empty one too', () => {
    const revisions = [
      revision(1, undefined, 0, [1, 2, 3]),
      revision(2, undefined, 0, [3, 1]),
      revision(3, undefined, 0, []),
      revision(4, undefined, 0, [4, 5]),
    ];
    const lists = formerLists({
      revisions,
      base: 1,
      asked: new Set([1, 2]),
      current: new Set([3, 4, 5]),
      touched: new Set<number>(),
    });
    expect([...lists].sort()).toEqual([
      [1, [3, 1]],
      [2, [2, 3]],
    ]);
  });
});
