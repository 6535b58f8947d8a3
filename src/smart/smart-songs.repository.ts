/**
 * A smart playlist's rules as one SQL query per database: the ids of the catalog songs they choose, in their order, up
 * to their limit. Every value of a rule reaches the database as a bound parameter, never as SQL text; only the
 * contract's own names (fields, ops, orders) and this module's constants are written into the statement.
 *
 * Text is compared as search compares it: the rule's value goes through search's `normaliseText` here, and is
 * compared with the song's field as the catalog import normalised it (`songs.norm_*`, compared as bytes on both
 * databases: see migration 2026-12-07-smart-playlists):
 *
 * - `is`, `isNot`: `=` and `<>`; `is` is a lookup of the field's index.
 * - `startsWith`: a range of the index, `>=` the prefix and `<` the first text after every text that starts with it
 *   (`prefixEnd`): exact, with no pattern at all, and a range scan on both databases (a LIKE prefix uses an index on
 *   PostgreSQL only with `text_pattern_ops`, on SQLite only with a NOCASE index and no bound parameter).
 * - `contains`, `notContains`, `endsWith`: LIKE with `%`, `_` and `\` escaped (ESCAPE '\'), which reads every song
 *   (no index helps a substring). On SQLite, whose LIKE compares a character at a time from every place a value could
 *   start (see search.repository.ts), a value longer than 12 characters goes to instr() or a comparison of the
 *   field's end instead. SQLite's LIKE folds ASCII case, which changes nothing on text normalised to lower case.
 */
import { createHash } from 'node:crypto';
import { sql, type Expression, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { storedRfc3339Millis } from '../http/times.js';
import { characterCount, containsPattern, normaliseText } from '../domain/search-text.js';
import { isGroup, type Condition, type Group, type Rules, type SortKey, type TextField, type TextOp } from './rules.js';

export interface CompileOptions {
  /** The time (Unix ms) `inTheLast` and `notInTheLast` count back from. */
  readonly now: number;
  /** The songs limit (`limits.songsMax`): the limit of rules that give none. */
  readonly songsMax: number;
  /**
   * The playlists the rules name that their owner may not read now: a `playlist` condition naming one of them,
   * `in` or `notIn`, matches no song.
   */
  readonly unreadable?: ReadonlySet<number> | undefined;
}

/** Values up to this many characters are matched with SQLite's LIKE, longer ones without (as search does). */
const SQLITE_LIKE_UP_TO = 12;

const DAY_MS = 86_400_000;

const TRUE = sql<SqlBool>`1 = 1`;
const FALSE = sql<SqlBool>`1 = 0`;

const column = (field: TextField) => sql.ref(`songs.norm_${field}`);

/** A LIKE pattern for text ending with `text`, wildcards taken literally (ESCAPE '\'). */
const suffixPattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}`;

/**
 * The least text after every text that starts with `prefix`, in code point order (which is UTF-8 byte order): the
 * prefix with its last character counted up by one (a surrogate code point skipped), the characters that cannot be
 * counted up (U+10FFFF) dropped first; undefined when nothing is after them (an empty prefix, or U+10FFFF alone).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      points.push(last + 1 === 0xd800 ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return undefined;
}

function textCondition(dialect: Dialect, field: TextField, op: TextOp, value: string): RawBuilder<SqlBool> {
  const col = column(field);
  const text = normaliseText(value);
  const long = dialect === 'sqlite' && characterCount(text) > SQLITE_LIKE_UP_TO;
  switch (op) {
    case 'is':
      return sql<SqlBool>`${col} = ${text}`;
    case 'isNot':
      return sql<SqlBool>`${col} <> ${text}`;
    case 'startsWith': {
      if (text === '') return TRUE;
      const end = prefixEnd(text);
      return end === undefined
        ? sql<SqlBool>`${col} >= ${text}`
        : sql<SqlBool>`(${col} >= ${text} AND ${col} < ${end})`;
    }
    case 'contains':
    case 'notContains': {
      const test = long
        ? sql<SqlBool>`instr(${col}, ${text}) > 0`
        : sql<SqlBool>`${col} LIKE ${containsPattern(text)} ESCAPE '\\'`;
      return op === 'contains' ? test : sql<SqlBool>`NOT (${test})`;
    }
    case 'endsWith':
      // substr(x, -n) is the whole of a shorter x, which is never equal to the n characters of the value.
      return long
        ? sql<SqlBool>`substr(${col}, ${-characterCount(text)}) = ${text}`
        : sql<SqlBool>`${col} LIKE ${suffixPattern(text)} ESCAPE '\\'`;
  }
}

/** A number bound as a double on both databases (a duration may be compared with 300.5). */
const seconds = (value: number) => sql`CAST(${value} AS double precision)`;
/** A whole number bound as an integer on both databases (better-sqlite3 binds every number as a double). */
const integer = (value: number) => sql`CAST(${value} AS bigint)`;

function condition(dialect: Dialect, c: Condition, options: CompileOptions): RawBuilder<SqlBool> {
  switch (c.field) {
    case 'title':
    case 'artist':
    case 'album':
    case 'genre':
      return textCondition(dialect, c.field, c.op, c.value);
    case 'duration':
      switch (c.op) {
        case 'is':
          return sql<SqlBool>`songs.duration = ${seconds(c.value)}`;
        // Each negative op is its positive op's complement: a song without a duration is not 300 seconds long.
        case 'isNot':
          return sql<SqlBool>`(songs.duration IS NULL OR songs.duration <> ${seconds(c.value)})`;
        case 'gt':
          return sql<SqlBool>`songs.duration > ${seconds(c.value)}`;
        case 'lt':
          return sql<SqlBool>`songs.duration < ${seconds(c.value)}`;
        case 'between':
          return sql<SqlBool>`(songs.duration >= ${seconds(c.value[0])} AND songs.duration <= ${seconds(c.value[1])})`;
      }
      break;
    case 'added':
      switch (c.op) {
        // Stored rules are compiled as well as new ones: a time is read as stored rules may hold it.
        case 'before':
          return sql<SqlBool>`songs.added < ${integer(storedRfc3339Millis(c.value)!)}`;
        case 'after':
          return sql<SqlBool>`songs.added > ${integer(storedRfc3339Millis(c.value)!)}`;
        case 'inTheLast':
          return sql<SqlBool>`songs.added >= ${integer(options.now - c.value * DAY_MS)}`;
        case 'notInTheLast':
          return sql<SqlBool>`songs.added < ${integer(options.now - c.value * DAY_MS)}`;
      }
      break;
    case 'playlist': {
      if (options.unreadable?.has(c.value) === true) return FALSE;
      const songsOf = sql`(SELECT ps.song_id FROM playlist_songs ps WHERE ps.playlist_id = ${integer(c.value)})`;
      return c.op === 'in' ? sql<SqlBool>`songs.id IN ${songsOf}` : sql<SqlBool>`songs.id NOT IN ${songsOf}`;
    }
  }
  throw new Error(`unknown condition ${JSON.stringify(c)}`);
}

function group(dialect: Dialect, g: Group, options: CompileOptions): RawBuilder<SqlBool> {
  if (g.conditions.length === 0) return g.match === 'all' ? TRUE : FALSE;
  // Under `any`, the `playlist … in` conditions are one: the songs of any of those playlists, one lookup of
  // playlist_songs by its key, where one subquery each makes PostgreSQL read every song once for each.
  const readable = (c: Condition) =>
    !isGroup(c) && c.field === 'playlist' && c.op === 'in' && options.unreadable?.has(c.value) !== true;
  const inAny =
    g.match === 'any'
      ? g.conditions.flatMap((entry) => (!isGroup(entry) && readable(entry) ? [entry.value as number] : []))
      : [];
  const rest = inAny.length > 1 ? g.conditions.filter((entry) => isGroup(entry) || !readable(entry)) : g.conditions;
  const parts = rest.map((entry) =>
    isGroup(entry) ? group(dialect, entry, options) : condition(dialect, entry, options),
  );
  if (inAny.length > 1) {
    const ids = sql.join([...new Set(inAny)].map((id) => integer(id)));
    parts.unshift(
      sql<SqlBool>`songs.id IN (SELECT ps.song_id FROM playlist_songs ps WHERE ps.playlist_id IN (${ids}))`,
    );
  }
  return sql<SqlBool>`(${sql.join(parts, g.match === 'all' ? sql` AND ` : sql` OR `)})`;
}

/** The random order's two seeds (below 2^31), from the rules: the same rules, the same order. */
export function randomSeeds(rules: Rules): readonly [number, number] {
  const digest = createHash('sha256').update(JSON.stringify(rules)).digest();
  return [digest.readUInt32BE(0) & 0x7fffffff, digest.readUInt32BE(4) & 0x7fffffff];
}

const P = sql.lit(2147483647);

/**
 * A pseudo-random number below 2^31 for each song id, from the seeds: multiplications modulo the prime 2^31 - 1 with a
 * rotation of the bits between them (which makes it other than a linear function of the id), in integers below 2^50,
 * computed alike by both databases' 64-bit integer arithmetic.
 */
function shuffleKey([s1, s2]: readonly [number, number]): RawBuilder<number> {
  const h1 = sql`(((songs.id + ${integer(s1)}) % ${P}) * ${sql.lit(48271)} % ${P})`;
  const h2 = sql`((((${h1} / ${sql.lit(32768)}) + (${h1} % ${sql.lit(32768)}) * ${sql.lit(65536)} + ${integer(s2)}) % ${P}) * ${sql.lit(69621)} % ${P})`;
  return sql<number>`((((${h2} / ${sql.lit(4096)}) + (${h2} % ${sql.lit(4096)}) * ${sql.lit(524288)}) % ${P}) * ${sql.lit(48271)} % ${P})`;
}

const SORT_COLUMNS = {
  title: 'songs.norm_title',
  artist: 'songs.norm_artist',
  album: 'songs.norm_album',
  genre: 'songs.norm_genre',
  duration: 'songs.duration',
  added: 'songs.added',
} as const;

/**
 * The query of the ids of the songs the rules choose, in their order, ties by id, at most their limit (or the songs
 * limit): one statement, run as it is (`smartSongIds`) or used inside another (an INSERT … SELECT). `rules` must come
 * from `readRules`. Text sorts are by the normalised text, compared as bytes; songs without a duration come last in
 * either order. `first`, when given, is tested on each song before the rules' conditions are (rules-runner.ts stops
 * a query that runs past its time with it).
 */
export function smartSongsQuery(
  q: Kysely<Database>,
  dialect: Dialect,
  rules: Rules,
  options: CompileOptions,
  first?: RawBuilder<SqlBool>,
) {
  const songs = q.selectFrom('songs').select('songs.id');
  let query = (first === undefined ? songs : songs.where(first)).where(
    (_eb) => group(dialect, rules, options) as Expression<SqlBool>,
  );
  const sort: readonly SortKey[] = rules.sort ?? [];
  for (const key of sort) {
    if (key.field === 'random') {
      query = query.orderBy(shuffleKey(randomSeeds(rules)));
      continue;
    }
    const desc = 'order' in key && key.order === 'desc';
    const ref = SORT_COLUMNS[key.field];
    query =
      key.field === 'duration'
        ? query.orderBy(ref, (ob) => (desc ? ob.desc() : ob.asc()).nullsLast())
        : query.orderBy(ref, desc ? 'desc' : 'asc');
  }
  return query.orderBy('songs.id', 'asc').limit(rules.limit ?? options.songsMax);
}

/** The ids of the songs the rules choose, in their order (see `smartSongsQuery`). */
export async function smartSongIds(
  q: Kysely<Database>,
  dialect: Dialect,
  rules: Rules,
  options: CompileOptions,
): Promise<number[]> {
  const rows = await smartSongsQuery(q, dialect, rules, options).execute();
  return rows.map((row) => row.id);
}
