import { generateNKeysBetween } from 'fractional-indexing';
import { EditSearch } from '../history/myers.js';

/**
 * A playlist's slots as rows: each an entry (an id of its own in the playlist, never given twice), its song, and an
 * order key. Rows are read in key order; keys compare as bytes (`COLLATE "C"` on PostgreSQL), and between any two
 * there is always room for another (fractional-indexing's keys), so an insert or a move writes its own rows only.
 */
export interface StoredEntry {
  readonly entry: number;
  readonly songId: number;
  readonly ord: string;
}

/** A slot of the playlist an edit wants: its song, and the entry it keeps (none: a new slot). */
export interface WantedSlot {
  readonly songId: number;
  readonly entry?: number | undefined;
}

/** An entry and its song, in playlist order. */
export interface Entry {
  readonly entry: number;
  readonly songId: number;
}

/** What an edit writes to the entries: the rows it removes and the rows it inserts or gives a new key. */
export interface EntryWrites {
  /** The playlist's entries after the edit, in order, with their keys. */
  readonly entries: readonly StoredEntry[];
  readonly deleted: readonly number[];
  /** Rows inserted, or moved (a new key for an entry kept). */
  readonly written: readonly StoredEntry[];
  /** The next entry id the playlist will give. */
  readonly nextEntry: number;
}

/**
 * Past this length a new key is not made: every entry gets a fresh short key instead (a bounded rewrite of the
 * playlist, which a long run of inserts at one place makes necessary once in many edits).
 */
const LONGEST_KEY = 48;

/**
 * Steps of the diff that finds the songs a replacement keeps, past which only its common ends are kept: about a
 * millisecond of the event loop (a replacement of 1 000 songs by 1 000 others took 38 ms at 2 000 000 steps).
 */
const KEEP_WORK = 50_000;

/**
 * The entries of a whole new list of songs (a merge patch's or a PUT's `songIds`, a replace of `/songs`, a
 * restore of a version without entries): the songs it keeps in the same order, the common part a diff of the two
 * lists keeps, keep their entries; the rest are new.
 */
export function keepCommon(before: readonly Entry[], songIds: readonly number[]): WantedSlot[] {
  const a = before.map((e) => e.songId);
  const wanted: WantedSlot[] = songIds.map((songId) => ({ songId }));
  const search = new EditSearch(a, songIds, a.length + songIds.length, KEEP_WORK);
  let hunks: readonly number[];
  if (search.run() === 'done') {
    hunks = search.hunks;
  } else {
    // Past the bound: the common first and last songs only.
    let start = 0;
    const shorter = Math.min(a.length, songIds.length);
    while (start < shorter && a[start] === songIds[start]) start++;
    let end = 0;
    while (end < shorter - start && a[a.length - 1 - end] === songIds[songIds.length - 1 - end]) end++;
    hunks = [start, a.length - end, start, songIds.length - end];
  }
  // Between hunks (and before the first, after the last) the two lists run side by side.
  let x = 0;
  let y = 0;
  const keepRun = (toX: number) => {
    for (; x < toX; x += 1, y += 1) wanted[y] = { songId: songIds[y]!, entry: before[x]!.entry };
  };
  for (let h = 0; h < hunks.length; h += 4) {
    keepRun(hunks[h]!);
    x = hunks[h + 1]!;
    y = hunks[h + 3]!;
  }
  keepRun(a.length);
  return wanted;
}

/**
 * The rows that turn `before` into `wanted`. An entry `wanted` names keeps its row when it is the same song; an entry
 * that `before` does not have is written under that id (a restore gives back the entries its version had; a merge
 * names the entries it made), and a second slot naming one entry, or a kept entry with another song, is a new slot
 * (the slots of the ends both lists share come first). The kept entries in the longest run that is still in key order
 * keep their keys, the others (moved) and the new ones get keys between their neighbours'. So a change writes about
 * as many rows as it changes, whatever the playlist's length; and the work past the ends both lists share (two
 * comparisons a slot) is the change's.
 */
export function planEntries(
  before: readonly StoredEntry[],
  wanted: readonly WantedSlot[],
  nextEntry: number,
): EntryWrites {
  const same = (slot: WantedSlot, row: StoredEntry) => slot.entry === row.entry && slot.songId === row.songId;
  let head = 0;
  const shorter = Math.min(before.length, wanted.length);
  while (head < shorter && same(wanted[head]!, before[head]!)) head += 1;
  let tail = 0;
  while (tail < shorter - head && same(wanted[wanted.length - 1 - tail]!, before[before.length - 1 - tail]!)) {
    tail += 1;
  }
  const oldMiddle = before.slice(head, before.length - tail);
  const middle = wanted.slice(head, wanted.length - tail);
  const old = new Map(oldMiddle.map((row) => [row.entry, row]));
  const used = new Set<number>();
  // The entries of the shared ends, made only when a changed slot names an entry the changed part does not have.
  let ends: Set<number> | undefined;
  const inEnds = (entry: number) =>
    (ends ??= new Set([...before.slice(0, head), ...before.slice(before.length - tail)].map((row) => row.entry))).has(
      entry,
    );
  let next = nextEntry;
  for (const slot of wanted) if (slot.entry !== undefined && slot.entry >= next) next = slot.entry + 1;
  const slots = middle.map((slot) => {
    const row = slot.entry === undefined ? undefined : old.get(slot.entry);
    if (row !== undefined && row.songId === slot.songId && !used.has(row.entry)) {
      used.add(row.entry);
      return { entry: row.entry, songId: slot.songId, ord: row.ord };
    }
    if (
      row === undefined &&
      slot.entry !== undefined &&
      slot.entry > 0 &&
      !used.has(slot.entry) &&
      // An entry from nextEntry on was never given: it is not in `before`.
      (slot.entry >= nextEntry || !inEnds(slot.entry))
    ) {
      used.add(slot.entry);
      return { entry: slot.entry, songId: slot.songId, ord: undefined as string | undefined };
    }
    return { entry: next++, songId: slot.songId, ord: undefined as string | undefined };
  });
  const deleted = oldMiddle.filter((row) => !used.has(row.entry)).map((row) => row.entry);

  // The changed part's kept keys lie between the shared ends' (`before` is in key order): new keys go between those.
  const [left, right] = [before[head - 1]?.ord ?? null, before[before.length - tail]?.ord ?? null];
  const stable = longestOrderedRun(slots.map((slot) => slot.ord));
  const keys: string[] = new Array<string>(slots.length);
  const written: StoredEntry[] = [];
  let renumber = false;
  for (let i = 0; i < slots.length;) {
    if (stable[i]) {
      keys[i] = slots[i]!.ord!;
      i += 1;
      continue;
    }
    let end = i;
    while (end < slots.length && !stable[end]) end += 1;
    const made = generateNKeysBetween(
      i === 0 ? left : keys[i - 1],
      end < slots.length ? slots[end]!.ord : right,
      end - i,
    );
    for (let k = 0; k < made.length; k += 1) {
      const key = made[k]!;
      if (key.length > LONGEST_KEY) renumber = true;
      keys[i + k] = key;
    }
    i = end;
  }
  const changed = slots.map((slot, i) => ({ entry: slot.entry, songId: slot.songId, ord: keys[i]! }));
  let entries: StoredEntry[] = [...before.slice(0, head), ...changed, ...before.slice(before.length - tail)];
  if (renumber) {
    const fresh = generateNKeysBetween(null, null, entries.length);
    entries = entries.map((row, i) => ({ entry: row.entry, songId: row.songId, ord: fresh[i]! }));
    written.push(...entries);
  } else {
    changed.forEach((row, i) => {
      if (!stable[i]) written.push(row);
    });
  }
  return { entries, deleted, written, nextEntry: next };
}

/**
 * Which of these keys (undefined: a slot with no key yet) to keep: a longest strictly increasing run of them, by
 * patience sorting in O(n log n).
 */
function longestOrderedRun(keys: readonly (string | undefined)[]): boolean[] {
  // Most edits move nothing: the kept keys are in order already, and all of them stay.
  let last = '';
  let ordered = true;
  for (const key of keys) {
    if (key === undefined) continue;
    if (key <= last) {
      ordered = false;
      break;
    }
    last = key;
  }
  if (ordered) return keys.map((key) => key !== undefined);
  const tails: number[] = [];
  const previous = new Int32Array(keys.length).fill(-1);
  for (let i = 0; i < keys.length; i += 1) {
    const key = keys[i];
    if (key === undefined) continue;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[tails[mid]!]! < key) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) previous[i] = tails[lo - 1]!;
    tails[lo] = i;
  }
  const stable = new Array<boolean>(keys.length).fill(false);
  for (let i = tails.at(-1) ?? -1; i !== -1; i = previous[i]!) stable[i] = true;
  return stable;
}
