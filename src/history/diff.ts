import { MAX_PATCH_OPERATIONS, type JsonPatchOperation } from '../domain/json-patch.js';
import { EditSearch } from './myers.js';
import type { RevisionStep } from './revision.repository.js';

/**
 * What changed between two versions of a playlist, as the JSON Patch (RFC 6902) over `{"name", "songs": [{"id"}]}`
 * that turns the first into the second when sent with PATCH to a playlist at the first. Pure: no database, no HTTP.
 *
 * The patch is small when the change is small: a rename is one `replace` of `/name`, one inserted song one `add`, one
 * removed song one `remove`, one song changed for another one `replace` of `/songs/N`, a moved song a `remove` and an
 * `add`. It never holds more operations than songs removed plus songs added (the shortest such edit of the list)
 * plus one for the name, and never more than a PATCH accepts (MAX_PATCH_OPERATIONS). Operations run front to back,
 * each index as the playlist is at that moment: the songs before it are already those of the second version.
 *
 * How: Myers' O(ND) search in linear space (see myers.ts), in O(songs) memory.
 *
 * The cut-off: the search stops once the edit is known to need more than MAX_PATCH_OPERATIONS songs removed and
 * added (no patch of removes and adds would then be accepted), or once it has done `DIFF_BOUNDS.work` steps (a step
 * is one diagonal tried or one equal song passed; many repeats of a song make many). Past the cut-off the patch is
 * one `replace` of `/songs` with the second version's songs (after the rename, if any): still exact, one operation,
 * so within every bound on their number, but as long as the playlist rather than the change.
 *
 * The time is therefore at most proportional to the songs plus 2 million steps: measured by `npm run bench:diff`
 * (docs/benchmarks.md), up to about 10 ms of CPU at 1 000 or 100 000 songs, against well under 1 ms for a change
 * of a few songs. As that is more than a request should hold the event loop, the route computes the diff of long
 * versions on a worker thread (workers/worker-pool.ts).
 */

/** A version as the diff needs it: its name and its song ids in order. */
export interface PlaylistVersion {
  readonly name: string;
  readonly songs: readonly number[];
}

export type Operation = JsonPatchOperation;

export interface DiffBounds {
  /** Songs removed plus songs added past which the search stops. */
  readonly distance: number;
  /** Steps past which the search stops. */
  readonly work: number;
}

export const DIFF_BOUNDS: DiffBounds = { distance: MAX_PATCH_OPERATIONS, work: 2_000_000 };

/** The patch that turns `from` into `to`, `[]` when they are the same, computed at once. */
export function diffPlaylists(from: PlaylistVersion, to: PlaylistVersion, bounds = DIFF_BOUNDS): Operation[] {
  const search = new EditSearch(from.songs, to.songs, bounds.distance, bounds.work);
  return patch(from, to, search.run() === 'done' ? search.hunks : undefined);
}

/**
 * The patch of one step of the history, from its splice alone (history/revision.repository.ts, `revisionStep`): a run
 * of songs inserted or removed, or one song replaced, as `diffPlaylists` would find it on the two whole lists, at the
 * cost of the change. Undefined for any other splice (a move, a run replaced), which takes both lists to diff well.
 */
export function stepDiff(step: RevisionStep): Operation[] | undefined {
  const { at, deleted, inserted } = step;
  const oneForOne = deleted === 1 && inserted.length === 1;
  if ((deleted > 0 && inserted.length > 0 && !oneForOne) || deleted + inserted.length > MAX_PATCH_OPERATIONS) {
    return undefined;
  }
  const to: number[] = [];
  inserted.forEach((song, i) => (to[at + i] = song));
  const operations: Operation[] = [];
  if (step.fromName !== step.toName) operations.push({ op: 'replace', path: '/name', value: step.toName });
  writeHunks([at, at + deleted, at, at + inserted.length], to, operations);
  return operations;
}

/** The operations for these hunks, or one `replace` of the songs without them (past the cut-off). */
function patch(from: PlaylistVersion, to: PlaylistVersion, hunks: readonly number[] | undefined): Operation[] {
  const operations: Operation[] = [];
  if (from.name !== to.name) operations.push({ op: 'replace', path: '/name', value: to.name });
  const songs = operations.length;
  if (hunks !== undefined) writeHunks(hunks, to.songs, operations);
  if (hunks === undefined || operations.length > MAX_PATCH_OPERATIONS) {
    operations.length = songs;
    operations.push(replaceAll(to.songs));
  }
  return operations;
}

const replaceAll = (songs: readonly number[]): Operation => ({
  op: 'replace',
  path: '/songs',
  value: songs.map((id) => ({ id })),
});

/**
 * Each hunk removes `from[aStart, aEnd)` and puts `to[bStart, bEnd)` in its place; before it the playlist already
 * holds `to[0, bStart)`, so that is where it begins. Songs changed one for one are replaced, the rest of the removed
 * songs taken out last first, the rest of the added put in order.
 */
function writeHunks(hunks: readonly number[], to: readonly number[], operations: Operation[]): void {
  for (let h = 0; h < hunks.length; h += 4) {
    const removed = hunks[h + 1]! - hunks[h]!;
    const start = hunks[h + 2]!;
    const added = hunks[h + 3]! - start;
    const replaced = Math.min(removed, added);
    for (let i = 0; i < replaced; i += 1) {
      operations.push({ op: 'replace', path: `/songs/${start + i}`, value: { id: to[start + i]! } });
    }
    for (let i = removed - 1; i >= replaced; i -= 1) operations.push({ op: 'remove', path: `/songs/${start + i}` });
    for (let i = replaced; i < added; i += 1) {
      operations.push({ op: 'add', path: `/songs/${start + i}`, value: { id: to[start + i]! } });
    }
  }
}
