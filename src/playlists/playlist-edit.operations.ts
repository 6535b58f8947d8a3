import type { Limits } from '../config.js';
import { MAX_PATCH_OPERATIONS } from '../domain/json-patch.js';
import { conflict, editChecks, malformed, type EditChecks } from './playlist-edit.checks.js';

/**
 * Edits of a playlist as pure functions from the current playlist to the edited one: no database, no HTTP. Each
 * either returns the whole new playlist or throws an EditRefused and changes nothing (the input is never modified).
 * Song ids are checked for their form only; whether the catalog has them is for the caller to ask.
 *
 * The JSON Patch applier is written here rather than taken from fast-json-patch or rfc6902: over this fixed,
 * two-member document neither library saves the work that matters. Both accept new members (`/colour`) and values
 * of any type (`"name": 5`), give one "unresolvable path" error for a leading zero, an index past the end and a
 * misplaced `-` alike (malformed and a conflict here), and leave a patch half applied when a later operation fails; what
 * remains once all that is checked around them is a splice per operation.
 */

/**
 * The document a JSON Patch addresses, and what every edit returns (songs as `{id}` only). A playlist as GET
 * answers it, with titles and artists, is one too.
 */
export interface PlaylistDocument {
  readonly name: string;
  /** Each slot's song, and the entry it keeps (none: a new slot; see entry-order.ts). */
  readonly songs: readonly { readonly id: number; readonly entry?: number | undefined }[];
}

export { MAX_PATCH_OPERATIONS } from '../domain/json-patch.js';
export { editSchemas } from './playlist-edit.checks.js';

/**
 * RFC 6902 over `{"name", "songs": [{"id"}]}`: add, remove, replace, move, copy and test on `/name`, `/songs`,
 * `/songs/N`, `/songs/-` (where a song is put) and `/songs/N/id`. All or nothing. Malformed: a malformed patch, another
 * place, a misplaced `-`, a value of the wrong kind or a name create would refuse; a conflict: a failed `test` or an index
 * past the end. The songs limit is the writer's, on the playlist the patch leaves.
 */
export function applyJsonPatch(current: PlaylistDocument, patch: unknown, limits: Limits): PlaylistDocument {
  const operations = readJsonPatch(patch, limits);
  const state: State = {
    name: current.name,
    ids: current.songs.map((song) => song.id),
    entries: current.songs.map((song) => song.entry),
  };
  for (const operation of operations) {
    switch (operation.op) {
      case 'add':
        put(state, operation.path, operation.value, operation.source);
        break;
      case 'replace':
        replace(state, operation.path, operation.value, operation.source);
        break;
      case 'remove':
        songAt(state, operation.path.index, operation.source);
        state.ids.splice(operation.path.index, 1);
        state.entries.splice(operation.path.index, 1);
        break;
      case 'test':
        test(state, operation.path, operation.value, operation.source);
        break;
      case 'move': {
        // A move keeps the slot's entry.
        const id = songAt(state, operation.from.index, operation.source);
        const [entry] = state.entries.splice(operation.from.index, 1);
        state.ids.splice(operation.from.index, 1);
        put(state, operation.path, id, operation.source, ' once the moved song is taken out', entry);
        break;
      }
      case 'copy':
        put(state, operation.path, read(state, operation.from, operation.source), operation.source);
        break;
    }
  }
  return edited(state);
}

/** A merge patch as its route's schema (create's rules for each member) lets it through. */
export interface MergePatch {
  readonly name?: string;
  readonly songIds?: readonly number[];
}

/**
 * RFC 7396 over a partial `newPlaylist`, `{"name"?, "songIds"?}`: the members sent replace the playlist's (a `null`
 * member never gets past the schema, as neither the name nor the songs can be removed). The songs limit is the writer's.
 */
export function applyMergePatch(current: PlaylistDocument, patch: MergePatch): PlaylistDocument {
  const { name, songIds } = patch;
  if (songIds === undefined) return edited({ name: name ?? current.name, ...slotsOf(current) });
  return edited({ name: name ?? current.name, ids: [...songIds], entries: songIds.map(() => undefined) });
}

/**
 * The songs inserted before `position` (0-based), or after the last song without one. A position past the end is
 * a conflict, as a JSON Patch `add` at an index past the end is: the request is well formed, and whether the position
 * exists depends on the playlist as it is now.
 */
export function insertSongs(
  current: PlaylistDocument,
  songIds: readonly number[],
  position: number | undefined,
): PlaylistDocument {
  const { ids, entries } = slotsOf(current);
  const at = position ?? ids.length;
  if (at > ids.length) {
    throw conflict(
      `"position" ${at} is past the end: the playlist has ${ids.length} songs (${ids.length} or no position appends).`,
    );
  }
  ids.splice(at, 0, ...songIds);
  entries.splice(at, 0, ...songIds.map(() => undefined));
  return edited({ name: current.name, ids, entries });
}

/** The name, and each slot's song and entry (undefined: a new slot), side by side. */
interface State {
  name: string;
  ids: number[];
  entries: (number | undefined)[];
}

const slotsOf = (document: PlaylistDocument) => ({
  ids: document.songs.map((song) => song.id),
  entries: document.songs.map((song) => song.entry),
});

function edited(state: State): PlaylistDocument {
  return { name: state.name, songs: state.ids.map((id, i) => ({ id, entry: state.entries[i] })) };
}

/** `add`: a new song goes before the index (or last for `-`); a name, the songs or an id is replaced. */
function put(state: State, place: Place, value: Value, source: Source, note = '', entry?: number): void {
  if (place.kind === 'song') {
    const at = place.index === '-' ? state.ids.length : place.index;
    if (at > state.ids.length) {
      throw conflict(
        `${describe(source)}: index ${at} is past the end; the playlist has ${songs(state.ids.length)}${note} ("/songs/-" appends).`,
      );
    }
    state.ids.splice(at, 0, asNumber(value));
    state.entries.splice(at, 0, entry);
  } else {
    replace(state, place, value, source);
  }
}

function replace(state: State, place: ExistingPlace, value: Value, source: Source): void {
  switch (place.kind) {
    case 'name':
      state.name = asString(value);
      break;
    case 'songs':
      state.ids = [...asIds(value)];
      state.entries = state.ids.map(() => undefined);
      break;
    case 'song':
    case 'songId':
      // Another song in a slot is a new slot.
      songAt(state, place.index, source);
      state.ids[place.index] = asNumber(value);
      state.entries[place.index] = undefined;
      break;
  }
}

function read(state: State, place: ExistingPlace, source: Source): Value {
  switch (place.kind) {
    case 'name':
      return state.name;
    case 'songs':
      return state.ids;
    case 'song':
    case 'songId':
      return songAt(state, place.index, source);
  }
}

function test(state: State, place: ExistingPlace, expected: Value, source: Source): void {
  const actual = read(state, place, source);
  if (same(actual, expected)) return;
  const what =
    place.kind === 'name'
      ? `the name is ${JSON.stringify(actual)}`
      : place.kind === 'songs'
        ? `the playlist has ${songs(state.ids.length)} and ${difference(asIds(actual), asIds(expected))}`
        : `the song at index ${place.index} is song ${String(actual)}`;
  throw conflict(`${describe(source)}: the test failed; at that point ${what}.`);
}

/** The id of the song at this index; a conflict past the end. */
function songAt(state: State, index: number, source: Source): number {
  const id = state.ids[index];
  if (id === undefined) {
    throw conflict(
      `${describe(source)}: there is no song at index ${index}; at that point the playlist has ${songs(state.ids.length)}.`,
    );
  }
  return id;
}

function same(a: Value, b: Value): boolean {
  if (typeof a !== 'object' || typeof b !== 'object') return a === b;
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function difference(actual: readonly number[], expected: readonly number[]): string {
  if (actual.length !== expected.length) return `the test expects ${songs(expected.length)}`;
  const i = actual.findIndex((id, index) => id !== expected[index]);
  return `the song at index ${i} is song ${String(actual[i])}, not ${String(expected[i])}`;
}

const songs = (count: number): string => `${count} song${count === 1 ? '' : 's'}`;

// The reader gives each operation values of its place's kind; these only tell TypeScript which one it is.
function asString(value: Value): string {
  if (typeof value !== 'string') throw new Error('A name must be a string.');
  return value;
}
function asNumber(value: Value): number {
  if (typeof value !== 'number') throw new Error('A song id must be a number.');
  return value;
}
function asIds(value: Value): readonly number[] {
  if (typeof value !== 'object') throw new Error('The songs must be a list of ids.');
  return value;
}

// Reading a JSON Patch.

/**
 * A JSON Patch (RFC 6902) read into operations over the playlist document `{"name", "songs": [{"id"}]}`, before
 * anything is applied: everything wrong with the patch itself is malformed, whatever the playlist holds, so that
 * applying it can fail only on the playlist's state (a conflict).
 */

/** A place in the document that holds a value, as a JSON Pointer names it. */
type ExistingPlace =
  | { readonly kind: 'name' }
  | { readonly kind: 'songs' }
  | ExistingSong
  | { readonly kind: 'songId'; readonly index: number };
interface ExistingSong {
  readonly kind: 'song';
  readonly index: number;
}
/** `/songs/-`, the place after the last song: only somewhere to put one. */
interface AfterLastSong {
  readonly kind: 'song';
  readonly index: '-';
}
type Place = ExistingPlace | AfterLastSong;

/** What a place holds: the name (a string), the songs (their ids, in order), or a song or its id (a number). */
type Value = string | number | readonly number[];

/** Where an operation is in the patch and what it says, for messages: `patch[2] (move from "/songs/0" to "/songs/-")`. */
interface Source {
  readonly index: number;
  readonly op?: Op;
  readonly path?: string;
  readonly from?: string;
}

type Operation = { readonly source: Source } & (
  | { readonly op: 'add'; readonly path: Place; readonly value: Value }
  | { readonly op: 'replace' | 'test'; readonly path: ExistingPlace; readonly value: Value }
  | { readonly op: 'remove'; readonly path: ExistingSong }
  | { readonly op: 'move'; readonly from: ExistingSong; readonly path: ExistingSong | AfterLastSong }
  | { readonly op: 'copy'; readonly from: ExistingPlace; readonly path: Place }
);

const OPS = ['add', 'remove', 'replace', 'move', 'copy', 'test'] as const;
type Op = (typeof OPS)[number];

const PLACES = '"/name", "/songs", "/songs/N", "/songs/-" or "/songs/N/id"';
const DASH = '"-" is the place after the last song: only add, or the "path" of move and copy, can put a song there';

const NOUNS: Record<Place['kind'], string> = {
  name: "the playlist's name",
  songs: 'the songs',
  song: 'a song',
  songId: "a song's id",
};

/** How a message names an operation; built only when one fails, as most never do. */
function describe(source: Source): string {
  const at = `patch[${source.index}]`;
  if (source.op === undefined) return at;
  if (source.path === undefined) return `${at} (${source.op})`;
  if (source.from === undefined) return `${at} (${source.op} ${show(source.path)})`;
  return `${at} (${source.op} from ${show(source.from)} to ${show(source.path)})`;
}

const bad = (source: Source, problem: string) => malformed(`${describe(source)}: ${problem}`);

/** The operations of a patch, each checked against the document's shape and create's rules; malformed otherwise. */
function readJsonPatch(patch: unknown, limits: Limits): Operation[] {
  if (!Array.isArray(patch)) throw malformed('A JSON Patch must be a JSON array of operations.');
  if (patch.length > MAX_PATCH_OPERATIONS) {
    throw malformed(
      `A JSON Patch may hold at most ${MAX_PATCH_OPERATIONS} operations; this one holds ${patch.length}.`,
    );
  }
  const checks = editChecks(limits);
  const operations: Operation[] = [];
  for (let index = 0; index < patch.length; index += 1) operations.push(readOperation(patch[index], index, checks));
  return operations;
}

function readOperation(item: unknown, index: number, checks: EditChecks): Operation {
  if (!isObject(item)) {
    throw malformed(`patch[${index}] must be a JSON object with "op" and "path".`);
  }
  // Members an operation does not define are ignored, as RFC 6902 section 4 requires (its example A.11).
  const { op, path: pathText, from: fromText } = item;
  if (op === undefined) throw bad({ index }, '"op" is required.');
  if (!isOp(op)) throw bad({ index }, `"op" must be one of ${OPS.join(', ')}.`);
  if (pathText === undefined) throw bad({ index, op }, '"path" is required.');
  if (typeof pathText !== 'string') throw bad({ index, op }, '"path" must be a string (a JSON Pointer).');
  const moving = op === 'move' || op === 'copy';
  let fromPointer = '';
  if (moving) {
    if (fromText === undefined) throw bad({ index, op }, '"from" is required.');
    if (typeof fromText !== 'string') throw bad({ index, op }, '"from" must be a string (a JSON Pointer).');
    fromPointer = fromText;
  }
  const source: Source = { index, op, path: pathText, ...(moving ? { from: fromPointer } : {}) };
  const path = readPlace(pathText, 'path', source);
  if ((op === 'add' || op === 'replace' || op === 'test') && !Object.hasOwn(item, 'value')) {
    throw bad(source, '"value" is required.');
  }

  switch (op) {
    case 'add':
      return { op, source, path, value: readValue(item.value, path.kind, source, checks) };
    case 'replace':
    case 'test':
      return {
        op,
        source,
        path: existing(path, 'path', source),
        value: readValue(item.value, path.kind, source, checks),
      };
    case 'remove': {
      const target = existing(path, 'path', source);
      if (target.kind !== 'song') {
        throw bad(source, `${NOUNS[target.kind]} cannot be removed; ${KEEP[target.kind]}.`);
      }
      return { op, source, path: target };
    }
    case 'move': {
      const from = existing(readPlace(fromPointer, 'from', source), 'from', source);
      if (from.kind !== 'song') {
        throw bad(source, `only a song ("/songs/N") can be moved; moving ${NOUNS[from.kind]} would remove it.`);
      }
      if (path.kind !== 'song') throw bad(source, 'a song can only be moved to "/songs/N" or "/songs/-".');
      return { op, source, from, path };
    }
    case 'copy': {
      const from = existing(readPlace(fromPointer, 'from', source), 'from', source);
      if (from.kind !== path.kind) {
        throw bad(source, `${NOUNS[from.kind]} cannot be copied to where ${NOUNS[path.kind]} belongs.`);
      }
      return { op, source, from, path };
    }
  }
}

const KEEP: Record<'name' | 'songs' | 'songId', string> = {
  name: 'replace it instead',
  songs: 'replace them with [] to empty the playlist',
  songId: 'remove the song ("/songs/N") instead',
};

/** A JSON Pointer (RFC 6901) read into a place of the document; malformed for bad syntax or any other place. */
function readPlace(pointer: string, member: 'path' | 'from', source: Source): Place {
  if (!pointer.startsWith('/')) throw bad(source, `"${member}" must be a JSON Pointer to one of ${PLACES}.`);
  let tokens = pointer.split('/');
  if (pointer.includes('~')) {
    if (/~(?![01])/.test(pointer)) {
      throw bad(source, `"${member}" has a "~" that is not "~0" or "~1", the only escapes of a JSON Pointer.`);
    }
    tokens = tokens.map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
  }
  // tokens[0] is the empty text before the first "/".
  const [, first, second, third] = tokens;
  if (tokens.length === 2 && first === 'name') return { kind: 'name' };
  if (tokens.length === 2 && first === 'songs') return { kind: 'songs' };
  if (first === 'songs' && second !== undefined && (tokens.length === 3 || (tokens.length === 4 && third === 'id'))) {
    const index = readIndex(second, member, source);
    if (tokens.length === 3) return { kind: 'song', index };
    if (index === '-') throw bad(source, `"/songs/-/id" names no song; ${DASH}.`);
    return { kind: 'songId', index };
  }
  throw bad(source, `"${member}" must be one of ${PLACES}.`);
}

function readIndex(token: string, member: string, source: Source): number | '-' {
  if (token === '-') return '-';
  if (/^(0|[1-9][0-9]*)$/.test(token)) return Number(token);
  if (/^0[0-9]+$/.test(token)) {
    throw bad(source, `"${member}" has the index ${show(token)}; leading zeros are not allowed.`);
  }
  throw bad(source, `"${member}" has ${show(token)} where a song's index (0, 1, …) or "-" belongs.`);
}

/** `/songs/-` only where an operation puts a song; malformed where it would have to read or replace one. */
function existing(place: Place, member: 'path' | 'from', source: Source): ExistingPlace {
  if (isAfterLast(place)) throw bad(source, `"${member}" cannot be "/songs/-"; ${DASH}.`);
  return place;
}

function isAfterLast(place: Place): place is AfterLastSong {
  return place.kind === 'song' && place.index === '-';
}

/**
 * A value for a place of this kind, checked as create checks a name or a song id (a name in a `test` but for
 * `x-visible`, see `EditChecks.testedName`). A song is `{"id": N}` and
 * nothing else, in a `test` as anywhere: title and artist come from the catalog, so a member beside `id` is refused
 * rather than ignored (a `test` that passed while the title it carried differed would confirm what is not so).
 */
function readValue(value: unknown, kind: Place['kind'], source: Source, checks: EditChecks): Value {
  const extra =
    kind === 'song'
      ? hasMoreThanId(value)
        ? 'value'
        : undefined
      : kind === 'songs' && Array.isArray(value)
        ? firstWithMoreThanId(value)
        : undefined;
  if (extra !== undefined) {
    throw bad(source, `"${extra}" must be {"id": N} only; a song's title and artist come from the catalog.`);
  }
  const problem = (source.op === 'test' && kind === 'name' ? checks.testedName : checks.value[kind])({ value });
  if (problem !== undefined) throw bad(source, problem);
  switch (kind) {
    case 'name':
      return value as string;
    case 'songId':
      return value as number;
    case 'song':
      return (value as { id: number }).id;
    case 'songs':
      return (value as { id: number }[]).map((song) => song.id);
  }
}

function hasMoreThanId(song: unknown): boolean {
  if (!isObject(song)) return false;
  for (const key in song) if (key !== 'id') return true;
  return false;
}

function firstWithMoreThanId(songs: readonly unknown[]): string | undefined {
  const index = songs.findIndex(hasMoreThanId);
  return index === -1 ? undefined : `value[${index}]`;
}

function isOp(op: unknown): op is Op {
  return typeof op === 'string' && (OPS as readonly string[]).includes(op);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A pointer or token as a message quotes it: JSON-quoted, and cut short if long. */
function show(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}
