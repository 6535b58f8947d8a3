import { generateNKeysBetween } from 'fractional-indexing';
import { describe, expect, it } from 'vitest';
import { keepCommon, planEntries, type StoredEntry } from './entry-order.js';

/** A playlist of these songs with entries 1, 2, … and keys in order. */
function stored(songIds: readonly number[]): StoredEntry[] {
  const keys = generateNKeysBetween(null, null, songIds.length);
  return songIds.map((songId, i) => ({ entry: i + 1, songId, ord: keys[i]! }));
}

/** The playlist after the plan is written: the rows kept, the rows written, in key order. */
function apply(before: readonly StoredEntry[], plan: ReturnType<typeof planEntries>): StoredEntry[] {
  const rows = new Map(before.map((row) => [row.entry, row]));
  for (const entry of plan.deleted) rows.delete(entry);
  for (const row of plan.written) rows.set(row.entry, row);
  return [...rows.values()].sort((a, b) => (a.ord < b.ord ? -1 : a.ord > b.ord ? 1 : 0));
}

describe('planEntries', () => {
  it('writes one row for an insert at the top, the middle or the end of a long playlist', () => {
    const before = stored(Array.from({ length: 1000 }, (_, i) => i + 1));
    const slots = before.map((row) => ({ songId: row.songId, entry: row.entry }));
    for (const at of [0, 500, 1000]) {
      const wanted = [...slots.slice(0, at), { songId: 7 }, ...slots.slice(at)];
      const plan = planEntries(before, wanted, 1001);
      expect(plan.deleted).toEqual([]);
      expect(plan.written).toHaveLength(1);
      expect(plan.written[0]!.entry).toBe(1001);
      expect(plan.nextEntry).toBe(1002);
      expect(apply(before, plan).map((row) => row.entry)).toEqual(plan.entries.map((e) => e.entry));
    }
  });

  it('writes only the moved entry for a move, and keeps every entry', () => {
    const before = stored([1, 2, 3, 4, 5]);
    const wanted = [5, 1, 2, 3, 4].map((entry) => ({ songId: entry, entry }));
    const plan = planEntries(before, wanted, 6);
    expect(plan.written.map((row) => row.entry)).toEqual([5]);
    expect(apply(before, plan).map((row) => row.entry)).toEqual([5, 1, 2, 3, 4]);
  });

  it('gives a new entry to a slot naming an entry twice or with another song, and writes a revived one under its id', () => {
    const before = stored([1, 2]);
    const plan = planEntries(
      before,
      [
        { songId: 1, entry: 1 },
        { songId: 1, entry: 1 },
        { songId: 9, entry: 2 },
        { songId: 4, entry: 7 },
      ],
      8,
    );
    expect(plan.entries.map(({ entry, songId }) => ({ entry, songId }))).toEqual([
      { entry: 1, songId: 1 },
      { entry: 8, songId: 1 },
      { entry: 9, songId: 9 },
      { entry: 7, songId: 4 },
    ]);
    expect(plan.deleted).toEqual([2]);
    expect(plan.nextEntry).toBe(10);
  });

  it('keeps keys short: a long run of inserts at one place renumbers the playlist once its keys grow', () => {
    let rows = stored([1, 2]);
    let next = 3;
    let longest = 0;
    for (let i = 0; i < 500; i += 1) {
      const slots = rows.map((row) => ({ songId: row.songId, entry: row.entry }));
      const wanted = [slots[0]!, { songId: 3 }, ...slots.slice(1)];
      const plan = planEntries(rows, wanted, next);
      rows = apply(rows, plan);
      next = plan.nextEntry;
      longest = Math.max(longest, ...rows.map((row) => row.ord.length));
      expect(rows.map((row) => row.entry)).toEqual(plan.entries.map((e) => e.entry));
    }
    expect(longest).toBeLessThanOrEqual(49);
    expect(rows).toHaveLength(502);
  });
});

describe('keepCommon', () => {
  it('keeps the entries of the songs a new list keeps in order, and none of the rest', () => {
    const before = stored([1, 2, 3, 2]).map(({ entry, songId }) => ({ entry, songId }));
    expect(keepCommon(before, [2, 3, 5, 2])).toEqual([
      { songId: 2, entry: 2 },
      { songId: 3, entry: 3 },
      { songId: 5 },
      { songId: 2, entry: 4 },
    ]);
  });
});

describe('planEntries on random edits', () => {
  it('leaves the rows in the wanted order, each entry once, whatever the edit', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let rows = stored(Array.from({ length: 60 }, (_, i) => (i % 9) + 1));
    let next = 61;
    for (let round = 0; round < 400; round += 1) {
      const slots: { songId: number; entry?: number }[] = rows.map((row) => ({ songId: row.songId, entry: row.entry }));
      const at = Math.floor(random() * (slots.length + 1));
      const choice = random();
      if (choice < 0.3) slots.splice(at, 0, { songId: 1 + Math.floor(random() * 9) });
      else if (choice < 0.5 && slots.length > 0) slots.splice(Math.min(at, slots.length - 1), 1);
      else if (choice < 0.7 && slots.length > 1) slots.splice(at, 0, ...slots.splice(0, 1));
      else if (choice < 0.85 && slots.length > 0)
        slots.splice(at, 0, { ...slots[Math.floor(random() * slots.length)]! });
      else if (slots.length > 0) slots[Math.min(at, slots.length - 1)] = { songId: 99, entry: rows[0]!.entry };
      const plan = planEntries(rows, slots, next);
      rows = apply(rows, plan);
      next = plan.nextEntry;
      expect(rows.map((row) => row.songId)).toEqual(slots.map((slot) => slot.songId));
      expect(rows.map((row) => row.entry)).toEqual(plan.entries.map((e) => e.entry));
      expect(new Set(rows.map((row) => row.entry)).size).toBe(rows.length);
      expect(rows.map((row) => row.ord)).toEqual(plan.entries.map((e) => e.ord));
    }
  });
});
