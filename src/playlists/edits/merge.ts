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
 * An entry an op names: by its id, or by a ref an earlier insert of the same request declared for an entry it makes
 * (offline queues: the app names what it inserted before it knows the ids).
 */
export type EntryId = number | { readonly ref: string };

/**
 * Where an insert or a move puts entries: `after` an entry (null: the start), `before` one, or, with neither key, the
 * end. With `& Record<string, never>` TypeScript accepts no object literal for an anchorless insert or move (its `op`
 * would have to be `never`), so such an op, read from a checked request body, is cast to EditOp.
 */
export type Anchor =
  | { readonly after: EntryId | null; readonly before?: undefined }
  | { readonly before: EntryId; readonly after?: undefined }
  | { readonly after?: undefined; readonly before?: undefined };
export type EditOp =
  | ({ readonly op: 'insert'; readonly songIds: readonly number[]; readonly refs?: readonly string[] } & Anchor)
  | { readonly op: 'remove'; readonly entry: EntryId }
  | ({ readonly op: 'move'; readonly entry: EntryId } & Anchor)
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
  // The entries this request's inserts made, by the refs they declared.
  const refs = new Map<string, number>();
  const results = input.ops.map((op, index): OpResult => {
    const known = (id: EntryId, key: 'entry' | 'after' | 'before'): number => {
      if (typeof id === 'object') {
        const made = refs.get(id.ref);
        // The request's reader lets through only refs declared by an earlier insert.
        if (made === undefined) throw new Error(`ops/${index}/${key}: no insert before declared the ref ${id.ref}`);
        return made;
      }
      if (!Number.isInteger(id) || id < 1 || id >= nextEntry) throw new UnknownEntry(index, `ops/${index}/${key}`, id);
      return id;
    };
    switch (op.op) {
      case 'insert': {
        const anchor = readAnchor(op, known);
        const entries = op.songIds.map((_, i) => nextEntry + i);
        op.refs?.forEach((ref, i) => refs.set(ref, entries[i]!));
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

function readAnchor(anchor: Anchor, known: (id: EntryId, key: 'after' | 'before') => number): Place {
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
 * The playlist as the ops edit it: ids and songs in plain arrays (indexOf over thousands of small integers is a fast
 * scan, and every op splices anyway, which would stale a position index; nothing is built per entry, so a long
 * playlist costs a few scans, not a map of it), and for each entry this request took out, its neighbours then, so an
 * anchor it removed (or the entry being moved) can be resolved without `formerList`, which only knows entries gone
 * before the request.
 */
class WorkingList {
  #ids: number[];
  /** The song of each entry of `#ids`, at the same index. */
  #songs: number[];
  /** The entries standing as a set, made when a walk through a former list needs it, then kept up to date. */
  #set: Set<number> | undefined;
  readonly #neighbours = new Map<number, { readonly left: number | null; readonly right: number | null }>();
  readonly #formerList: MergeInput['formerList'];

  constructor(current: readonly Entry[], formerList: MergeInput['formerList']) {
    this.#ids = current.map((e) => e.entry);
    this.#songs = current.map((e) => e.songId);
    this.#formerList = formerList;
  }

  #stands(entry: number): boolean {
    return this.#set === undefined ? this.#ids.includes(entry) : this.#set.has(entry);
  }

  songOf(entry: number): number | undefined {
    const at = this.#ids.indexOf(entry);
    return at < 0 ? undefined : this.#songs[at];
  }

  /** Takes an entry out, noting its neighbours; false if it does not stand. */
  takeOut(entry: number): boolean {
    const at = this.#ids.indexOf(entry);
    if (at < 0) return false;
    this.#neighbours.set(entry, { left: this.#ids[at - 1] ?? null, right: this.#ids[at + 1] ?? null });
    this.#ids.splice(at, 1);
    this.#songs.splice(at, 1);
    this.#set?.delete(entry);
    return true;
  }

  put(at: number, entries: readonly Entry[]): void {
    const ids = entries.map((e) => e.entry);
    const songs = entries.map((e) => e.songId);
    // A spliced-in list passes each id as an argument, which a long one would overflow; a new array costs more.
    if (ids.length <= 1000) {
      this.#ids.splice(at, 0, ...ids);
      this.#songs.splice(at, 0, ...songs);
    } else {
      this.#ids = [...this.#ids.slice(0, at), ...ids, ...this.#ids.slice(at)];
      this.#songs = [...this.#songs.slice(0, at), ...songs, ...this.#songs.slice(at)];
    }
    if (this.#set !== undefined) for (const id of ids) this.#set.add(id);
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
    return this.#ids.map((entry, i) => ({ entry, songId: this.#songs[i]! }));
  }

  /**
   * The entry itself if it stands, else the nearest standing entry on that side of where it stood; null for none
   * (the start or the end), undefined when nothing records where it stood. In a former list, entries not standing are
   * passed over, whoever took them out (an entry being moved is out while its anchor is read).
   */
  #nearest(entry: number, side: Side): number | null | undefined {
    if (this.#neighbours.has(entry) || this.#stands(entry)) return this.#chain(entry, side);
    const former = this.#formerList(entry);
    const at = former?.indexOf(entry) ?? -1;
    if (former === undefined || at < 0) return undefined;
    const step = side === 'left' ? -1 : 1;
    const standing = (this.#set ??= new Set(this.#ids));
    for (let i = at + step; i >= 0 && i < former.length; i += step) {
      const candidate = former[i]!;
      if (standing.has(candidate)) return candidate;
    }
    return null;
  }

  /**
   * From an entry standing or taken out by this request, through the neighbours noted when each was taken out, to
   * one standing. Each step goes to a neighbour noted later than the one before, so the walk ends.
   */
  #chain(entry: number, side: Side): number | null {
    let at: number | null = entry;
    while (at !== null && !this.#stands(at)) at = this.#neighbours.get(at)?.[side] ?? null;
    return at;
  }
}

/**
 * A revision of the playlist as `formerLists` replays it: `deleted` entries removed at `at`, then `entries` put there,
 * or (`at` undefined) the whole list; `entries` their ids comma-separated, as the history keeps them, undefined for a
 * revision recorded before entries (see migration 2026-12-06-entries), after which nothing is known of the list until
 * the next whole one.
 */
export interface EntryRevision {
  readonly version: number;
  readonly at: number | undefined;
  readonly deleted: number;
  readonly entries: string | undefined;
}

/** What `formerLists` answers for: the entries a merge asks `formerList` about, and the playlist as it is. */
export interface FormerListsInput {
  /** The revisions from a whole one at or before the base through the current version, oldest first. */
  readonly revisions: readonly EntryRevision[];
  /** The base version: what the revisions after it removed is what the merge may ask about. */
  readonly base: number;
  /** The entries the merge asks `formerList` about (none of them in the current list). */
  readonly asked: ReadonlySet<number>;
  /** The current entries, and those of them the ops remove or move (the others stand all through the merge). */
  readonly current: ReadonlySet<number>;
  readonly touched: ReadonlySet<number>;
}

/**
 * `formerList` for the entries a merge asks about, as the newest version since the base that held each would answer
 * it, without copying any version's list. First the revision that removed each asked entry last (a splice that took
 * it out and put it back, a move, counts) is found by following the asked entries' positions alone through the
 * revisions, each read once for how many entries it puts and where the asked ones are among them; then the revisions
 * from the whole one before the first of those up to the last are replayed on a list kept in blocks, each costing
 * what it changed plus a block and a look over the blocks. Each answer holds the entry and, on each side of it, the
 * current entries of that version in order up to the first one no op takes out, so the merge's walk through it stops
 * where it would in the whole list (an entry not current never stands during the merge; one no op touches always
 * does). An entry no revision since the base was seen to remove has none.
 */
export function formerLists(input: FormerListsInput): Map<number, readonly number[]> {
  const { revisions, current, touched } = input;
  const { last, wholes } = lastRemovals(input);
  const lists = new Map<number, readonly number[]>();
  if (last.size === 0) return lists;
  const removedAt = new Map<number, number[]>();
  for (const [entry, index] of last) removedAt.set(index, [...(removedAt.get(index) ?? []), entry]);
  const first = Math.min(...removedAt.keys());
  const end = Math.max(...removedAt.keys());
  // The list is known from a whole revision on: the newest one before the first that matters is where to start.
  let list: BlockList | undefined;
  for (let index = wholes.findLast((whole) => whole < first)!; index <= end; index++) {
    const { at, deleted, entries } = revisions[index]!;
    if (entries === undefined) {
      list = undefined;
      continue;
    }
    // Removed last by this revision: where it stood in the list the revision starts from (known, as it was seen).
    for (const entry of list === undefined ? [] : (removedAt.get(index) ?? [])) {
      const where = list!.indexOf(entry);
      const before = list!.nearest(where - 1, -1, current, touched).reverse();
      lists.set(entry, [...before, entry, ...list!.nearest(where + 1, 1, current, touched)]);
    }
    if (at === undefined) list = new BlockList(idsOf(entries));
    else list?.splice(at, deleted, idsOf(entries));
  }
  return lists;
}

/**
 * The index of the revision after the base that removed each asked entry last while the list was known, found from
 * the asked entries' positions alone (a splice before one leaves it, one over it removes it, one after it moves it
 * by what it put less what it removed), and the indexes of the whole revisions of known entries.
 */
function lastRemovals({ revisions, base, asked }: FormerListsInput): { last: Map<number, number>; wholes: number[] } {
  const last = new Map<number, number>();
  const wholes: number[] = [];
  const look = askedAmong(asked);
  let known = false;
  // Where each asked entry the list holds stands in it.
  let where = new Map<number, number>();
  revisions.forEach(({ version, at, deleted, entries }, index) => {
    if (entries === undefined) {
      known = false;
      where = new Map();
      return;
    }
    if (at !== undefined && !known) return;
    const after = version > base;
    const put = look(entries);
    const then = where;
    where = new Map();
    if (at === undefined) {
      if (known && after) for (const entry of then.keys()) if (!put.found.has(entry)) last.set(entry, index);
      wholes.push(index);
      known = true;
    } else {
      for (const [entry, position] of then) {
        if (position < at) where.set(entry, position);
        else if (position >= at + deleted) where.set(entry, position + put.count - deleted);
        else if (after) last.set(entry, index);
      }
    }
    for (const [entry, position] of put.found) where.set(entry, (at ?? 0) + position);
  });
  return { last, wholes };
}

const COMMA = 44;
const ZERO = 48;

/**
 * Reads ids comma-separated for how many there are and where the asked entries are among them, in one pass over the
 * text without making a list of them (what a revision puts is most often none of them).
 */
function askedAmong(asked: ReadonlySet<number>) {
  const low = Math.min(...asked);
  const high = Math.max(...asked);
  const none = new Map<number, number>();
  return (ids: string): { count: number; found: ReadonlyMap<number, number> } => {
    if (ids === '') return { count: 0, found: none };
    let found = none;
    let count = 0;
    let id = 0;
    for (let i = 0; i <= ids.length; i++) {
      const code = i < ids.length ? ids.charCodeAt(i) : COMMA;
      if (code !== COMMA) {
        id = id * 10 + code - ZERO;
        continue;
      }
      if (id >= low && id <= high && asked.has(id)) {
        if (found === none) found = new Map();
        found.set(id, count);
      }
      count++;
      id = 0;
    }
    return { count, found };
  };
}

/** Ids comma-separated, as the history keeps them. */
function idsOf(text: string): number[] {
  const ids: number[] = [];
  if (text === '') return ids;
  let id = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === COMMA) {
      ids.push(id);
      id = 0;
    } else id = id * 10 + code - ZERO;
  }
  ids.push(id);
  return ids;
}

/** Entries per block of a `BlockList`: a block is split past twice this. */
const BLOCK = 256;

/**
 * A list of entries in blocks, so that a splice costs what it removes and inserts plus a block and a look over the
 * blocks' lengths, where an array would move every entry after it. A position past the end stands for the end, as
 * for an array's splice.
 */
class BlockList {
  readonly #blocks: number[][] = [];

  constructor(entries: readonly number[]) {
    for (let i = 0; i < entries.length; i += BLOCK) this.#blocks.push(entries.slice(i, i + BLOCK));
  }

  /** The block holding position `at` and the position in it (the end of the last block for one at or past the end). */
  #find(at: number): { block: number; offset: number } {
    let offset = Math.max(0, at);
    const last = this.#blocks.length - 1;
    for (let block = 0; block < last; block++) {
      const length = this.#blocks[block]!.length;
      if (offset < length) return { block, offset };
      offset -= length;
    }
    return { block: Math.max(0, last), offset: Math.min(offset, this.#blocks[last]?.length ?? 0) };
  }

  indexOf(entry: number): number {
    let before = 0;
    for (const entries of this.#blocks) {
      const at = entries.indexOf(entry);
      if (at >= 0) return before + at;
      before += entries.length;
    }
    return -1;
  }

  splice(at: number, deleted: number, inserted: readonly number[]): void {
    let { block, offset } = this.#find(at);
    let left = deleted;
    while (left > 0 && block < this.#blocks.length) {
      const entries = this.#blocks[block]!;
      const taken = Math.min(left, entries.length - offset);
      entries.splice(offset, taken);
      left -= taken;
      if (entries.length === 0) this.#blocks.splice(block, 1);
      else {
        block++;
        offset = 0;
      }
    }
    if (inserted.length === 0) return;
    ({ block, offset } = this.#find(at));
    const entries = this.#blocks[block] ?? [];
    // Concatenated rather than spliced in: a long list spread as arguments would overflow the stack.
    const joined = entries.slice(0, offset).concat(inserted, entries.slice(offset));
    const parts: number[][] = [];
    if (joined.length <= 2 * BLOCK) parts.push(joined);
    else for (let i = 0; i < joined.length; i += BLOCK) parts.push(joined.slice(i, i + BLOCK));
    this.#blocks.splice(block, this.#blocks.length === 0 ? 0 : 1, ...parts);
  }

  /**
   * From position `from` on, one `step` at a time, the `current` entries up to the first one not `touched` (or the
   * list's end); the others passed over.
   */
  nearest(from: number, step: 1 | -1, current: ReadonlySet<number>, touched: ReadonlySet<number>): number[] {
    const found: number[] = [];
    if (from < 0) return found;
    let { block, offset } = this.#find(from);
    const length = this.#blocks[block]?.length ?? 0;
    if (offset >= length) {
      if (step === 1) return found;
      offset = length - 1;
    }
    for (; block >= 0 && block < this.#blocks.length; block += step) {
      const entries = this.#blocks[block]!;
      if (offset < 0) offset = entries.length - 1;
      for (; offset >= 0 && offset < entries.length; offset += step) {
        const entry = entries[offset]!;
        if (!current.has(entry)) continue;
        found.push(entry);
        if (!touched.has(entry)) return found;
      }
      offset = step === 1 ? 0 : -1;
    }
    return found;
  }
}
