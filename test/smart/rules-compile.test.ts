import { CompiledQuery, sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { importCatalog, type CatalogEntry } from '../../src/catalog/catalog.service.js';
import {
  prefixEnd,
  randomSeeds,
  smartSongIds,
  smartSongsQuery,
  type CompileOptions,
} from '../../src/smart/smart-songs.repository.js';
import { readRules } from '../../src/smart/rules.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist } from '../helpers/requests.js';
import { NESTED_RULES } from './example-rules.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 11, 7, 12);
const JANUARY = Date.UTC(2026, 0, 1);
const JUNE = Date.UTC(2026, 5, 1);
const YESTERDAY = NOW - DAY;

const LONG_TITLE = `${'a'.repeat(400)}z`;

/** The catalog of these tests: [song, when it came in]; ids 1 to 10. */
const CATALOG: [CatalogEntry, number][] = [
  [{ id: 1, title: 'So What', artist: 'Miles Davis', album: 'Kind of Blue', genre: 'Jazz', duration: 562 }, JANUARY],
  [
    { id: 2, title: 'Blue in Green', artist: 'Miles DÁVIS', album: 'Kind of Blue', genre: 'jazz', duration: 337 },
    JANUARY,
  ],
  [
    {
      id: 3,
      title: "It's 100% _real_",
      artist: 'O\'Brien "Quote"',
      album: 'Back\\slash',
      genre: 'Rock',
      duration: 200,
    },
    JUNE,
  ],
  [{ id: 4, title: '100 percent', artist: 'A_B', album: 'x', genre: 'Rock', duration: null }, JUNE],
  [{ id: 5, title: 'Café Ümlaut', artist: 'Zoë', album: '', genre: 'JAZZ ', duration: 301 }, YESTERDAY],
  [{ id: 6, title: '🎷 Sax 🎷', artist: 'שלום עליכם', album: 'ألبوم', genre: 'World', duration: 250 }, YESTERDAY],
  [{ id: 7, title: 'ＳＯ full width', artist: 'Ｚｅｎ', album: 'ﬁne', genre: 'Jazz', duration: 100 }, YESTERDAY],
  [{ id: 8, title: LONG_TITLE, artist: 'Long', album: 'Long', genre: 'Drone', duration: 3600 }, JUNE],
  [{ id: 9, title: 'Soul', artist: 'x%y', album: 'a_b', genre: 'Soul', duration: 300 }, JUNE],
  [{ id: 10, title: 'sō', artist: 'back\\\\slash', album: '', genre: '', duration: 0 }, JUNE],
];
const ALL = CATALOG.map(([song]) => song.id!);
const except = (...ids: number[]) => ALL.filter((id) => !ids.includes(id));

const limits = { songsMax: 1000 };
const options = { now: NOW, songsMax: 1000 };

type Conditions = Record<string, unknown>[];
const all = (...conditions: Conditions) => ({ match: 'all', conditions });
const one = (field: string, op: string, value: unknown) => all({ field, op, value });

/** The random order of the ids, computed as the database does, for these seeds. */
function shuffled(ids: readonly number[], [s1, s2]: readonly [number, number]): number[] {
  const P = 2147483647n;
  const key = (id: number) => {
    const h1 = (((BigInt(id) + BigInt(s1)) % P) * 48271n) % P;
    const h2 = (((h1 / 32768n + (h1 % 32768n) * 65536n + BigInt(s2)) % P) * 69621n) % P;
    return (((h2 / 4096n + (h2 % 4096n) * 524288n) % P) * 48271n) % P;
  };
  return [...ids].sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return ka < kb ? -1 : ka > kb ? 1 : a - b;
  });
}

describeEachDatabase('smart playlist rules, compiled, on %s', { MIXTAPE_SEED_CATALOG: 'false' }, (t, dialect) => {
  let picked: number;
  let security: string;

  beforeAll(async () => {
    for (const [song, added] of CATALOG) await importCatalog(t.db, [song], () => {}, added);
    security = await t.addUser();
    picked = (await createPlaylist(t.app, security, 'Picked', [6, 3, 6])).id;
  });

  const ids = (rules: unknown, at: CompileOptions = options) =>
    smartSongIds(t.db.kysely, dialect, readRules(rules, limits), at);
  const sorted = async (rules: unknown) => (await ids(rules)).sort((a, b) => a - b);

  it('compares text as search does: case, accents, compatibility forms and spaces do not matter', async () => {
    expect(await sorted(one('genre', 'is', 'jazz'))).toEqual([1, 2, 5, 7]);
    expect(await sorted(one('genre', 'is', ' JÄZZ  '))).toEqual([1, 2, 5, 7]);
    expect(await sorted(one('genre', 'isNot', 'Jazz'))).toEqual([3, 4, 6, 8, 9, 10]);
    expect(await sorted(one('genre', 'is', ''))).toEqual([10]);
    expect(await sorted(one('artist', 'contains', 'davis'))).toEqual([1, 2]);
    expect(await sorted(one('artist', 'notContains', 'DAVIS'))).toEqual(except(1, 2));
    expect(await sorted(one('title', 'startsWith', 'so'))).toEqual([1, 7, 9, 10]);
    expect(await sorted(one('title', 'startsWith', 'SÓ  W'))).toEqual([1]);
    expect(await sorted(one('title', 'startsWith', 'so '))).toEqual([1, 7, 9, 10]);
    expect(await sorted(one('title', 'startsWith', 'sow'))).toEqual([]);
    expect(await sorted(one('title', 'startsWith', ''))).toEqual(ALL);
    expect(await sorted(one('title', 'endsWith', 'WHAT'))).toEqual([1]);
    expect(await sorted(one('title', 'endsWith', 'ümlaut'))).toEqual([5]);
    expect(await sorted(one('album', 'is', 'FINE'))).toEqual([7]);
    expect(await sorted(one('artist', 'is', 'zen'))).toEqual([7]);
    expect(await sorted(one('title', 'contains', ''))).toEqual(ALL);
  });

  it('takes LIKE wildcards, quotes and backslashes in values literally', async () => {
    expect(await sorted(one('title', 'contains', '%'))).toEqual([3]);
    expect(await sorted(one('title', 'contains', '100%'))).toEqual([3]);
    expect(await sorted(one('title', 'contains', '_'))).toEqual([3]);
    expect(await sorted(one('title', 'endsWith', '_'))).toEqual([3]);
    expect(await sorted(one('title', 'startsWith', '%'))).toEqual([]);
    expect(await sorted(one('title', 'startsWith', '100_'))).toEqual([]);
    expect(await sorted(one('title', 'startsWith', '100%'))).toEqual([]);
    expect(await sorted(one('title', 'startsWith', "it's"))).toEqual([3]);
    expect(await sorted(one('artist', 'contains', '"quote"'))).toEqual([3]);
    expect(await sorted(one('artist', 'contains', "o'b"))).toEqual([3]);
    expect(await sorted(one('artist', 'is', 'o\'brien "quote"'))).toEqual([3]);
    expect(await sorted(one('album', 'contains', '\\'))).toEqual([3]);
    expect(await sorted(one('album', 'is', 'back\\slash'))).toEqual([3]);
    expect(await sorted(one('artist', 'contains', '\\\\'))).toEqual([10]);
    expect(await sorted(one('artist', 'endsWith', '\\slash'))).toEqual([10]);
    expect(await sorted(one('artist', 'contains', 'x%y'))).toEqual([9]);
    expect(await sorted(one('artist', 'contains', 'x_y'))).toEqual([]);
    expect(await sorted(one('album', 'is', 'a_b'))).toEqual([9]);
    expect(await sorted(one('album', 'is', 'a%b'))).toEqual([]);
    expect(await sorted(one('artist', 'is', 'a_b'))).toEqual([4]);
    expect(await sorted(one('title', 'notContains', '%'))).toEqual(except(3));
    expect(await sorted(one('title', 'contains', "'; DROP TABLE songs; --"))).toEqual([]);
    expect(await sorted(one('title', 'is', "' OR '1'='1"))).toEqual([]);
    expect(await sorted(all())).toEqual(ALL);
  });

  it('matches emoji, right-to-left text and long values exactly', async () => {
    expect(await sorted(one('title', 'contains', '🎷'))).toEqual([6]);
    expect(await sorted(one('title', 'is', '🎷 SAX 🎷'))).toEqual([6]);
    expect(await sorted(one('title', 'startsWith', '🎷'))).toEqual([6]);
    expect(await sorted(one('title', 'endsWith', 'sax 🎷'))).toEqual([6]);
    expect(await sorted(one('artist', 'is', 'שלום עליכם'))).toEqual([6]);
    expect(await sorted(one('artist', 'endsWith', 'עליכם'))).toEqual([6]);
    expect(await sorted(one('album', 'startsWith', 'أل'))).toEqual([6]);
    expect(await sorted(one('album', 'contains', 'بوم'))).toEqual([6]);
    // Longer than SQLite's LIKE takes here (instr() and the end of the text instead).
    expect(await sorted(one('title', 'contains', 'a'.repeat(300)))).toEqual([8]);
    expect(await sorted(one('title', 'endsWith', `${'A'.repeat(300)}Z`))).toEqual([8]);
    expect(await sorted(one('title', 'endsWith', `${'a'.repeat(401)}z`))).toEqual([]);
    expect(await sorted(one('title', 'startsWith', 'A'.repeat(400)))).toEqual([8]);
    expect(await sorted(one('title', 'startsWith', 'a'.repeat(401)))).toEqual([]);
    expect(await sorted(one('title', 'is', LONG_TITLE.toUpperCase()))).toEqual([8]);
    expect(await sorted(one('artist', 'endsWith', 'long long long long'))).toEqual([]);
    for (const long of [
      'x'.repeat(10_000),
      '%'.repeat(10_000),
      '_\\%'.repeat(3_334),
      '🎷'.repeat(10_000),
      'é'.repeat(10_000),
    ]) {
      for (const op of ['is', 'contains', 'startsWith', 'endsWith']) {
        expect(await sorted(one('title', op, long)), op).toEqual([]);
      }
      for (const op of ['isNot', 'notContains']) expect(await sorted(one('title', op, long)), op).toEqual(ALL);
    }
  });

  it('never writes a rule value into the SQL text', () => {
    const hostile = ["'; DROP TABLE songs; --", '%_\\', '🎷 שלום', 'x'.repeat(10_000)];
    const rules = readRules(
      all(
        ...hostile.flatMap((value) =>
          ['is', 'isNot', 'contains', 'notContains', 'startsWith', 'endsWith'].map((op) => ({
            field: 'title',
            op,
            value,
          })),
        ),
        { field: 'duration', op: 'between', value: [12.25, 99.75] },
        { field: 'added', op: 'before', value: '2031-02-03T04:05:06Z' },
        { field: 'playlist', op: 'in', value: 987654 },
      ),
      limits,
    );
    const compiled = smartSongsQuery(t.db.kysely, dialect, rules, options).compile();
    for (const text of ['DROP', '%', '🎷', 'xxx', '12.25', '99.75', '987654', String(Date.UTC(2031, 1, 3, 4, 5, 6))]) {
      expect(compiled.sql).not.toContain(text);
    }
    expect(compiled.parameters).toContain("'; drop table songs; --");
    expect(compiled.parameters).toContain('%\\%\\_\\\\%');
    expect(compiled.parameters).toContain(987654);
  });

  it('compares durations as numbers; a song without one is only not of any', async () => {
    expect(await sorted(one('duration', 'gt', 300))).toEqual([1, 2, 5, 8]);
    expect(await sorted(one('duration', 'gt', 300.5))).toEqual([1, 2, 5, 8]);
    expect(await sorted(one('duration', 'lt', 250))).toEqual([3, 7, 10]);
    expect(await sorted(one('duration', 'is', 200))).toEqual([3]);
    expect(await sorted(one('duration', 'isNot', 200))).toEqual(except(3));
    expect(await sorted(one('duration', 'between', [300, 337]))).toEqual([2, 5, 9]);
    expect(await sorted(one('duration', 'between', [0, 0]))).toEqual([10]);
  });

  it('compares when songs came in with dates and with days before now', async () => {
    expect(await sorted(one('added', 'before', '2026-03-01T00:00:00Z'))).toEqual([1, 2]);
    expect(await sorted(one('added', 'after', '2026-03-01T00:00:00+01:00'))).toEqual(except(1, 2));
    expect(await sorted(one('added', 'before', '2026-01-01T00:00:00Z'))).toEqual([]);
    expect(await sorted(one('added', 'before', '2026-01-01T00:00:00.001Z'))).toEqual([1, 2]);
    expect(await sorted(one('added', 'after', '2026-01-01T00:00:00Z'))).toEqual(except(1, 2));
    expect(await sorted(one('added', 'inTheLast', 7))).toEqual([5, 6, 7]);
    expect(await sorted(one('added', 'notInTheLast', 7))).toEqual(except(5, 6, 7));
    expect(await sorted(one('added', 'inTheLast', 1))).toEqual([5, 6, 7]);
    expect((await ids(one('added', 'inTheLast', 1), { ...options, now: NOW + 1 })).sort((a, b) => a - b)).toEqual([]);
  });

  it('chooses by the songs of a playlist', async () => {
    expect(await sorted(one('playlist', 'in', picked))).toEqual([3, 6]);
    expect(await sorted(one('playlist', 'notIn', picked))).toEqual(except(3, 6));
    expect(await sorted(one('playlist', 'in', picked + 1000))).toEqual([]);
    // Under `any`, several `in` (one of them unreadable by the owner, matching nothing) and other conditions.
    const other = (await createPlaylist(t.app, security, 'Other', [1, 3])).id;
    const anyOf = (unreadable: number[]) =>
      ids(
        {
          match: 'any',
          conditions: [
            { field: 'playlist', op: 'in', value: picked },
            { field: 'genre', op: 'is', value: 'world' },
            { field: 'playlist', op: 'in', value: other },
            { field: 'playlist', op: 'in', value: picked + 1000 },
          ],
        },
        { ...options, unreadable: new Set(unreadable) },
      ).then((found) => found.sort((a, b) => a - b));
    const world = await sorted(one('genre', 'is', 'world'));
    const union = (...lists: number[][]) => [...new Set(lists.flat())].sort((a, b) => a - b);
    expect(await anyOf([])).toEqual(union([3, 6], [1, 3], world));
    expect(await anyOf([other])).toEqual(union([3, 6], world));
    expect(await anyOf([picked, other])).toEqual(world);
  });

  it('nests groups with all and any', async () => {
    expect(await ids(NESTED_RULES)).toEqual([2, 1]);
    expect(await sorted({ match: 'any', conditions: [] })).toEqual([]);
    expect(
      await sorted({
        match: 'any',
        conditions: [
          all({ field: 'genre', op: 'is', value: 'rock' }, { match: 'any', conditions: [] }),
          all({ field: 'genre', op: 'is', value: 'world' }, all()),
          { field: 'playlist', op: 'in', value: picked },
        ],
      }),
    ).toEqual([3, 6]);
  });

  it('sorts by the keys in turn, ties by id, and stops at the limit', async () => {
    const rules = (sort: unknown[], limit?: number) => ({ ...all(), sort, ...(limit === undefined ? {} : { limit }) });
    expect(await ids(all())).toEqual(ALL);
    expect(await ids(rules([{ field: 'title' }]))).toEqual([4, 8, 2, 5, 3, 10, 7, 1, 9, 6]);
    expect(await ids(rules([{ field: 'title', order: 'desc' }]))).toEqual([6, 9, 1, 7, 10, 3, 5, 2, 8, 4]);
    expect(await ids(rules([{ field: 'genre' }]))).toEqual([10, 8, 1, 2, 5, 7, 3, 4, 9, 6]);
    expect(
      await ids(
        rules([
          { field: 'genre', order: 'desc' },
          { field: 'duration', order: 'desc' },
        ]),
      ),
    ).toEqual([6, 9, 3, 4, 1, 2, 5, 7, 8, 10]);
    expect(await ids(rules([{ field: 'duration' }]))).toEqual([10, 7, 3, 6, 9, 5, 2, 1, 8, 4]);
    expect(await ids(rules([{ field: 'duration', order: 'desc' }]))).toEqual([8, 1, 2, 5, 9, 6, 3, 7, 10, 4]);
    expect(await ids(rules([{ field: 'added', order: 'desc' }]))).toEqual([5, 6, 7, 3, 4, 8, 9, 10, 1, 2]);
    expect(await ids(rules([{ field: 'added', order: 'desc' }], 4))).toEqual([5, 6, 7, 3]);
    expect(await ids(rules([{ field: 'album' }, { field: 'artist', order: 'desc' }], 3))).toEqual([5, 10, 9]);
    expect(await ids(all(), { now: NOW, songsMax: 3 })).toEqual([1, 2, 3]);
    expect(await ids(all(), { now: NOW, songsMax: 0 })).toEqual([]);
  });

  it('shuffles in an order of its own for each rules, the same every time, the same on both databases', async () => {
    const shuffle = (limit?: number) =>
      readRules({ ...all(), sort: [{ field: 'random' }], ...(limit === undefined ? {} : { limit }) }, limits);
    const first = await ids(shuffle());
    expect([...first].sort((a, b) => a - b)).toEqual(ALL);
    expect(first).toEqual(shuffled(ALL, randomSeeds(shuffle())));
    expect(await ids(shuffle())).toEqual(first);
    const other = await ids(shuffle(9));
    expect(other).toEqual(shuffled(ALL, randomSeeds(shuffle(9))).slice(0, 9));
    expect(randomSeeds(shuffle(9))).not.toEqual(randomSeeds(shuffle()));
  });

  it('reads the indexes for `is` and `startsWith`', async () => {
    for (const [rules, index] of [
      [one('genre', 'is', 'Jazz'), 'songs_norm_genre'],
      [one('title', 'startsWith', 'so'), 'songs_norm_title'],
      [one('artist', 'is', 'Zoë'), 'songs_norm_artist'],
      [{ ...all(), sort: [{ field: 'added', order: 'desc' }], limit: 3 }, 'songs_added'],
    ] as const) {
      const compiled = smartSongsQuery(t.db.kysely, dialect, readRules(rules, limits), options).compile();
      const plan =
        dialect === 'sqlite'
          ? await t.db.kysely.executeQuery(
              CompiledQuery.raw(`EXPLAIN QUERY PLAN ${compiled.sql}`, [...compiled.parameters]),
            )
          : await t.db.kysely.transaction().execute(async (trx) => {
              // Ten songs are read faster whole: the plan that a large catalog gets is asked for.
              await sql`SET LOCAL enable_seqscan = off`.execute(trx);
              return trx.executeQuery(CompiledQuery.raw(`EXPLAIN ${compiled.sql}`, [...compiled.parameters]));
            });
      expect(JSON.stringify(plan.rows), JSON.stringify(rules)).toContain(index);
    }
  });
});

it('prefixEnd is the least text after every text with the prefix', () => {
  expect(prefixEnd('so')).toBe('sp');
  expect(prefixEnd('')).toBeUndefined();
  expect(prefixEnd('a\u{10FFFF}')).toBe('b');
  expect(prefixEnd('\u{10FFFF}\u{10FFFF}')).toBeUndefined();
  expect(prefixEnd('a\uD7FF')).toBe('a\uE000');
  expect(prefixEnd('🎷')).toBe('🎸');
  expect(prefixEnd('a\uFFFF')).toBe('a\u{10000}');
});
