import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { MAX_PATCH_OPERATIONS, applyJsonPatch } from '../playlists/playlist-edit.operations.js';
import { EditSearch } from './myers.js';
import { DIFF_BOUNDS, diffPlaylists, stepDiff, type Operation, type PlaylistVersion } from './diff.js';

const defaults = loadConfig({}).limits;
const wide = { ...defaults, songsMax: 100_000 };

const version = (name: string, ...songs: number[]): PlaylistVersion => ({ name, songs });

/** The patch applied by the service's own JSON Patch reader and applier, read from its JSON text as PATCH would. */
function apply(from: PlaylistVersion, patch: readonly Operation[]): PlaylistVersion {
  const applied = applyJsonPatch(
    { name: from.name, songs: from.songs.map((id) => ({ id })) },
    JSON.parse(JSON.stringify(patch)),
    from.songs.length > defaults.songsMax / 2 ? wide : defaults,
  );
  return { name: applied.name, songs: applied.songs.map((song) => song.id) };
}

/** Songs removed plus songs added in the shortest edit, by the textbook longest common subsequence table. */
function distance(a: readonly number[], b: readonly number[]): number {
  let previous = new Array<number>(b.length + 1).fill(0);
  for (const id of a) {
    const row = [0];
    for (let j = 0; j < b.length; j += 1) {
      row.push(id === b[j] ? previous[j]! + 1 : Math.max(previous[j + 1]!, row[j]!));
    }
    previous = row;
  }
  return a.length + b.length - 2 * previous[b.length]!;
}

/** The diff, checked to turn `from` into `to` within the bound on its length (`edits`: the distance, if known). */
function diff(from: PlaylistVersion, to: PlaylistVersion, edits = distance(from.songs, to.songs)): Operation[] {
  const patch = diffPlaylists(from, to);
  expect(apply(from, patch)).toEqual(to);
  const bound = (from.name === to.name ? 0 : 1) + edits;
  expect(patch.length).toBeLessThanOrEqual(bound);
  return patch;
}

describe('diffPlaylists', () => {
  it('answers [] for the same version', () => {
    expect(diff(version('Mix', 1, 2, 2, 3), version('Mix', 1, 2, 2, 3))).toEqual([]);
    expect(diff(version('Mix'), version('Mix'))).toEqual([]);
  });

  it('renames with one replace of /name', () => {
    expect(diff(version('Mix', 1, 2), version('Road trip', 1, 2))).toEqual([
      { op: 'replace', path: '/name', value: 'Road trip' },
    ]);
  });

  it('appends, inserts and removes one song with one operation', () => {
    expect(diff(version('Mix', 1, 2, 3), version('Mix', 1, 2, 3, 4))).toEqual([
      { op: 'add', path: '/songs/3', value: { id: 4 } },
    ]);
    expect(diff(version('Mix', 1, 2, 3), version('Mix', 1, 9, 2, 3))).toEqual([
      { op: 'add', path: '/songs/1', value: { id: 9 } },
    ]);
    expect(diff(version('Mix', 1, 2, 3), version('Mix', 1, 3))).toEqual([{ op: 'remove', path: '/songs/1' }]);
  });

  it('changes one song for another with one replace', () => {
    expect(diff(version('Mix', 1, 2, 3), version('Mix', 1, 7, 3))).toEqual([
      { op: 'replace', path: '/songs/1', value: { id: 7 } },
    ]);
  });

  it('moves a song with a remove and an add, each index as the playlist is at that moment', () => {
    expect(diff(version('Mix', 1, 2, 3, 4, 5), version('Mix', 2, 3, 4, 1, 5))).toEqual([
      { op: 'remove', path: '/songs/0' },
      { op: 'add', path: '/songs/3', value: { id: 1 } },
    ]);
  });

  it('removes several songs last first, so each index still names its song', () => {
    expect(diff(version('Mix', 1, 2, 3, 4, 5), version('Mix', 1, 5))).toEqual([
      { op: 'remove', path: '/songs/3' },
      { op: 'remove', path: '/songs/2' },
      { op: 'remove', path: '/songs/1' },
    ]);
  });

  it('fills an empty playlist and empties a full one, with a rename first', () => {
    expect(diff(version('Mix'), version('New', 4, 5, 4))).toEqual([
      { op: 'replace', path: '/name', value: 'New' },
      { op: 'add', path: '/songs/0', value: { id: 4 } },
      { op: 'add', path: '/songs/1', value: { id: 5 } },
      { op: 'add', path: '/songs/2', value: { id: 4 } },
    ]);
    expect(diff(version('Mix', 4, 5, 4), version('Mix'))).toEqual([
      { op: 'remove', path: '/songs/2' },
      { op: 'remove', path: '/songs/1' },
      { op: 'remove', path: '/songs/0' },
    ]);
  });

  it('keeps repeats of the same song that both versions have', () => {
    expect(diff(version('Mix', 7, 7, 7, 7), version('Mix', 7, 7, 7))).toEqual([{ op: 'remove', path: '/songs/3' }]);
    expect(diff(version('Mix', 7, 8, 7, 8, 7), version('Mix', 8, 7, 8, 7, 8))).toHaveLength(2);
  });

  it('finds one change anywhere in the longest playlist', () => {
    const songs = Array.from({ length: 100_000 }, (_, i) => (i % 997) + 1);
    const removed = songs.toSpliced(50_000, 1);
    const inserted = removed.toSpliced(70_000, 0, 5);
    expect(diff(version('Mix', ...songs), version('Mix', ...removed), 1)).toEqual([
      { op: 'remove', path: '/songs/50000' },
    ]);
    expect(diff(version('Mix', ...removed), version('Mix', ...inserted), 1)).toEqual([
      { op: 'add', path: '/songs/70000', value: { id: 5 } },
    ]);
  });

  it('past the distance cut-off, replaces the songs in one operation', () => {
    const songs = Array.from({ length: 600 }, (_, i) => i + 1);
    const patch = diff(version('Mix', ...songs), version('Mix', ...songs.toReversed()));
    expect(patch).toEqual([{ op: 'replace', path: '/songs', value: songs.toReversed().map((id) => ({ id })) }]);
  });

  it('past the work cut-off, replaces the songs in one operation, after the rename', () => {
    const from = version('Mix', 1, 2, 3, 4, 5, 6, 7, 8);
    const to = version('New', 2, 1, 4, 3, 6, 5, 8, 7);
    const patch = diffPlaylists(from, to, { ...DIFF_BOUNDS, work: 3 });
    expect(patch).toEqual([
      { op: 'replace', path: '/name', value: 'New' },
      { op: 'replace', path: '/songs', value: to.songs.map((id) => ({ id })) },
    ]);
    expect(apply(from, patch)).toEqual(to);
    expect(diff(from, to).map((operation) => operation.path)).not.toContain('/songs');
  });

  it('never answers more operations than a PATCH accepts', () => {
    const from = version('Mix', ...Array.from({ length: 1000 }, (_, i) => 2 * i + 1));
    const to = version('New', ...Array.from({ length: 1000 }, (_, i) => 2 * i + 2));
    const patch = diff(from, to);
    expect(patch.length).toBeLessThanOrEqual(MAX_PATCH_OPERATIONS);
  });

  it('turns any version into any other, within songs removed plus added plus one for the name', () => {
    // Few distinct ids, so that the lists repeat songs and share long runs; edits of a list as well as strangers.
    const ids = (max: number) => fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: max });
    const edited = ids(300).chain((songs) =>
      fc.tuple(
        fc.constant(songs),
        fc
          .array(fc.tuple(fc.nat(), fc.nat(3), ids(4)), { maxLength: 12 })
          .map((edits) =>
            edits.reduce(
              (list, [at, remove, insert]) => list.toSpliced(at % (list.length + 1), remove, ...insert),
              songs,
            ),
          ),
      ),
    );
    fc.assert(
      fc.property(fc.oneof(edited, fc.tuple(ids(300), ids(300))), fc.boolean(), ([a, b], rename) => {
        diff(version('Mix', ...a), version(rename ? 'New' : 'Mix', ...b));
        // Paused every few steps, the search goes on where it was and finds the same edit.
        const whole = new EditSearch(a, b, DIFF_BOUNDS.distance, DIFF_BOUNDS.work);
        const paused = new EditSearch(a, b, DIFF_BOUNDS.distance, DIFF_BOUNDS.work);
        let progress = paused.run(7);
        for (let until = 14; progress === 'paused'; until += 7) progress = paused.run(until);
        expect(progress).toBe(whole.run());
        expect(paused.hunks).toEqual(whole.hunks);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the patch of one step of the history', () => {
  it('turns the version before into the next from the splice alone, as short as the whole lists give', () => {
    const songs = fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 40 });
    fc.assert(
      fc.property(songs, songs, fc.nat(), fc.nat(), fc.boolean(), (before, added, start, count, renamed) => {
        const at = start % (before.length + 1);
        // A run inserted, a run removed, or one song replaced: the splices a step answers alone.
        const kind = count % 3;
        const deleted =
          kind === 0 ? 0 : kind === 1 ? Math.min(count % 7, before.length - at) : Math.min(1, before.length - at);
        const inserted = kind === 1 ? [] : kind === 2 && deleted === 1 ? [7] : added;
        const after = [...before.slice(0, at), ...inserted, ...before.slice(at + deleted)];
        const [from, to] = [version('A', ...before), version(renamed ? 'B' : 'A', ...after)];
        const patch = stepDiff({ fromName: from.name, toName: to.name, at, deleted, inserted });
        expect(patch).toBeDefined();
        expect(apply(from, patch!)).toEqual(to);
        expect(patch!.length).toBe(diffPlaylists(from, to).length);
      }),
    );
  });

  it('leaves a move or a run replaced to the whole lists', () => {
    expect(stepDiff({ fromName: 'A', toName: 'A', at: 0, deleted: 3, inserted: [2, 3, 1] })).toBeUndefined();
    expect(stepDiff({ fromName: 'A', toName: 'A', at: 0, deleted: 2, inserted: [5] })).toBeUndefined();
  });
});
