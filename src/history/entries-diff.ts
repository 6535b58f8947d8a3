import { entryName } from '../playlists/edits/entry-names.js';

/**
 * What changed between two versions of a playlist as the ops of a merged edit (`POST …/edits`, merge.ts), with entry
 * ids: applied in order to the first version's entries, they give exactly the second's, the ids the inserts stand for
 * included. Pure: no database, no HTTP.
 *
 * Entries keep their ids through every edit, so this needs no search for a common subsequence of songs: an entry of
 * the first version that the second lacks is a remove, one of the second that the first lacks is inserted, in runs
 * of entries that stand next to each other after the same anchor, and of the entries both hold, those of a longest
 * run in the same relative order stay while the others move, so the moves are as few as can be. A name changed is
 * one rename. The ops come in that order: the rename, the removes (in the first version's order), the moves and then
 * the inserts (both in the second version's order). Every anchor is an entry both versions hold (or the start), so
 * the ops, each insert without its `entries`, also apply sent to `POST …/edits` on a playlist at the first version,
 * where the inserts make entries of their own.
 *
 * O(n log n) time for n entries (the longest increasing subsequence by patience sorting) and O(n) memory; the route
 * runs it on a worker thread for long versions, as the JSON Patch diff (diff.ts).
 */

/** A version as this diff needs it: its name, and its slots' songs and entries in order. */
export interface EntriesVersion {
  readonly name: string;
  readonly songs: readonly number[];
  readonly entries: readonly number[];
}

export type EntryDiffOp =
  | {
      readonly op: 'insert';
      readonly songIds: readonly number[];
      readonly after: string | null;
      /** The second version's entries these songs are, in order. */
      readonly entries: readonly string[];
    }
  | { readonly op: 'remove'; readonly entry: string }
  | { readonly op: 'move'; readonly entry: string; readonly after: string | null }
  | { readonly op: 'rename'; readonly name: string };

/** The ops that turn `from`'s entries into `to`'s; `[]` when they are the same. */
export function diffEntries(from: EntriesVersion, to: EntriesVersion): EntryDiffOp[] {
  const ops: EntryDiffOp[] = [];
  if (from.name !== to.name) ops.push({ op: 'rename', name: to.name });
  const where = new Map<number, number>();
  from.entries.forEach((entry, i) => where.set(entry, i));
  // The entries both hold, in `to`'s order, and where each stood in `from`. An entry holds one song for life; one
  // found with another song is taken as removed and inserted anew.
  const both = new Set<number>();
  const common: number[] = [];
  const places: number[] = [];
  to.entries.forEach((entry, j) => {
    const i = where.get(entry);
    if (i === undefined || from.songs[i] !== to.songs[j] || both.has(entry)) return;
    both.add(entry);
    common.push(entry);
    places.push(i);
  });
  for (const entry of from.entries) if (!both.has(entry)) ops.push({ op: 'remove', entry: entryName(entry) });
  // Each entry that moves goes right after the one before it in `to`, which stands where `to` has it by then.
  const stays = longestIncreasing(places);
  common.forEach((entry, k) => {
    if (stays[k] === 1) return;
    ops.push({ op: 'move', entry: entryName(entry), after: k === 0 ? null : entryName(common[k - 1]!) });
  });
  let anchor: number | null = null;
  let run: number[] = [];
  const insert = () => {
    if (run.length === 0) return;
    ops.push({
      op: 'insert',
      songIds: run.map((j) => to.songs[j]!),
      after: anchor === null ? null : entryName(anchor),
      entries: run.map((j) => entryName(to.entries[j]!)),
    });
    run = [];
  };
  to.entries.forEach((entry, j) => {
    if (!both.has(entry)) {
      run.push(j);
      return;
    }
    insert();
    anchor = entry;
  });
  insert();
  return ops;
}

/**
 * Marks (1) the members of one longest strictly increasing subsequence of `values`, by patience sorting: for each
 * length, the index of the smallest value that ends an increasing run of that length, and each value's predecessor.
 */
export function longestIncreasing(values: readonly number[]): Uint8Array {
  const tails: number[] = [];
  const previous = new Int32Array(values.length);
  values.forEach((value, i) => {
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (values[tails[middle]!]! < value) low = middle + 1;
      else high = middle;
    }
    previous[i] = low === 0 ? -1 : tails[low - 1]!;
    tails[low] = i;
  });
  const members = new Uint8Array(values.length);
  for (let i = tails.at(-1) ?? -1; i >= 0; i = previous[i]!) members[i] = 1;
  return members;
}
