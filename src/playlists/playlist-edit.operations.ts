import type { Limits } from '../config.js';
import { conflict } from './playlist-edit.checks.js';
import {
  describe,
  readJsonPatch,
  type ExistingPlace,
  type Place,
  type Source,
  type Value,
} from './playlist-edit.patch.js';

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
