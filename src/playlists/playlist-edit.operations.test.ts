import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig, type Limits } from '../config.js';
import { EditRefused } from './playlist-edit.checks.js';
import {
  MAX_PATCH_OPERATIONS,
  applyJsonPatch,
  applyMergePatch,
  insertSongs,
  type MergePatch,
  type PlaylistDocument,
} from './playlist-edit.operations.js';

const limits = loadConfig({}).limits;

/** A playlist document, frozen all the way down: an edit that modified its input would throw. */
function playlist(name: string, ...ids: number[]): PlaylistDocument {
  return Object.freeze({ name, songs: Object.freeze(ids.map((id) => Object.freeze({ id }))) });
}

const ids = (document: PlaylistDocument): number[] => document.songs.map((song) => song.id);

const patch = (document: PlaylistDocument, operations: unknown, with_: Limits = limits) =>
  applyJsonPatch(document, operations, with_);

/** The refusal an edit throws, with the status the editor answers it with; fails the test otherwise. */
function failure(edit: () => unknown): { statusCode: number; message: string } {
  try {
    edit();
  } catch (error) {
    if (error instanceof EditRefused) {
      return { statusCode: error.reason === 'malformed' ? 400 : 409, message: error.message };
    }
    throw error;
  }
  throw new Error('The edit succeeded where it should have failed.');
}

function expectRefused(edit: () => unknown, status: number, message: RegExp): void {
  const error = failure(edit);
  expect(error.statusCode, error.message).toBe(status);
  expect(error.message).toMatch(message);
}

describe('applyJsonPatch: RFC 6902 appendix A, adapted to {"name", "songs": [{"id"}]}', () => {
  const mix = playlist('Mix', 1, 2, 3, 4);

  it('A.1 add to an object member: /name exists, so add replaces it; a new member is refused', () => {
    expect(patch(mix, [{ op: 'add', path: '/name', value: 'Other' }]).name).toBe('Other');
    expectRefused(() => patch(mix, [{ op: 'add', path: '/baz', value: 'qux' }]), 400, /patch\[0\] .*"path" must be/);
  });

  it('A.2 add an array element', () => {
    expect(ids(patch(mix, [{ op: 'add', path: '/songs/1', value: { id: 9 } }]))).toEqual([1, 9, 2, 3, 4]);
  });

  it('A.3 remove an object member: the name cannot be removed', () => {
    expectRefused(() => patch(mix, [{ op: 'remove', path: '/name' }]), 400, /name cannot be removed/);
  });

  it('A.4 remove an array element', () => {
    expect(ids(patch(mix, [{ op: 'remove', path: '/songs/1' }]))).toEqual([1, 3, 4]);
  });

  it('A.5 replace a value', () => {
    expect(patch(mix, [{ op: 'replace', path: '/name', value: 'boo' }])).toEqual({ ...mix, name: 'boo' });
  });

  it('A.6 move an object member: moving an id away would leave a song without one', () => {
    const move = { op: 'move', from: '/songs/0/id', path: '/songs/1/id' };
    expectRefused(() => patch(mix, [move]), 400, /only a song .* can be moved/);
  });

  it('A.7 move an array element', () => {
    expect(ids(patch(mix, [{ op: 'move', from: '/songs/1', path: '/songs/3' }]))).toEqual([1, 3, 4, 2]);
  });

  it('A.8 test a value: success leaves the playlist as it was', () => {
    const tests = [
      { op: 'test', path: '/name', value: 'Mix' },
      { op: 'test', path: '/songs/1/id', value: 2 },
    ];
    expect(patch(mix, tests)).toEqual(mix);
  });

  it('A.9 test a value: failure is a 409 naming the operation', () => {
    expectRefused(
      () => patch(mix, [{ op: 'test', path: '/name', value: 'bar' }]),
      409,
      /^patch\[0\] \(test "\/name"\): the test failed; at that point the name is "Mix"\.$/,
    );
  });

  it('A.10 add a nested member object: refused, the document has no such place', () => {
    expectRefused(() => patch(mix, [{ op: 'add', path: '/child', value: { grandchild: {} } }]), 400, /"path"/);
  });

  it('A.11 members an operation does not define are ignored', () => {
    const operation = { op: 'add', path: '/songs/-', value: { id: 9 }, xyz: 123, from: '/name' };
    expect(ids(patch(mix, [operation]))).toEqual([1, 2, 3, 4, 9]);
    expect(ids(patch(mix, [{ op: 'remove', path: '/songs/0', value: { id: 5 } }]))).toEqual([2, 3, 4]);
  });

  it('A.12 add to a nonexistent target', () => {
    expectRefused(() => patch(mix, [{ op: 'add', path: '/baz/bat', value: 'qux' }]), 400, /"path" must be/);
  });

  it('A.13 a document with two "op" members: JSON parsing keeps the last, a remove of the name, refused', () => {
    const parsed: unknown = JSON.parse('[{ "op": "add", "path": "/name", "value": "qux", "op": "remove" }]');
    expectRefused(() => patch(mix, parsed), 400, /name cannot be removed/);
  });

  it('A.14 "~" escapes are undone after splitting, so "/songs~10" is one member, not "/songs/0"', () => {
    expectRefused(() => patch(mix, [{ op: 'remove', path: '/songs~10' }]), 400, /"path" must be one of/);
    expectRefused(() => patch(mix, [{ op: 'test', path: '/~01', value: 10 }]), 400, /"path" must be one of/);
  });

  it('A.15 comparing a string with a number: a value of the wrong type is a 400 here', () => {
    expectRefused(
      () => patch(mix, [{ op: 'test', path: '/songs/0/id', value: '1' }]),
      400,
      /"value" must be an integer/,
    );
  });

  it('A.16 add an array value: a song is one object, so an array is refused where a song goes', () => {
    const add = { op: 'add', path: '/songs/-', value: [{ id: 5 }, { id: 6 }] };
    expectRefused(() => patch(mix, [add]), 400, /"value" must be a JSON object/);
  });
});

describe('applyJsonPatch: each operation', () => {
  const mix = playlist('Mix', 5, 7, 5, 9, 5);

  it('add puts a song before an index, at the end with the length or "-", and replaces a name, an id or the songs', () => {
    expect(ids(patch(mix, [{ op: 'add', path: '/songs/0', value: { id: 1 } }]))).toEqual([1, 5, 7, 5, 9, 5]);
    expect(ids(patch(mix, [{ op: 'add', path: '/songs/5', value: { id: 1 } }]))).toEqual([5, 7, 5, 9, 5, 1]);
    expect(ids(patch(mix, [{ op: 'add', path: '/songs/-', value: { id: 1 } }]))).toEqual([5, 7, 5, 9, 5, 1]);
    expect(ids(patch(mix, [{ op: 'add', path: '/songs/1/id', value: 1 }]))).toEqual([5, 1, 5, 9, 5]);
    expect(ids(patch(mix, [{ op: 'add', path: '/songs', value: [{ id: 2 }, { id: 2 }] }]))).toEqual([2, 2]);
  });

  it('remove takes the song at the index, not another copy of it', () => {
    expect(ids(patch(mix, [{ op: 'remove', path: '/songs/2' }]))).toEqual([5, 7, 9, 5]);
    expect(ids(patch(mix, [{ op: 'remove', path: '/songs/4' }]))).toEqual([5, 7, 5, 9]);
    expect(ids(patch(playlist('One', 3), [{ op: 'remove', path: '/songs/0' }]))).toEqual([]);
  });

  it('replace changes a song, its id, the name or all the songs', () => {
    expect(ids(patch(mix, [{ op: 'replace', path: '/songs/2', value: { id: 1 } }]))).toEqual([5, 7, 1, 9, 5]);
    expect(ids(patch(mix, [{ op: 'replace', path: '/songs/4/id', value: 1 }]))).toEqual([5, 7, 5, 9, 1]);
    expect(ids(patch(mix, [{ op: 'replace', path: '/songs', value: [] }]))).toEqual([]);
    expect(patch(mix, [{ op: 'replace', path: '/name', value: ' Mix 2 ' }]).name).toBe(' Mix 2 ');
  });

  it('move takes the song at "from" and puts it before "path" once taken out, or last for "-"', () => {
    expect(ids(patch(mix, [{ op: 'move', from: '/songs/0', path: '/songs/2' }]))).toEqual([7, 5, 5, 9, 5]);
    expect(ids(patch(mix, [{ op: 'move', from: '/songs/3', path: '/songs/0' }]))).toEqual([9, 5, 7, 5, 5]);
    expect(ids(patch(mix, [{ op: 'move', from: '/songs/2', path: '/songs/-' }]))).toEqual([5, 7, 9, 5, 5]);
    expect(ids(patch(mix, [{ op: 'move', from: '/songs/0', path: '/songs/4' }]))).toEqual([7, 5, 9, 5, 5]);
  });

  it('move of a song onto itself changes nothing', () => {
    for (const index of [0, 2, 4]) {
      const move = { op: 'move', from: `/songs/${index}`, path: `/songs/${index}` };
      expect(patch(mix, [move])).toEqual(mix);
    }
  });

  it('copy puts a copy of a song, an id, the name or the songs where the same kind of value goes', () => {
    expect(ids(patch(mix, [{ op: 'copy', from: '/songs/1', path: '/songs/-' }]))).toEqual([5, 7, 5, 9, 5, 7]);
    expect(ids(patch(mix, [{ op: 'copy', from: '/songs/3', path: '/songs/0' }]))).toEqual([9, 5, 7, 5, 9, 5]);
    expect(ids(patch(mix, [{ op: 'copy', from: '/songs/3/id', path: '/songs/0/id' }]))).toEqual([9, 7, 5, 9, 5]);
    expect(patch(mix, [{ op: 'copy', from: '/name', path: '/name' }])).toEqual(mix);
    expect(patch(mix, [{ op: 'copy', from: '/songs', path: '/songs' }])).toEqual(mix);
  });

  it('test compares the name exactly, a song or the songs by id, and an id', () => {
    const passing = [
      { op: 'test', path: '/name', value: 'Mix' },
      { op: 'test', path: '/songs/3', value: { id: 9 } },
      { op: 'test', path: '/songs/3/id', value: 9 },
      { op: 'test', path: '/songs', value: [5, 7, 5, 9, 5].map((id) => ({ id })) },
    ];
    expect(patch(mix, passing)).toEqual(mix);
    const failing: [unknown, RegExp][] = [
      [{ op: 'test', path: '/name', value: 'mix' }, /the name is "Mix"/],
      [{ op: 'test', path: '/name', value: 'Mix ' }, /the name is "Mix"/],
      [{ op: 'test', path: '/songs/3', value: { id: 5 } }, /the song at index 3 is song 9/],
      [{ op: 'test', path: '/songs/0/id', value: 7 }, /the song at index 0 is song 5/],
      [{ op: 'test', path: '/songs', value: [{ id: 5 }] }, /has 5 songs and the test expects 1 song\b/],
      [{ op: 'test', path: '/songs', value: [5, 7, 5, 9, 6].map((id) => ({ id })) }, /index 4 is song 5, not 6/],
    ];
    for (const [operation, message] of failing) expectRefused(() => patch(mix, [operation]), 409, message);
  });

  it('test of a song refuses title and artist rather than ignoring them', () => {
    const test = { op: 'test', path: '/songs/0', value: { id: 5, title: 'Song', artist: 'Artist' } };
    expectRefused(() => patch(mix, [test]), 400, /"value" must be \{"id": N\} only/);
    const whole = { op: 'test', path: '/songs', value: [{ id: 5 }, { id: 7, artist: 'A' }] };
    expectRefused(() => patch(mix, [whole]), 400, /"value\[1\]" must be \{"id": N\} only/);
  });

  it('applies operations in order, each on the result of the one before', () => {
    const operations = [
      { op: 'add', path: '/songs/-', value: { id: 1 } },
      { op: 'test', path: '/songs/5/id', value: 1 },
      { op: 'move', from: '/songs/5', path: '/songs/0' },
      { op: 'remove', path: '/songs/1' },
      { op: 'replace', path: '/name', value: 'Renamed' },
      { op: 'test', path: '/name', value: 'Renamed' },
    ];
    expect(patch(mix, operations)).toEqual(playlist('Renamed', 1, 7, 5, 9, 5));
  });

  it('an empty patch changes nothing', () => {
    expect(patch(mix, [])).toEqual(mix);
  });

  it('answers a playlist of its own: songs as {id} only, sharing nothing with the input', () => {
    const withTitles = { name: 'T', songs: [{ id: 1, title: 'A', artist: 'B' }] };
    const result = patch(withTitles, []);
    expect(result).toEqual({ name: 'T', songs: [{ id: 1 }] });
    expect(result.songs).not.toBe(withTitles.songs);
  });
});

describe('applyJsonPatch: all or nothing', () => {
  it('a failing operation leaves the input untouched and answers nothing', () => {
    const mix = playlist('Mix', 1, 2, 3);
    const before = structuredClone(mix);
    const operations = [
      { op: 'remove', path: '/songs/0' },
      { op: 'replace', path: '/name', value: 'Changed' },
      { op: 'add', path: '/songs/-', value: { id: 4 } },
      { op: 'test', path: '/songs/0/id', value: 1 },
    ];
    expectRefused(() => patch(mix, operations), 409, /^patch\[3\] .* at index 0 is song 2/);
    expect(mix).toEqual(before);
  });

  it('a malformed operation is a 400 even after one that would fail on the playlist', () => {
    const operations = [
      { op: 'test', path: '/name', value: 'Not the name' },
      { op: 'remove', path: '/songs/-' },
    ];
    expectRefused(() => patch(playlist('Mix', 1), operations), 400, /^patch\[1\] \(remove "\/songs\/-"\)/);
  });
});

describe('applyJsonPatch: 409 for an index past the end', () => {
  const mix = playlist('Mix', 1, 2, 3);
  const cases: [unknown, RegExp][] = [
    [{ op: 'add', path: '/songs/4', value: { id: 9 } }, /index 4 is past the end; the playlist has 3 songs/],
    [{ op: 'remove', path: '/songs/3' }, /no song at index 3; at that point the playlist has 3 songs/],
    [{ op: 'replace', path: '/songs/3', value: { id: 9 } }, /no song at index 3/],
    [{ op: 'replace', path: '/songs/3/id', value: 9 }, /no song at index 3/],
    [{ op: 'add', path: '/songs/3/id', value: 9 }, /no song at index 3/],
    [{ op: 'test', path: '/songs/3', value: { id: 9 } }, /no song at index 3/],
    [{ op: 'move', from: '/songs/3', path: '/songs/0' }, /no song at index 3/],
    [{ op: 'move', from: '/songs/0', path: '/songs/3' }, /index 3 is past the end; .* 2 songs once the moved song/],
    [{ op: 'copy', from: '/songs/3', path: '/songs/-' }, /no song at index 3/],
    [{ op: 'copy', from: '/songs/0', path: '/songs/4' }, /index 4 is past the end/],
    [{ op: 'remove', path: '/songs/99999999999999999999' }, /no song at index/],
  ];
  it.each(cases)('%j', (operation, message) => {
    expectRefused(() => patch(mix, [operation]), 409, message);
  });
});

describe('applyJsonPatch: 400 for a malformed patch, naming the operation', () => {
  const mix = playlist('Mix', 1, 2, 3);
  const cases: [unknown, RegExp][] = [
    // The operation itself
    [null, /patch\[2\] must be a JSON object/],
    [[], /patch\[2\] must be a JSON object/],
    ['add', /patch\[2\] must be a JSON object/],
    [{ path: '/name', value: 'x' }, /patch\[2\]: "op" is required/],
    [
      { op: 'Add', path: '/name', value: 'x' },
      /patch\[2\]: "op" must be one of add, remove, replace, move, copy, test/,
    ],
    [{ op: 'frob', path: '/name' }, /"op" must be one of/],
    [{ op: 1, path: '/name' }, /"op" must be one of/],
    [{ op: 'add', value: 'x' }, /patch\[2\] \(add\): "path" is required/],
    [{ op: 'add', path: 5, value: 'x' }, /"path" must be a string/],
    [{ op: 'add', path: '/name' }, /patch\[2\] \(add "\/name"\): "value" is required/],
    [{ op: 'replace', path: '/name' }, /"value" is required/],
    [{ op: 'test', path: '/name' }, /"value" is required/],
    [{ op: 'move', path: '/songs/0' }, /patch\[2\] \(move\): "from" is required/],
    [{ op: 'copy', from: ['/songs/0'], path: '/songs/0' }, /"from" must be a string/],
    // Pointers
    [{ op: 'remove', path: 'songs/0' }, /"path" must be a JSON Pointer/],
    [{ op: 'replace', path: '', value: {} }, /"path" must be a JSON Pointer/],
    [{ op: 'remove', path: '/songs/01' }, /"path" has the index "01"; leading zeros/],
    [{ op: 'remove', path: '/songs/00' }, /leading zeros/],
    [{ op: 'move', from: '/songs/007', path: '/songs/0' }, /"from" has the index "007"; leading zeros/],
    [{ op: 'remove', path: '/songs/1.0' }, /"path" has "1\.0" where a song's index/],
    [{ op: 'remove', path: '/songs/-1' }, /"-1" where a song's index/],
    [{ op: 'remove', path: '/songs/+1' }, /"\+1" where a song's index/],
    [{ op: 'remove', path: '/songs/ 1' }, /" 1" where a song's index/],
    [{ op: 'remove', path: '/songs/' }, /"" where a song's index/],
    [{ op: 'remove', path: '/songs/1e0' }, /where a song's index/],
    [{ op: 'test', path: '/na~2me', value: 'x' }, /"~0" or "~1"/],
    [{ op: 'test', path: '/name~', value: 'x' }, /"~0" or "~1"/],
    // Places outside the document
    [{ op: 'replace', path: '/songs/0/title', value: 'x' }, /"path" must be one of "\/name", "\/songs"/],
    [{ op: 'replace', path: '/songs/0/id/0', value: 1 }, /"path" must be one of/],
    [{ op: 'replace', path: '/name/0', value: 'x' }, /"path" must be one of/],
    [{ op: 'replace', path: '/Name', value: 'x' }, /"path" must be one of/],
    [{ op: 'replace', path: '/id', value: 5 }, /"path" must be one of/],
    [{ op: 'copy', from: '/id', path: '/name' }, /"from" must be one of/],
    // "-" where RFC 6902 has nothing to read or replace
    [{ op: 'remove', path: '/songs/-' }, /"path" cannot be "\/songs\/-"/],
    [{ op: 'replace', path: '/songs/-', value: { id: 1 } }, /"path" cannot be "\/songs\/-"/],
    [{ op: 'test', path: '/songs/-', value: { id: 1 } }, /"path" cannot be "\/songs\/-"/],
    [{ op: 'move', from: '/songs/-', path: '/songs/0' }, /"from" cannot be "\/songs\/-"/],
    [{ op: 'copy', from: '/songs/-', path: '/songs/0' }, /"from" cannot be "\/songs\/-"/],
    [{ op: 'add', path: '/songs/-/id', value: 1 }, /"\/songs\/-\/id" names no song/],
    // What cannot be removed, moved or copied there
    [{ op: 'remove', path: '/songs' }, /the songs cannot be removed; replace them with \[\]/],
    [{ op: 'remove', path: '/songs/0/id' }, /a song's id cannot be removed/],
    [{ op: 'move', from: '/name', path: '/songs/0' }, /only a song .* can be moved/],
    [{ op: 'move', from: '/songs', path: '/songs' }, /only a song .* can be moved/],
    [{ op: 'move', from: '/songs/0', path: '/name' }, /a song can only be moved to/],
    [{ op: 'move', from: '/songs/0', path: '/songs/1/id' }, /a song can only be moved to/],
    [{ op: 'copy', from: '/songs/0/id', path: '/songs/-' }, /a song's id cannot be copied to where a song belongs/],
    [{ op: 'copy', from: '/songs/0', path: '/songs/1/id' }, /a song cannot be copied to where a song's id belongs/],
    [{ op: 'copy', from: '/name', path: '/songs/-' }, /the playlist's name cannot be copied/],
    // Values of the wrong type
    [{ op: 'replace', path: '/name', value: 5 }, /"value" must be a string/],
    [{ op: 'replace', path: '/name', value: null }, /"value" must be a string/],
    [{ op: 'add', path: '/songs/-', value: 5 }, /"value" must be a JSON object/],
    [{ op: 'add', path: '/songs/-', value: {} }, /"id" is required/],
    [{ op: 'add', path: '/songs/-', value: { id: '1' } }, /"value\.id" must be an integer/],
    [{ op: 'add', path: '/songs/-', value: { id: 1.5 } }, /"value\.id" must be an integer/],
    [{ op: 'add', path: '/songs/-', value: { id: 0 } }, /"value\.id" must be at least 1/],
    [{ op: 'add', path: '/songs/-', value: { id: 2 ** 53 } }, /"value\.id" must be at most/],
    [{ op: 'add', path: '/songs/-', value: { id: 1, title: 'T' } }, /"value" must be \{"id": N\} only/],
    [{ op: 'replace', path: '/songs/0/id', value: { id: 1 } }, /"value" must be an integer/],
    [{ op: 'replace', path: '/songs', value: { id: 1 } }, /"value" must be an array/],
    [{ op: 'replace', path: '/songs', value: [1, 2] }, /"value\[0\]" must be a JSON object/],
    [{ op: 'replace', path: '/songs', value: [{ id: 1 }, { id: -2 }] }, /"value\[1\]\.id" must be at least 1/],
  ];
  it.each(cases)('%j', (operation, message) => {
    const operations = [{ op: 'test', path: '/name', value: 'Mix' }, { op: 'remove', path: '/songs/0' }, operation];
    expectRefused(() => patch(mix, operations), 400, message);
  });

  it('names a move or copy by both pointers, and quotes a long pointer cut short', () => {
    expectRefused(
      () => patch(mix, [{ op: 'copy', from: '/songs/7', path: '/songs/0' }]),
      409,
      /^patch\[0\] \(copy from "\/songs\/7" to "\/songs\/0"\): there is no song at index 7;/,
    );
    const error = failure(() => patch(mix, [{ op: 'remove', path: `/songs/${'9'.repeat(5000)}x` }]));
    expect(error.statusCode).toBe(400);
    expect(error.message).toMatch(/^patch\[0\] \(remove "\/songs\/9{53}…"\): "path" has "9{60}…" where/);
  });

  it('refuses a patch that is not an array', () => {
    for (const body of [{}, null, 'x', 1, { op: 'add', path: '/songs/-', value: { id: 1 } }]) {
      expectRefused(() => patch(mix, body), 400, /^A JSON Patch must be a JSON array of operations\.$/);
    }
  });

  it(`takes at most ${MAX_PATCH_OPERATIONS} operations`, () => {
    const test = { op: 'test', path: '/name', value: 'Mix' };
    expect(patch(mix, Array<unknown>(MAX_PATCH_OPERATIONS).fill(test))).toEqual(mix);
    expectRefused(
      () => patch(mix, Array<unknown>(MAX_PATCH_OPERATIONS + 1).fill(test)),
      400,
      new RegExp(`at most ${MAX_PATCH_OPERATIONS} operations; this one holds ${MAX_PATCH_OPERATIONS + 1}`),
    );
  });
});

describe('applyJsonPatch: the rules of create', () => {
  const mix = playlist('Mix', 1, 2, 3);
  const rename = (name: unknown) => patch(mix, [{ op: 'replace', path: '/name', value: name }]);

  it('refuses a name that create refuses, with the same sentence', () => {
    expectRefused(() => rename(''), 400, /"value" must be at least 1 character long/);
    expectRefused(() => rename(' \t '), 400, /"value" must not be blank or contain control characters/);
    expectRefused(() => rename('a\u0000b'), 400, /must not be blank or contain control characters/);
    expectRefused(() => rename('a\u0085b'), 400, /must not be blank or contain control characters/);
    expectRefused(() => rename('a\uD800b'), 400, /unpaired surrogates/);
    expectRefused(() => rename('x'.repeat(limits.nameMaxLength + 1)), 400, /at most 200 characters long/);
    expectRefused(
      () => patch(mix, [{ op: 'add', path: '/name', value: '' }], { ...limits, nameMaxLength: 3 }),
      400,
      /at least 1 character/,
    );
    expectRefused(
      () => patch(mix, [{ op: 'add', path: '/name', value: 'abcd' }], { ...limits, nameMaxLength: 3 }),
      400,
      /at most 3 characters long/,
    );
  });

  it('counts a name in code points, as create does', () => {
    const name = `${'x'.repeat(limits.nameMaxLength - 1)}😀`;
    expect(rename(name).name).toBe(name);
  });
});

describe('applyMergePatch', () => {
  const mix = playlist('Mix', 5, 7, 5);
  const merge = (body: MergePatch) => applyMergePatch(mix, body);

  it('replaces the members sent and keeps the others', () => {
    expect(merge({ name: 'New' })).toEqual(playlist('New', 5, 7, 5));
    expect(merge({ songIds: [3, 3, 1] })).toEqual(playlist('Mix', 3, 3, 1));
    expect(merge({ name: 'Both', songIds: [] })).toEqual(playlist('Both'));
    expect(merge({})).toEqual(mix);
  });

  it('ignores unknown members, as create does', () => {
    expect(merge({ name: 'New', colour: 'blue', id: 12, songs: [] } as MergePatch)).toEqual(playlist('New', 5, 7, 5));
  });
});

describe('insertSongs', () => {
  const mix = playlist('Mix', 5, 7, 5);
  const insert = (songIds: number[], position?: number) => insertSongs(mix, songIds, position);

  it('inserts before the position, or after the last song without one, keeping order and repeats', () => {
    expect(ids(insert([1, 1, 2]))).toEqual([5, 7, 5, 1, 1, 2]);
    expect(ids(insert([1, 2], 0))).toEqual([1, 2, 5, 7, 5]);
    expect(ids(insert([1, 2], 2))).toEqual([5, 7, 1, 2, 5]);
    expect(ids(insert([1], 3))).toEqual([5, 7, 5, 1]);
    expect(insert([])).toEqual(mix);
    expect(insert([1]).name).toBe('Mix');
  });

  it('answers 409 for a position past the end, as an add at an index past the end', () => {
    expectRefused(() => insert([1], 4), 409, /^"position" 4 is past the end: the playlist has 3 songs/);
    expectRefused(() => insertSongs(playlist('Empty'), [1], 1), 409, /has 0 songs/);
  });
});

/** Operations on the songs as a plain array model reads them: an index, or "-" for after the last song. */
type Index = number | '-';
type ModelOperation =
  | { readonly op: 'add'; readonly index: Index; readonly id: number }
  | { readonly op: 'remove'; readonly index: number }
  | { readonly op: 'move'; readonly from: number; readonly index: Index };

/** The operations applied to a copy of the array one by one; the index of the first that fails, if one does. */
function model(start: readonly number[], operations: readonly ModelOperation[]): number[] | { failsAt: number } {
  const songs = [...start];
  for (const [i, operation] of operations.entries()) {
    let id: number;
    if (operation.op === 'add') {
      id = operation.id;
    } else {
      const from = operation.op === 'remove' ? operation.index : operation.from;
      if (from >= songs.length) return { failsAt: i };
      id = songs.splice(from, 1)[0]!;
      if (operation.op === 'remove') continue;
    }
    const at = operation.index === '-' ? songs.length : operation.index;
    if (at > songs.length) return { failsAt: i };
    songs.splice(at, 0, id);
  }
  return songs;
}

function asJsonPatch(operation: ModelOperation): unknown {
  switch (operation.op) {
    case 'add':
      return { op: 'add', path: `/songs/${operation.index}`, value: { id: operation.id } };
    case 'remove':
      return { op: 'remove', path: `/songs/${operation.index}` };
    case 'move':
      return { op: 'move', from: `/songs/${operation.from}`, path: `/songs/${operation.index}` };
  }
}

describe('applyJsonPatch against an array model', () => {
  // Few distinct ids, so that repeats are common; indexes up to 8 over up to 10 songs, so that about 40 % of the
  // patches apply whole and the others fail somewhere along.
  const id = fc.integer({ min: 1, max: 4 });
  const index = fc.integer({ min: 0, max: 8 });
  const operation: fc.Arbitrary<ModelOperation> = fc.oneof(
    fc.record({ op: fc.constant('add' as const), index: fc.oneof(index, fc.constant('-' as const)), id }),
    fc.record({ op: fc.constant('remove' as const), index }),
    fc.record({ op: fc.constant('move' as const), from: index, index: fc.oneof(index, fc.constant('-' as const)) }),
  );
  const songs = fc.array(id, { maxLength: 10 });

  it('add, remove and move do what the array model does, or fail with a 409 at the operation it fails at', () => {
    fc.assert(
      fc.property(songs, fc.array(operation, { maxLength: 12 }), (start, operations) => {
        const before = playlist('Mix', ...start);
        const expected = model(start, operations);
        const edit = () => patch(before, operations.map(asJsonPatch));
        if (Array.isArray(expected)) {
          expect(edit()).toEqual(playlist('Mix', ...expected));
        } else {
          const error = failure(edit);
          expect(error.statusCode).toBe(409);
          expect(error.message.startsWith(`patch[${expected.failsAt}] `)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('one patch does what its operations do one patch at a time', () => {
    fc.assert(
      fc.property(songs, fc.array(operation, { maxLength: 12 }), (start, operations) => {
        if (!Array.isArray(model(start, operations))) return;
        const stepwise = operations.reduce((current, o) => patch(current, [asJsonPatch(o)]), playlist('Mix', ...start));
        expect(patch(playlist('Mix', ...start), operations.map(asJsonPatch))).toEqual(stepwise);
      }),
      { numRuns: 500 },
    );
  });

  it('a move and the move back restore the playlist', () => {
    fc.assert(
      fc.property(fc.array(id, { minLength: 1, maxLength: 10 }), index, index, (start, a, b) => {
        const from = a % start.length;
        const to = b % start.length;
        const there = { op: 'move', from: `/songs/${from}`, path: `/songs/${to}` };
        const back = { op: 'move', from: `/songs/${to}`, path: `/songs/${from}` };
        expect(patch(playlist('Mix', ...start), [there, back])).toEqual(playlist('Mix', ...start));
      }),
    );
  });
});
