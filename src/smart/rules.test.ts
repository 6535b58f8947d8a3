import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../http/errors.js';
import { InvalidRules, MAX_CONDITIONS, readRules, rulePlaylists, rulesSchema, type Rules } from './rules.js';
import { NESTED_RULES } from '../../test/smart/example-rules.js';

const limits = { songsMax: 1000 };

const EXAMPLE = NESTED_RULES;

/** The error readRules throws for these rules. */
function refusal(value: unknown, songsMax = 1000): InvalidRules {
  try {
    readRules(value, { songsMax });
  } catch (error) {
    if (error instanceof InvalidRules) return error;
    throw error;
  }
  throw new Error(`accepted: ${JSON.stringify(value)}`);
}

const withCondition = (condition: unknown) => ({ match: 'all', conditions: [condition] });

describe('readRules', () => {
  it('takes the contract’s example as it is', () => {
    expect(readRules(EXAMPLE, limits)).toEqual(EXAMPLE);
  });

  it('takes every field with every op that fits it, and empty groups', () => {
    const conditions = [
      ...['is', 'isNot', 'contains', 'notContains', 'startsWith', 'endsWith'].flatMap((op) =>
        ['title', 'artist', 'album', 'genre'].map((field) => ({ field, op, value: 'x' })),
      ),
      { field: 'duration', op: 'is', value: 0 },
      { field: 'duration', op: 'isNot', value: 12.5 },
      { field: 'duration', op: 'lt', value: 60 },
      { field: 'duration', op: 'between', value: [60, 60] },
      { field: 'added', op: 'before', value: '2026-12-07T10:00:00Z' },
      { field: 'added', op: 'after', value: '2026-12-07T10:00:00.123+01:00' },
      { field: 'added', op: 'inTheLast', value: 7 },
      { field: 'added', op: 'notInTheLast', value: 100_000 },
      { field: 'playlist', op: 'in', value: 3 },
      { match: 'any', conditions: [] },
    ];
    expect(conditions.length).toBeLessThanOrEqual(MAX_CONDITIONS);
    const rules = { match: 'any', conditions, sort: [{ field: 'random' }] };
    expect(readRules(rules, limits)).toEqual(rules);
    expect(readRules({ match: 'all', conditions: [] }, limits)).toEqual({ match: 'all', conditions: [] });
  });

  it('names the path of the first problem, with a sentence that says what is wrong', () => {
    const cases: [unknown, string, RegExp][] = [
      [null, 'rules', /must be an object, not null/],
      [[], 'rules', /not an array/],
      [{ conditions: [] }, 'rules', /need "match"/],
      [{ match: 'some', conditions: [] }, 'rules/match', /"all", "any", not "some"/],
      [{ match: 'all' }, 'rules/conditions', /must be an array/],
      [{ match: 'all', conditions: [], extra: 1 }, 'rules/extra', /no member "extra"/],
      [withCondition({ field: 'mood', op: 'is', value: 'x' }), 'rules/conditions/0/field', /not "mood"/],
      [
        withCondition({ field: 'genre', op: 'gt', value: 3 }),
        'rules/conditions/0/op',
        /"gt" does not fit the text field "genre"/,
      ],
      [
        withCondition({ field: 'genre', op: 'like', value: 'x' }),
        'rules/conditions/0/op',
        /must be one of .* not "like"/,
      ],
      [withCondition({ field: 'genre', value: 'x' }), 'rules/conditions/0', /needs an "op"/],
      [withCondition({ field: 'genre', op: 'is' }), 'rules/conditions/0', /needs a "value"/],
      [withCondition({ field: 'genre', op: 'is', value: 3 }), 'rules/conditions/0/value', /with text, not number/],
      [withCondition({ field: 'genre', op: 'is', value: 'a\u0000b' }), 'rules/conditions/0/value', /NUL/],
      [withCondition({ field: 'genre', op: 'is', value: 'a\uD800' }), 'rules/conditions/0/value', /unpaired surrogate/],
      [withCondition({ field: 'genre', op: 'is', value: 'x', not: true }), 'rules/conditions/0/not', /no member "not"/],
      [withCondition({ field: 'duration', op: 'contains', value: 3 }), 'rules/conditions/0/op', /does not fit/],
      [
        withCondition({ field: 'duration', op: 'gt', value: '300' }),
        'rules/conditions/0/value',
        /number of seconds, not string/,
      ],
      [withCondition({ field: 'duration', op: 'between', value: 3 }), 'rules/conditions/0/value', /\[low, high\]/],
      [
        withCondition({ field: 'duration', op: 'between', value: [1, 2, 3] }),
        'rules/conditions/0/value',
        /\[low, high\]/,
      ],
      [withCondition({ field: 'duration', op: 'between', value: [1, 'x'] }), 'rules/conditions/0/value/1', /number/],
      [
        withCondition({ field: 'duration', op: 'between', value: [5, 4] }),
        'rules/conditions/0/value',
        /above the high end/,
      ],
      [withCondition({ field: 'added', op: 'gt', value: 3 }), 'rules/conditions/0/op', /does not fit the time field/],
      [withCondition({ field: 'added', op: 'before', value: 3 }), 'rules/conditions/0/value', /RFC 3339/],
      [
        withCondition({ field: 'added', op: 'before', value: '2026-02-30T00:00:00Z' }),
        'rules/conditions/0/value',
        /RFC 3339/,
      ],
      [withCondition({ field: 'added', op: 'after', value: '2026-12-07' }), 'rules/conditions/0/value', /RFC 3339/],
      [
        withCondition({ field: 'added', op: 'inTheLast', value: 0 }),
        'rules/conditions/0/value',
        /whole number of days/,
      ],
      [
        withCondition({ field: 'added', op: 'inTheLast', value: 1.5 }),
        'rules/conditions/0/value',
        /whole number of days/,
      ],
      [withCondition({ field: 'added', op: 'notInTheLast', value: '7' }), 'rules/conditions/0/value', /whole number/],
      [withCondition({ field: 'playlist', op: 'is', value: 3 }), 'rules/conditions/0/op', /does not fit/],
      [withCondition({ field: 'playlist', op: 'in', value: 'x' }), 'rules/conditions/0/value', /playlist id/],
      [withCondition({ field: 'playlist', op: 'in', value: 0 }), 'rules/conditions/0/value', /playlist id/],
      [withCondition(5), 'rules/conditions/0', /must be an object, not number/],
      [withCondition({}), 'rules/conditions/0', /needs "field"/],
      [withCondition({ match: 'any' }), 'rules/conditions/0/conditions', /must be an array/],
      [withCondition({ match: 'any', conditions: [], sort: [] }), 'rules/conditions/0/sort', /no member "sort"/],
      [{ ...EXAMPLE, sort: {} }, 'rules/sort', /must be an array/],
      [
        { ...EXAMPLE, sort: [{ field: 'title' }, { field: 'album' }, { field: 'genre' }, { field: 'artist' }] },
        'rules/sort',
        /at most 3/,
      ],
      [{ ...EXAMPLE, sort: [{ field: 'playlist' }] }, 'rules/sort/0/field', /cannot be sorted by "playlist"/],
      [{ ...EXAMPLE, sort: [{ field: 'mood' }] }, 'rules/sort/0/field', /not "mood"/],
      [{ ...EXAMPLE, sort: [{ field: 'title', order: 'up' }] }, 'rules/sort/0/order', /"asc", "desc"/],
      [{ ...EXAMPLE, sort: [{ field: 'title' }, { field: 'title', order: 'desc' }] }, 'rules/sort/1/field', /already/],
      [{ ...EXAMPLE, sort: [{ field: 'title' }, { field: 'random' }] }, 'rules/sort/1', /only sort key/],
      [{ ...EXAMPLE, sort: [{ field: 'random', order: 'asc' }] }, 'rules/sort/0/order', /no member "order"/],
      [{ ...EXAMPLE, limit: 0 }, 'rules/limit', /from 1 to 1000/],
      [{ ...EXAMPLE, limit: 1001 }, 'rules/limit', /from 1 to 1000/],
      [{ ...EXAMPLE, limit: 2.5 }, 'rules/limit', /from 1 to 1000/],
      [{ ...EXAMPLE, limit: '5' }, 'rules/limit', /from 1 to 1000/],
    ];
    for (const [value, path, message] of cases) {
      const error = refusal(value);
      expect(error.path, JSON.stringify(value)).toBe(path);
      expect(error.message, JSON.stringify(value)).toBe(`${path}: ${error.problem}`);
      expect(error.problem, JSON.stringify(value)).toMatch(message);
      expect(error).toBeInstanceOf(ApiError);
      expect(error.statusCode).toBe(400);
    }
  });

  it('reports the first problem in the order sent, depth first', () => {
    const rules = {
      match: 'all',
      conditions: [
        { field: 'genre', op: 'is', value: 'Jazz' },
        {
          match: 'any',
          conditions: [
            { field: 'title', op: 'is', value: 'x' },
            { field: 'title', op: 'gt', value: 1 },
          ],
        },
        { field: 'mood', op: 'is', value: 'x' },
      ],
      limit: 0,
    };
    expect(refusal(rules).path).toBe('rules/conditions/1/conditions/1/op');
  });

  it('lets groups nest 3 deep (the rules being the first), and no deeper', () => {
    const nest = (depth: number): Record<string, unknown> =>
      depth === 1
        ? { match: 'all', conditions: [{ field: 'title', op: 'is', value: 'x' }] }
        : { match: 'any', conditions: [nest(depth - 1)] };
    expect(readRules(nest(3), limits)).toEqual(nest(3));
    expect(refusal(nest(4))).toMatchObject({ path: 'rules/conditions/0/conditions/0/conditions/0' });
    expect(refusal(nest(4)).problem).toMatch(/at most 3 deep/);
  });

  it('takes 50 conditions and groups in all, at every depth, and not 51', () => {
    const leaf = { field: 'duration', op: 'gt', value: 1 };
    const fifty = {
      match: 'all',
      conditions: [...Array<unknown>(39).fill(leaf), { match: 'any', conditions: Array<unknown>(10).fill(leaf) }],
    };
    expect(readRules(fifty, limits).conditions).toHaveLength(40);
    const more = { ...fifty, conditions: [...fifty.conditions, leaf] };
    expect(refusal(more)).toMatchObject({ path: 'rules/conditions/40' });
    const deeper = {
      match: 'all',
      conditions: [...Array<unknown>(39).fill(leaf), { match: 'any', conditions: Array<unknown>(11).fill(leaf) }],
    };
    expect(refusal(deeper).path).toBe('rules/conditions/39/conditions/10');
    expect(refusal(deeper).problem).toMatch(/at most 50/);
  });

  it('keeps only what the contract knows and returns a copy', () => {
    const sent = { match: 'all', conditions: [{ field: 'title', op: 'is', value: 'x' }] };
    const read = readRules(sent, limits);
    expect(read).toEqual(sent);
    expect(read.conditions[0]).not.toBe(sent.conditions[0]);
    expect('sort' in read).toBe(false);
    expect('limit' in read).toBe(false);
  });

  it('takes no limit at all when the songs limit is 0', () => {
    expect(readRules({ match: 'all', conditions: [] }, { songsMax: 0 })).toEqual({ match: 'all', conditions: [] });
    expect(refusal({ match: 'all', conditions: [], limit: 1 }, 0).problem).toMatch(/no limit is allowed/);
  });

  it('takes long and hostile text as it is', () => {
    const hostile = `'; DROP TABLE songs; -- %_\\ "${'é'.repeat(10_000)} 🎷 שלום`;
    const rules = readRules(withCondition({ field: 'title', op: 'contains', value: hostile }), limits);
    expect(rules.conditions[0]).toEqual({ field: 'title', op: 'contains', value: hostile });
  });
});

describe('rulePlaylists', () => {
  it('lists every playlist the rules name, with the path of its value', () => {
    const rules = readRules(
      {
        match: 'any',
        conditions: [
          { field: 'playlist', op: 'in', value: 4 },
          {
            match: 'all',
            conditions: [
              { field: 'title', op: 'is', value: 'x' },
              { field: 'playlist', op: 'notIn', value: 9 },
            ],
          },
        ],
      },
      limits,
    );
    expect(rulePlaylists(rules)).toEqual([
      { id: 4, path: 'rules/conditions/0/value' },
      { id: 9, path: 'rules/conditions/1/conditions/1/value' },
    ]);
  });
});

describe('rulesSchema', () => {
  const ajv = new Ajv({ strict: true, allErrors: false });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajvFormats.default(ajv, { mode: 'full', formats: ['date-time'] });
  const validate = ajv.compile(rulesSchema(limits));

  it('compiles in strict Ajv and describes what readRules takes', () => {
    expect(validate(EXAMPLE)).toBe(true);
    const read: Rules = readRules(EXAMPLE, limits);
    expect(validate(read)).toBe(true);
    expect(validate({ ...EXAMPLE, limit: 1001 })).toBe(false);
    expect(validate(withCondition({ field: 'mood', op: 'is', value: 'x' }))).toBe(false);
    expect(
      validate({
        match: 'all',
        conditions: [{ match: 'any', conditions: [{ field: 'added', op: 'after', value: 'soon' }] }],
      }),
    ).toBe(false);
  });
});
