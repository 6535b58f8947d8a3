import { describe, expect, it } from 'vitest';
import type { ApiResult } from './edits.service.js';
import { entryName } from './entry-names.js';
import { keptResults, readResults, requestDigest } from './edit-keys.repository.js';
import { merge, UnknownEntry, type EditOp } from './merge.js';

/** The results as the API answers them (edits.service.ts `apiResult`). */
function answered(
  ids: readonly number[],
  ops: readonly EditOp[],
  name = 'Mix',
  baseName = name,
  nextEntry = Math.max(0, ...ids) + 1,
): ApiResult[] {
  const output = merge({
    current: ids.map((entry) => ({ entry, songId: 100 + entry })),
    name,
    baseName,
    nextEntry,
    formerList: () => undefined,
    ops,
  });
  return output.results.map((result) =>
    result.applied
      ? result.entries === undefined
        ? { applied: true }
        : { applied: true, entries: result.entries.map(entryName) }
      : result,
  );
}

/** Kept, then read again with the same ops: the answer byte for byte, and what was kept. */
function roundTrip(results: readonly ApiResult[], ops: readonly EditOp[]) {
  const kept = keptResults(results, ops);
  expect(JSON.stringify(readResults(kept, ops))).toBe(JSON.stringify(results));
  return kept;
}

const remove = (entry: number): EditOp => ({ op: 'remove', entry });
const move = (entry: number, after: number | null): EditOp => ({ op: 'move', entry, after });

describe('what a merged edit’s key keeps', () => {
  it('keeps a run of ops that applied nothing as one letter and its length', () => {
    const ops = Array.from({ length: 100 }, (_, i) => (i % 3 === 0 ? move(7, null) : remove(i % 2 === 0 ? 7 : 8)));
    const results = answered([1, 2], ops, 'Mix', 'Mix', 9);
    expect(JSON.stringify(results).length).toBeGreaterThan(5000);
    expect(roundTrip(results, ops)).toBe('r100');
  });

  it('keeps the first entry inserts made, and the messages of conflicts', () => {
    const ops: EditOp[] = [
      { op: 'insert', songIds: [1, 2, 3], after: 1 },
      remove(2),
      remove(2),
      { op: 'insert', songIds: [4] },
      { op: 'rename', name: 'Other' },
      move(5, null),
      { op: 'rename', name: 'Other "quoted" ✓' },
    ];
    const results = answered([1, 2, 3], ops, 'Changed | [meanwhile] @9', 'Mix');
    expect(results.flatMap((r) => (r.applied ? [] : [r.reason]))).toEqual(['removed', 'conflict', 'conflict']);
    expect(roundTrip(results, ops)).toMatch(/^a2racac@4\[/);
  });

  it('keeps results it would not give back exactly as their JSON, and reads JSON as keys were kept before', () => {
    const ops = [remove(1), remove(1)];
    const odd: ApiResult[] = [
      { applied: true },
      { applied: false, reason: 'removed', message: 'Entry e1 went some other way.' },
    ];
    expect(roundTrip(odd, ops)).toBe(JSON.stringify(odd));
    // An insert that made no entry (no songs) has no first entry to keep.
    const empty: EditOp[] = [{ op: 'insert', songIds: [] }];
    expect(roundTrip([{ applied: true, entries: [] }], empty)).toBe('[{"applied":true,"entries":[]}]');
    // A key kept before: its JSON, whatever the ops.
    expect(readResults('[{"applied":true}]', [remove(3)])).toEqual([{ applied: true }]);
    expect(() => readResults('r2', [remove(3)])).toThrow(/cannot give/);
    expect(() => readResults('a', [{ op: 'rename', name: 'x' }, remove(1)])).toThrow(/cannot give/);
  });

  it('gives back random merges byte for byte', () => {
    let state = 7;
    const next = (below: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % below;
    };
    for (let round = 0; round < 500; round++) {
      const ids = Array.from({ length: next(6) }, (_, i) => i + 1).filter(() => next(3) > 0);
      let nextEntry = Math.max(0, ...ids) + 1;
      const ops: EditOp[] = Array.from({ length: 1 + next(12) }, (): EditOp => {
        const entry = 1 + next(nextEntry + 2);
        switch (next(4)) {
          case 0: {
            const songIds = Array.from({ length: 1 + next(3) }, () => 1 + next(9));
            nextEntry += songIds.length;
            return { op: 'insert', songIds, after: null };
          }
          case 1:
            return remove(entry);
          case 2:
            return move(entry, null);
          default:
            return { op: 'rename', name: `n${next(3)}` };
        }
      });
      let results: ApiResult[];
      try {
        results = answered(ids, ops, `n${next(3)}`, 'n0');
      } catch (error) {
        expect(error).toBeInstanceOf(UnknownEntry);
        continue;
      }
      const kept = roundTrip(results, ops);
      expect(kept.startsWith('['), kept).toBe(false);
    }
  });

  it('digests the request: its ops as read, its base and atomic', () => {
    const ops: EditOp[] = [{ op: 'insert', songIds: [1], after: 2 }];
    const digest = requestDigest(undefined, undefined, ops);
    expect(digest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(requestDigest(undefined, false, ops)).toBe(digest);
    for (const other of [
      requestDigest(3, undefined, ops),
      requestDigest(undefined, true, ops),
      requestDigest(undefined, undefined, [{ op: 'insert', songIds: [1, 1], after: 2 }]),
    ]) {
      expect(other).not.toBe(digest);
    }
  });
});
