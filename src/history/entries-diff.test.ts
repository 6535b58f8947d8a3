import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryNumber } from '../playlists/edits/entry-names.js';
import { merge, type EditOp } from '../playlists/edits/merge.js';
import { diffEntries, longestIncreasing, type EntriesVersion, type EntryDiffOp } from './entries-diff.js';

/** Each entry's song is 100 + its id unless given, so a test can tell an entry's song from its id. */
const version = (name: string, entries: readonly number[], songs = entries.map((e) => 100 + e)): EntriesVersion => ({
  name,
  entries,
  songs,
});

const id = (name: string): number => entryNumber(name)!;

/**
 * The ops applied in order to `from` by the merged edit's own merge (merge.ts), read from their JSON text as
 * `POST …/edits` would, on a playlist at `from` with no one else's edits: each must apply. The entries each insert
 * makes are then named as the op says they are in the second version.
 */
function apply(from: EntriesVersion, ops: readonly EntryDiffOp[]): EntriesVersion {
  const sent = JSON.parse(JSON.stringify(ops)) as EntryDiffOp[];
  const editOps = sent.map((op): EditOp => {
    switch (op.op) {
      case 'insert':
        return { op: 'insert', songIds: op.songIds, after: op.after === null ? null : id(op.after) };
      case 'remove':
        return { op: 'remove', entry: id(op.entry) };
      case 'move':
        return { op: 'move', entry: id(op.entry), after: op.after === null ? null : id(op.after) };
      case 'rename':
        return op;
    }
  });
  const nextEntry =
    Math.max(0, ...from.entries, ...sent.flatMap((op) => (op.op === 'insert' ? op.entries.map(id) : []))) + 1;
  const merged = merge({
    current: from.entries.map((entry, i) => ({ entry, songId: from.songs[i]! })),
    name: from.name,
    baseName: from.name,
    nextEntry,
    formerList: () => undefined,
    ops: editOps,
  });
  const named = new Map<number, number>();
  merged.results.forEach((result, i) => {
    expect(result.applied, JSON.stringify(result)).toBe(true);
    const op = sent[i]!;
    if (op.op !== 'insert' || !result.applied) return;
    expect(result.entries).toHaveLength(op.entries.length);
    result.entries!.forEach((made, k) => named.set(made, id(op.entries[k]!)));
  });
  return {
    name: merged.name,
    entries: merged.entries.map((e) => named.get(e.entry) ?? e.entry),
    songs: merged.entries.map((e) => e.songId),
  };
}

/** The length of a longest increasing subsequence, by the textbook quadratic table. */
function lisLength(values: readonly number[]): number {
  const best = values.map(() => 1);
  values.forEach((value, i) => {
    for (let j = 0; j < i; j++) if (values[j]! < value) best[i] = Math.max(best[i]!, best[j]! + 1);
  });
  return Math.max(0, ...best);
}

/** The diff, checked to turn `from` into `to` with as few ops as entries removed, inserted runs and moves need. */
function diff(from: EntriesVersion, to: EntriesVersion): EntryDiffOp[] {
  const ops = diffEntries(from, to);
  expect(apply(from, ops)).toEqual(to);
  const was = new Map(from.entries.map((entry, i) => [entry, i]));
  const common = to.entries.filter((entry, j) => was.has(entry) && from.songs[was.get(entry)!] === to.songs[j]);
  const kept = new Set(common);
  const count = (op: EntryDiffOp['op']) => ops.filter((o) => o.op === op).length;
  expect(count('rename')).toBe(from.name === to.name ? 0 : 1);
  expect(count('remove')).toBe(from.entries.filter((entry) => !kept.has(entry)).length);
  expect(count('move')).toBe(common.length - lisLength(common.map((entry) => was.get(entry)!)));
  const runs = to.entries.filter((entry, j) => !kept.has(entry) && (j === 0 || kept.has(to.entries[j - 1]!)));
  expect(count('insert')).toBe(runs.length);
  return ops;
}

describe('diffEntries', () => {
  it('answers [] for the same version', () => {
    expect(diff(version('Mix', [1, 2, 3]), version('Mix', [1, 2, 3]))).toEqual([]);
    expect(diff(version('Mix', []), version('Mix', []))).toEqual([]);
  });

  it('renames with one rename, first', () => {
    expect(diff(version('Mix', [1]), version('Road trip', [1, 4]))).toEqual([
      { op: 'rename', name: 'Road trip' },
      { op: 'insert', songIds: [104], after: 'e1', entries: ['e4'] },
    ]);
  });

  it('inserts runs of new entries after the entry before them, or at the start', () => {
    expect(diff(version('Mix', [1, 2, 3]), version('Mix', [7, 8, 1, 2, 9, 3, 10, 11]))).toEqual([
      { op: 'insert', songIds: [107, 108], after: null, entries: ['e7', 'e8'] },
      { op: 'insert', songIds: [109], after: 'e2', entries: ['e9'] },
      { op: 'insert', songIds: [110, 111], after: 'e3', entries: ['e10', 'e11'] },
    ]);
  });

  it('removes the entries the second version lacks, in the first one order', () => {
    expect(diff(version('Mix', [1, 2, 3, 4]), version('Mix', [2]))).toEqual([
      { op: 'remove', entry: 'e1' },
      { op: 'remove', entry: 'e3' },
      { op: 'remove', entry: 'e4' },
    ]);
  });

  it('moves only the entries out of a longest run in order, each after the one before it', () => {
    expect(diff(version('Mix', [1, 2, 3, 4, 5]), version('Mix', [2, 3, 4, 1, 5]))).toEqual([
      { op: 'move', entry: 'e1', after: 'e4' },
    ]);
    expect(diff(version('Mix', [1, 2, 3]), version('Mix', [3, 2, 1]))).toEqual([
      { op: 'move', entry: 'e3', after: null },
      { op: 'move', entry: 'e2', after: 'e3' },
    ]);
  });

  it('keeps repeats of a song apart by their entries', () => {
    const from = version('Mix', [1, 2, 3], [7, 7, 7]);
    expect(diff(from, version('Mix', [3, 1, 4], [7, 7, 7]))).toEqual([
      { op: 'remove', entry: 'e2' },
      { op: 'move', entry: 'e3', after: null },
      { op: 'insert', songIds: [7], after: 'e1', entries: ['e4'] },
    ]);
  });

  it('takes an entry found with another song as removed and inserted anew', () => {
    expect(diff(version('Mix', [1, 2], [5, 6]), version('Mix', [1, 2], [5, 9]))).toEqual([
      { op: 'remove', entry: 'e2' },
      { op: 'insert', songIds: [9], after: 'e1', entries: ['e2'] },
    ]);
  });

  it('finds a longest increasing subsequence', () => {
    const members = (values: number[]) => values.filter((_, i) => longestIncreasing(values)[i] === 1);
    expect(members([])).toEqual([]);
    expect(members([3, 1, 2, 5, 4, 6])).toEqual([1, 2, 4, 6]);
    expect(members([5, 4, 3])).toHaveLength(1);
  });

  it('diffs the longest playlists in a few milliseconds', () => {
    const entries = Array.from({ length: 100_000 }, (_, i) => i + 1);
    const to = entries.toSpliced(50_000, 1).toSpliced(10, 0, 200_000).toReversed();
    const started = performance.now();
    const ops = diffEntries(version('Mix', entries), version('Mix', to));
    expect(performance.now() - started).toBeLessThan(2000);
    expect(ops.filter((op) => op.op === 'move')).toHaveLength(100_000 - 2);
    expect(ops.filter((op) => op.op === 'remove')).toEqual([{ op: 'remove', entry: 'e50001' }]);
    expect(ops.filter((op) => op.op === 'insert')).toHaveLength(1);
  });

  it('turns any version into any other, with the fewest moves', () => {
    // Entries as a history leaves them: the second version keeps some of the first's, in any order, and has new ones
    // (ids past the first's, or below them, as a restore of an older version gives back); few songs, so they repeat.
    const song = fc.integer({ min: 1, max: 5 });
    const pair = fc
      .uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 40 })
      .chain((first) =>
        fc.tuple(
          fc.constant(first),
          fc.array(song, { minLength: first.length, maxLength: first.length }),
          fc.subarray(first),
          fc.uniqueArray(fc.integer({ min: 1, max: 120 }), { maxLength: 20 }),
          fc.array(fc.nat(), { maxLength: 80 }),
          fc.array(song, { minLength: 20, maxLength: 20 }),
          fc.boolean(),
        ),
      )
      .map(([first, songs, keptEntries, fresh, order, freshSongs, shuffled]) => {
        const from = version('Mix', first, songs);
        const songOf = new Map(first.map((entry, i) => [entry, songs[i]!]));
        const added = fresh.filter((entry) => !songOf.has(entry));
        let second = keptEntries;
        // Shuffled a little (a few moves) or a lot.
        for (let i = 0; i < order.length && (shuffled || i < 3); i += 2) {
          if (second.length === 0) break;
          const at = order[i]! % second.length;
          const to = (order[i + 1] ?? 0) % second.length;
          second = second.toSpliced(at, 1).toSpliced(to, 0, second[at]!);
        }
        added.forEach((entry, k) => {
          second = second.toSpliced((order[k] ?? k) % (second.length + 1), 0, entry);
        });
        const freshSong = new Map(added.map((entry, k) => [entry, freshSongs[k]!]));
        return [
          from,
          version(
            'Mix',
            second,
            second.map((entry) => songOf.get(entry) ?? freshSong.get(entry)!),
          ),
        ] as const;
      });
    fc.assert(
      fc.property(pair, fc.boolean(), ([from, to], rename) => {
        diff(from, rename ? { ...to, name: 'New' } : to);
        diff(to, from);
      }),
      { numRuns: 500 },
    );
  });
});
