/**
 * A smart playlist's rules (API 1.7.0): which catalog songs it holds, in which order, how many. What a client sends
 * is read by `readRules`, by hand, so that a bad rule answers a 400 that names the path of its first problem
 * (`rules/conditions/2/op`) in a sentence: Ajv's errors for a recursive union of conditions name every branch it
 * tried, or none. The TypeBox schemas describe the same rules for the OpenAPI document; a route lets the body's
 * `rules` through its loose schema and reads it with `readRules`.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Limits } from '../config.js';
import { ApiError } from '../http/errors.js';
import { rfc3339Millis, TIME_RULE } from '../http/times.js';

export const TEXT_FIELDS = ['title', 'artist', 'album', 'genre'] as const;
export const TEXT_OPS = ['is', 'isNot', 'contains', 'notContains', 'startsWith', 'endsWith'] as const;
export const DURATION_OPS = ['is', 'isNot', 'gt', 'lt', 'between'] as const;
export const ADDED_OPS = ['before', 'after', 'inTheLast', 'notInTheLast'] as const;
export const PLAYLIST_OPS = ['in', 'notIn'] as const;
export const MATCHES = ['all', 'any'] as const;
/** What a sort key may name besides `random`: every field but `playlist`. */
export const SORT_FIELDS = [...TEXT_FIELDS, 'duration', 'added'] as const;
export const ORDERS = ['asc', 'desc'] as const;

export type TextField = (typeof TEXT_FIELDS)[number];
export type TextOp = (typeof TEXT_OPS)[number];
export type SortField = (typeof SORT_FIELDS)[number];

/** Groups nest this deep, the rules themselves being the first. */
export const MAX_DEPTH = 3;
/** Entries of every `conditions` list together, groups and conditions alike. */
export const MAX_CONDITIONS = 50;
/** Sort keys at most. */
export const MAX_SORT_KEYS = 3;
/** `inTheLast` and `notInTheLast` count whole days, at most this many (some 270 years). */
export const MAX_DAYS = 100_000;

export type Condition =
  | { readonly field: TextField; readonly op: TextOp; readonly value: string }
  | { readonly field: 'duration'; readonly op: 'is' | 'isNot' | 'gt' | 'lt'; readonly value: number }
  | { readonly field: 'duration'; readonly op: 'between'; readonly value: readonly [number, number] }
  | { readonly field: 'added'; readonly op: 'before' | 'after'; readonly value: string }
  | { readonly field: 'added'; readonly op: 'inTheLast' | 'notInTheLast'; readonly value: number }
  | { readonly field: 'playlist'; readonly op: 'in' | 'notIn'; readonly value: number };

export interface Group {
  readonly match: (typeof MATCHES)[number];
  readonly conditions: readonly (Condition | Group)[];
}

export type SortKey =
  { readonly field: SortField; readonly order?: (typeof ORDERS)[number] } | { readonly field: 'random' };

/** Rules as `readRules` returns them: checked, with only the members the contract knows, as the client sent them. */
export interface Rules extends Group {
  readonly sort?: readonly SortKey[];
  /** Absent: the songs limit (`limits.songsMax`) at the time the songs are chosen. */
  readonly limit?: number;
}

/** A rule that breaks the contract: 400, its message starting with the path of the problem. */
export class InvalidRules extends ApiError {
  override name = 'InvalidRules';
  constructor(
    /** Where, from the request body's `rules`: `rules/conditions/2/op`. */
    readonly path: string,
    /** What is wrong there, without the path. */
    readonly problem: string,
  ) {
    super(400, `${path}: ${problem}`);
  }
}

export const isGroup = (entry: Condition | Group): entry is Group => 'conditions' in entry;

const list = (names: readonly string[]) => names.map((name) => JSON.stringify(name)).join(', ');
const describe = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : typeof value;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function only(object: Json, path: string, what: string, members: readonly string[]): void {
  const extra = Object.keys(object).find((member) => !members.includes(member));
  if (extra !== undefined) {
    throw new InvalidRules(
      `${path}/${extra}`,
      `${what} has no member ${JSON.stringify(extra)} (it has ${list(members)}).`,
    );
  }
}

function oneOf<T extends string>(value: unknown, path: string, what: string, names: readonly T[]): T {
  if (typeof value === 'string' && (names as readonly string[]).includes(value)) return value as T;
  const sent = typeof value === 'string' ? JSON.stringify(value) : describe(value);
  throw new InvalidRules(path, `${what} must be one of ${list(names)}, not ${sent}.`);
}

/** Checks a leaf condition; returns it with only its three members. */
function readCondition(entry: Json, path: string): Condition {
  only(entry, path, 'a condition', ['field', 'op', 'value']);
  const field = oneOf(entry.field, `${path}/field`, 'the field', [
    ...TEXT_FIELDS,
    'duration',
    'added',
    'playlist',
  ] as const);
  const opPath = `${path}/op`;
  const valuePath = `${path}/value`;
  if (entry.op === undefined) throw new InvalidRules(path, 'a condition needs an "op".');
  const value = entry.value;
  const fitting = (ops: readonly string[], kind: string) => {
    if (!('value' in entry) && typeof entry.op === 'string' && ops.includes(entry.op)) {
      throw new InvalidRules(path, 'a condition needs a "value".');
    }
    if (typeof entry.op === 'string' && !ops.includes(entry.op) && ALL_OPS.includes(entry.op)) {
      throw new InvalidRules(
        opPath,
        `${JSON.stringify(entry.op)} does not fit ${kind} "${field}" (it takes ${list(ops)}).`,
      );
    }
  };
  const number = (v: unknown, where: string): number => {
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new InvalidRules(where, `"${field}" is compared with a number of seconds, not ${describe(v)}.`);
    }
    return v;
  };
  switch (field) {
    case 'title':
    case 'artist':
    case 'album':
    case 'genre': {
      fitting(TEXT_OPS, 'the text field');
      const op = oneOf(entry.op, opPath, 'the op', TEXT_OPS);
      if (typeof value !== 'string')
        throw new InvalidRules(valuePath, `"${field}" is compared with text, not ${describe(value)}.`);
      // Neither can be stored in PostgreSQL text, so no song has them: refused alike on both databases.
      if (value.includes('\u0000') || LONE_SURROGATE.test(value)) {
        throw new InvalidRules(valuePath, 'the text has a NUL character or an unpaired surrogate.');
      }
      return { field, op, value };
    }
    case 'duration': {
      fitting(DURATION_OPS, 'the number field');
      const op = oneOf(entry.op, opPath, 'the op', DURATION_OPS);
      if (op !== 'between') return { field, op, value: number(value, valuePath) };
      if (!Array.isArray(value) || value.length !== 2) {
        throw new InvalidRules(
          valuePath,
          `"between" takes two numbers of seconds, [low, high], not ${describe(value)}.`,
        );
      }
      const low = number(value[0], `${valuePath}/0`);
      const high = number(value[1], `${valuePath}/1`);
      if (low > high) throw new InvalidRules(valuePath, `the low end (${low}) is above the high end (${high}).`);
      return { field, op, value: [low, high] };
    }
    case 'added': {
      fitting(ADDED_OPS, 'the time field');
      const op = oneOf(entry.op, opPath, 'the op', ADDED_OPS);
      if (op === 'before' || op === 'after') {
        if (typeof value !== 'string' || rfc3339Millis(value) === undefined) {
          const sent = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : describe(value);
          throw new InvalidRules(valuePath, `"${op}" takes ${TIME_RULE}, such as "2026-12-07T10:00:00Z", not ${sent}.`);
        }
        return { field, op, value };
      }
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_DAYS) {
        throw new InvalidRules(valuePath, `"${op}" takes a whole number of days from 1 to ${MAX_DAYS}.`);
      }
      return { field, op, value };
    }
    case 'playlist': {
      fitting(PLAYLIST_OPS, 'the field');
      const op = oneOf(entry.op, opPath, 'the op', PLAYLIST_OPS);
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
        throw new InvalidRules(
          valuePath,
          `"playlist" takes a playlist id (a positive integer), not ${describe(value)}.`,
        );
      }
      return { field, op, value };
    }
  }
}

/** A surrogate not in a pair (the `u` flag reads a pair as one code point). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

const ALL_OPS: readonly string[] = [...new Set([...TEXT_OPS, ...DURATION_OPS, ...ADDED_OPS, ...PLAYLIST_OPS])];

interface Counter {
  entries: number;
}

function readGroup(group: Json, path: string, depth: number, counter: Counter, members: readonly string[]): Group {
  only(group, path, depth === 1 ? 'the rules' : 'a group', members);
  if (group.match === undefined)
    throw new InvalidRules(path, `${depth === 1 ? 'the rules need' : 'a group needs'} "match" ("all" or "any").`);
  const match = oneOf(group.match, `${path}/match`, '"match"', MATCHES);
  if (!Array.isArray(group.conditions)) {
    throw new InvalidRules(
      `${path}/conditions`,
      `"conditions" must be an array of conditions and groups, not ${group.conditions === undefined ? 'missing' : describe(group.conditions)}.`,
    );
  }
  const entries: unknown[] = group.conditions;
  const conditions = entries.map((entry, i): Condition | Group => {
    const at = `${path}/conditions/${i}`;
    counter.entries += 1;
    if (counter.entries > MAX_CONDITIONS) {
      throw new InvalidRules(at, `the rules may have at most ${MAX_CONDITIONS} conditions and groups in all.`);
    }
    if (!isObject(entry)) throw new InvalidRules(at, `a condition must be an object, not ${describe(entry)}.`);
    if ('field' in entry) return readCondition(entry, at);
    if ('match' in entry || 'conditions' in entry) {
      if (depth + 1 > MAX_DEPTH)
        throw new InvalidRules(at, `groups nest at most ${MAX_DEPTH} deep, the rules being the first.`);
      return readGroup(entry, at, depth + 1, counter, ['match', 'conditions']);
    }
    throw new InvalidRules(at, 'a condition needs "field", "op" and "value"; a group "match" and "conditions".');
  });
  return { match, conditions };
}

function readSort(value: unknown, path: string): SortKey[] {
  if (!Array.isArray(value))
    throw new InvalidRules(path, `"sort" must be an array of sort keys, not ${describe(value)}.`);
  const keys: unknown[] = value;
  if (keys.length > MAX_SORT_KEYS) throw new InvalidRules(path, `"sort" has at most ${MAX_SORT_KEYS} keys.`);
  const seen = new Set<string>();
  return keys.map((key, i): SortKey => {
    const at = `${path}/${i}`;
    if (!isObject(key)) throw new InvalidRules(at, `a sort key must be an object, not ${describe(key)}.`);
    if (key.field === 'random') {
      only(key, at, 'the random order', ['field']);
      if (keys.length !== 1) throw new InvalidRules(at, 'the random order is the only sort key when there is one.');
      return { field: 'random' };
    }
    only(key, at, 'a sort key', ['field', 'order']);
    if (key.field === 'playlist') throw new InvalidRules(`${at}/field`, 'songs cannot be sorted by "playlist".');
    const field = oneOf(key.field, `${at}/field`, 'the sort field', [...SORT_FIELDS, 'random'] as const) as SortField;
    if (seen.has(field)) throw new InvalidRules(`${at}/field`, `the songs are sorted by "${field}" already.`);
    seen.add(field);
    if (key.order === undefined) return { field };
    return { field, order: oneOf(key.order, `${at}/order`, 'the order', ORDERS) };
  });
}

/**
 * Reads a smart playlist's rules as a client sent them (any JSON value, under the body's `rules`): returns them
 * checked, with the members the contract knows only, or throws InvalidRules (a 400 ApiError whose `path` and message
 * name the first problem, depth first in the order sent). Which playlists the rules name, and whether the caller may
 * read them, is for the caller to check (`rulePlaylists`).
 */
export function readRules(value: unknown, limits: Pick<Limits, 'songsMax'>): Rules {
  const path = 'rules';
  if (!isObject(value)) throw new InvalidRules(path, `the rules must be an object, not ${describe(value)}.`);
  const group = readGroup(value, path, 1, { entries: 0 }, ['match', 'conditions', 'sort', 'limit']);
  const rules: { -readonly [K in keyof Rules]: Rules[K] } = { ...group };
  if (value.sort !== undefined) rules.sort = readSort(value.sort, `${path}/sort`);
  if (value.limit !== undefined) {
    const limit = value.limit;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > limits.songsMax) {
      throw new InvalidRules(
        `${path}/limit`,
        limits.songsMax < 1
          ? 'no limit is allowed: this service keeps no songs in a playlist (its songs limit is 0).'
          : `"limit" must be a whole number from 1 to ${limits.songsMax}.`,
      );
    }
    rules.limit = limit;
  }
  return rules;
}

/** Every `playlist` condition of the rules: the id it names and its path (for a 400 of a playlist the caller may not read). */
export function rulePlaylists(rules: Rules): { readonly id: number; readonly path: string }[] {
  const found: { id: number; path: string }[] = [];
  const walk = (group: Group, path: string) => {
    group.conditions.forEach((entry, i) => {
      const at = `${path}/conditions/${i}`;
      if (isGroup(entry)) walk(entry, at);
      else if (entry.field === 'playlist') found.push({ id: entry.value, path: `${at}/value` });
    });
  };
  walk(rules, 'rules');
  return found;
}

/** The ids of the playlists the rules name, each once, ascending (what `smart_sources` keeps of them). */
export function namedPlaylists(rules: Rules): number[] {
  return [...new Set(rulePlaylists(rules).map(({ id }) => id))].sort((a, b) => a - b);
}

/** The 400 for a `playlist` condition naming one the caller may not read (or none): the path of its value. */
export const noSuchRulePlaylist = (path: string, id: number): InvalidRules =>
  new InvalidRules(path, `no such playlist (${id}).`);

// The schemas of the OpenAPI document: what `readRules` takes, described (it checks what they cannot say: ops that
// fit their field, depth, the count of conditions, one random key alone).

const literals = <T extends string>(names: readonly T[], description: string) =>
  Type.Union(
    names.map((name) => Type.Literal(name)),
    { description },
  );

const Days = Type.Integer({ minimum: 1, maximum: MAX_DAYS, description: 'Days before now' });
const Seconds = Type.Number({ description: 'Seconds' });

const ConditionSchema = Type.Union(
  [
    Type.Object(
      {
        field: literals(TEXT_FIELDS, 'A text field, compared as search compares it: case and accents do not matter'),
        op: literals(TEXT_OPS, 'How the field is compared with the value'),
        value: Type.String(),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        field: Type.Literal('duration', {
          description: 'The song’s length in seconds; a song without one matches only `isNot`',
        }),
        op: literals(DURATION_OPS, '`between` takes [low, high], both included'),
        value: Type.Union([Seconds, Type.Array(Seconds, { minItems: 2, maxItems: 2 })]),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        field: Type.Literal('added', { description: 'When the song came into the catalog' }),
        op: literals(ADDED_OPS, '`before`, `after`: an RFC 3339 date-time; `inTheLast`, `notInTheLast`: days'),
        value: Type.Union([Type.String({ format: 'date-time' }), Days]),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        field: Type.Literal('playlist', { description: 'The songs of a playlist the caller may read' }),
        op: literals(PLAYLIST_OPS, 'Whether the song is in it'),
        value: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The playlist’s id' }),
      },
      { additionalProperties: false },
    ),
  ],
  { description: 'One condition a song must meet' },
);

const Match = literals(MATCHES, '`all`: a song meets every condition; `any`: at least one');

/** A group of conditions, nested in the rules or another group. */
export const GroupSchema = Type.Recursive(
  (Self) =>
    Type.Object(
      {
        match: Match,
        conditions: Type.Array(Type.Union([ConditionSchema, Self])),
      },
      { additionalProperties: false },
    ),
  { $id: 'smartGroup', title: 'smartGroup', description: `Conditions together; groups nest up to ${MAX_DEPTH} deep` },
);

const SortKeySchema = Type.Union([
  Type.Object(
    { field: literals(SORT_FIELDS, 'Sort by this field'), order: Type.Optional(literals(ORDERS, 'asc by default')) },
    { additionalProperties: false },
  ),
  Type.Object(
    { field: Type.Literal('random', { description: 'A shuffle that changes only when the rules change' }) },
    {
      additionalProperties: false,
    },
  ),
]);

/** The rules as the OpenAPI document describes them (`limit` up to the songs limit). */
export function rulesSchema(limits: Pick<Limits, 'songsMax'>): TSchema {
  return Type.Object(
    {
      match: Match,
      conditions: Type.Array(Type.Union([ConditionSchema, GroupSchema]), {
        description: `Conditions and groups; at most ${MAX_CONDITIONS} in all, at every depth`,
      }),
      sort: Type.Optional(
        Type.Array(SortKeySchema, {
          maxItems: MAX_SORT_KEYS,
          description: 'Sort keys in turn (songs tie by id), or `[{"field": "random"}]` alone; none: by id',
        }),
      ),
      limit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: Math.max(1, limits.songsMax),
          description: 'At most this many songs; the songs limit by default',
        }),
      ),
    },
    {
      $id: 'smartRules',
      title: 'smartRules',
      additionalProperties: false,
      description: 'Which catalog songs a smart playlist holds, in which order, how many',
    },
  );
}

/**
 * What a route's body schema lets through as `rules`: any object, read by `readRules` after it. A union of
 * conditions fails in Ajv with a message for each branch; `readRules` names the first problem instead.
 */
export const looseRulesSchema = Type.Unsafe<unknown>({
  type: 'object',
  'x-documented-as': 'smartRules',
  description: 'The rules of a smart playlist (see `smartRules`); checked in full after the schema',
});
