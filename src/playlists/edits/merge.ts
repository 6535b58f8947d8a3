import { entryName } from './entry-names.js';
/**
 * How a list of edit operations made against an older version of a playlist lands on its current version: a pure
 * function, no database, no HTTP. Entries (slots) have ids of their own, so an op names what it means even after
 * others have edited the playlist: everyone's inserts land, an anchor someone removed still places an op where it
 * stood, and what cannot apply any more (a removed entry, a name changed meanwhile) is reported per op rather than
 * refusing the whole request. The playlist's current state wins over the older request where they disagree.
 */

/** An entry: a slot of the playlist, with an id of its own (a positive integer, never reused in the playlist) and its song. */
export interface Entry {
  readonly entry: number;
  readonly songId: number;
}

/**
 * Where an insert or a move puts entries: `after` an entry (null: the start), `before` one, or, with neither key, the
 * end. With `& Record<string, never>` TypeScript accepts no object literal for an anchorless insert or move (its `op`
 * would have to be `never`), so such an op, read from a checked request body, is cast to EditOp.
 */
export type Anchor =
  | { readonly after: number | null; readonly before?: undefined }
  | { readonly before: number; readonly after?: undefined }
  | { readonly after?: undefined; readonly before?: undefined };
export type EditOp =
  | ({ readonly op: 'insert'; readonly songIds: readonly number[] } & Anchor)
  | { readonly op: 'remove'; readonly entry: number }
  | ({ readonly op: 'move'; readonly entry: number } & Anchor)
  | { readonly op: 'rename'; readonly name: string };

export type OpResult =
  | { readonly applied: true; readonly entries?: readonly number[] } // entries: the ids an insert made
  | { readonly applied: false; readonly reason: 'removed' | 'conflict'; readonly message: string };

export interface MergeInput {
  /** The playlist now: its entries in order, its name, and the next entry id it would give (every id below it was used once). */
  readonly current: readonly Entry[];
  readonly name: string;
  readonly nextEntry: number;
  /** The name at the base version the client edited. */
  readonly baseName: string;
  /**
   * Where a removed entry stood: the entry ids, in order, of the newest version (from the base version on) that still held
   * it; undefined when no version since the base held it. Called only for entries not in the current list.
   */
  readonly formerList: (entry: number) => readonly number[] | undefined;
  readonly ops: readonly EditOp[];
}

export interface MergeOutput {
  readonly entries: readonly Entry[];
  readonly name: string;
  readonly nextEntry: number;
  readonly results: readonly OpResult[];
}

/**
 * An op named an entry the playlist never had (an id at or past `nextEntry` at the time of the op, or below 1): the
 * request is wrong whatever anyone else did, unlike an entry that was removed. `path` is the member, e.g. `ops/3/after`.
 */
export class UnknownEntry extends Error {
  override name = 'UnknownEntry';
  constructor(
    readonly index: number,
    readonly path: string,
    readonly entry: number,
  ) {
    super(`${path}: the playlist never had entry ${entry}.`);
  }
}

/**
 * Applies the ops in order to a copy of `current`; each answers whether it applied. Inserts always land (after the
 * same anchor, the later right next to it); a remove or a move of an entry no longer there is `removed`; a rename is a
 * `conflict` when the name was changed meanwhile to another one; an anchor removed meanwhile places the op where it
 * stood. The input is never modified.
 *
 * Throws UnknownEntry (exported class with the op index and the path, e.g. `ops/3/after`) for an entry id >= nextEntry (never had).
 */
export function merge(input: MergeInput): MergeOutput {
  const list = new WorkingList(input.current, input.formerList);
  let nextEntry = input.nextEntry;
  let name = input.name;
  // The name the request expects to find: the base's, then the one its own last applied rename gave.
  let expectedName = input.baseName;
  const results = input.ops.map((op, index): OpResult => {
    const known = (id: number, key: 'entry' | 'after' | 'before'): number => {
      if (!Number.isInteger(id) || id < 1 || id >= nextEntry) throw new UnknownEntry(index, `ops/${index}/${key}`, id);
      return id;
    };
    switch (op.op) {
      case 'insert': {
        const anchor = readAnchor(op, known);
        const entries = op.songIds.map((_, i) => nextEntry + i);
        nextEntry += entries.length;
        list.put(
          list.place(anchor),
          entries.map((entry, i) => ({ entry, songId: op.songIds[i]! })),
        );
        return { applied: true, entries };
      }
      case 'remove': {
        const entry = known(op.entry, 'entry');
        if (!list.takeOut(entry)) return removed(removedMessage('remove', entry));
        return { applied: true };
      }
      case 'move': {
        const entry = known(op.entry, 'entry');
        const anchor = readAnchor(op, known);
        const song = list.songOf(entry);
        if (song === undefined) return removed(removedMessage('move', entry));
        // Taken out first, so that the anchor is read without it; moving next to itself finds its old neighbours.
        list.takeOut(entry);
        list.put(list.place(anchor), [{ entry, songId: song }]);
        return { applied: true };
      }
      case 'rename':
        if (name !== expectedName && name !== op.name) {
          return {
            applied: false,
            reason: 'conflict',
            message: `The name was changed to ${JSON.stringify(name)} meanwhile.`,
          };
        }
        name = op.name;
        expectedName = op.name;
        return { applied: true };
    }
  });
  return { entries: list.entries(), name, nextEntry, results };
}

/** Where an op puts entries: right after an entry or the start (null), right before an entry, or at the end. */
type Place = { readonly after: number | null } | { readonly before: number } | 'end';

function readAnchor(anchor: Anchor, known: (id: number, key: 'after' | 'before') => number): Place {
  if (anchor.after !== undefined) {
    return { after: anchor.after === null ? null : known(anchor.after, 'after') };
  }
  if (anchor.before !== undefined) return { before: known(anchor.before, 'before') };
  return 'end';
}

const removed = (message: string): OpResult => ({ applied: false, reason: 'removed', message });

/** Why a remove or a move of an entry no longer there was not applied (a kept key's results are rebuilt with it). */
export const removedMessage = (op: 'remove' | 'move', entry: number): string =>
  op === 'remove'
    ? `Entry ${entryName(entry)} was removed already.`
    : `Entry ${entryName(entry)} was removed; it cannot be moved.`;

type Side = 'left' | 'right';

/**
 * The playlist as the ops edit it: ids in a plain array (indexOf over a few thousand small integers is a fast scan,
 * and every op splices anyway, which would stale a position index), a set of the entries standing, and for each entry
 * this request took out, its neighbours then, so an anchor it removed (or the entry being moved) can be resolved
 * without `formerList`, which only knows entries gone before the request.
 */
class WorkingList {
  #ids: number[];
  readonly #songs = new Map<number, number>();
  readonly #standing: Set<number>;
  readonly #neighbours = new Map<number, { readonly left: number | null; readonly right: number | null }>();
  readonly #formerList: MergeInput['formerList'];

  constructor(current: readonly Entry[], formerList: MergeInput['formerList']) {
    this.#ids = current.map((e) => e.entry);
    for (const e of current) this.#songs.set(e.entry, e.songId);
    this.#standing = new Set(this.#ids);
    this.#formerList = formerList;
  }

  songOf(entry: number): number | undefined {
    return this.#standing.has(entry) ? this.#songs.get(entry) : undefined;
  }

  /** Takes an entry out, noting its neighbours; false if it does not stand. */
  takeOut(entry: number): boolean {
    if (!this.#standing.has(entry)) return false;
    const at = this.#ids.indexOf(entry);
    this.#neighbours.set(entry, { left: this.#ids[at - 1] ?? null, right: this.#ids[at + 1] ?? null });
    this.#ids.splice(at, 1);
    this.#standing.delete(entry);
    return true;
  }

  put(at: number, entries: readonly Entry[]): void {
    const ids = entries.map((e) => e.entry);
    // A spliced-in list passes each id as an argument, which a long one would overflow; a new array costs more.
    if (ids.length <= 1000) this.#ids.splice(at, 0, ...ids);
    else this.#ids = [...this.#ids.slice(0, at), ...ids, ...this.#ids.slice(at)];
    for (const e of entries) {
      this.#songs.set(e.entry, e.songId);
      this.#standing.add(e.entry);
    }
  }

  /** The index where a place puts entries in the list as it is now. */
  place(place: Place): number {
    if (place === 'end') return this.#ids.length;
    if ('after' in place) {
      if (place.after === null) return 0;
      const left = this.#nearest(place.after, 'left');
      // No record of where it stood: the end, as for `before` below; the inserted songs are kept, and the end is
      // where a client that cannot place them would have put them.
      return left === undefined ? this.#ids.length : left === null ? 0 : this.#ids.indexOf(left) + 1;
    }
    const right = this.#nearest(place.before, 'right');
    return right === undefined || right === null ? this.#ids.length : this.#ids.indexOf(right);
  }

  entries(): Entry[] {
    return this.#ids.map((entry) => ({ entry, songId: this.#songs.get(entry)! }));
  }

  /**
   * The entry itself if it stands, else the nearest standing entry on that side of where it stood; null for none
   * (the start or the end), undefined when nothing records where it stood. In a former list, entries not standing are
   * passed over, whoever took them out (an entry being moved is out while its anchor is read).
   */
  #nearest(entry: number, side: Side): number | null | undefined {
    if (this.#standing.has(entry) || this.#neighbours.has(entry)) return this.#chain(entry, side);
    const former = this.#formerList(entry);
    const at = former?.indexOf(entry) ?? -1;
    if (former === undefined || at < 0) return undefined;
    const step = side === 'left' ? -1 : 1;
    for (let i = at + step; i >= 0 && i < former.length; i += step) {
      const candidate = former[i]!;
      if (this.#standing.has(candidate)) return candidate;
    }
    return null;
  }

  /**
   * From an entry standing or taken out by this request, through the neighbours noted when each was taken out, to
   * one standing. Each step goes to a neighbour noted later than the one before, so the walk ends.
   */
  #chain(entry: number, side: Side): number | null {
    let at: number | null = entry;
    while (at !== null && !this.#standing.has(at)) at = this.#neighbours.get(at)?.[side] ?? null;
    return at;
  }
}
