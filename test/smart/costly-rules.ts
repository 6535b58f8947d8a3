/**
 * A catalog and rules for the tests of costly rules (test/smart/costly-rules.test.ts, rules-runner.test.ts): tens of
 * thousands of generated songs, and rules that read every one of them fifty times.
 */
import { sql, type RawBuilder } from 'kysely';
import type { TestApp } from '../helpers/app.js';
import type { TestDialect } from '../helpers/databases.js';

/** Songs added to the demo catalog: enough that COSTLY_RULES read for far longer than the tests' time limit. */
export const GENERATED_SONGS = 60_000;

/** Generated songs, written straight to the catalog by one statement. */
export async function addGeneratedSongs(t: TestApp, dialect: TestDialect, count = GENERATED_SONGS): Promise<void> {
  const now = Date.now();
  const columns = sql`(title, artist, album, genre, duration, search_doc, added,
    norm_title, norm_artist, norm_album, norm_genre)`;
  const values = (i: RawBuilder<unknown>) => sql`'Costly song ' || ${i}, 'Costly artist ' || (${i} % 997),
    'Costly album ' || (${i} % 4999), 'Costly', 200, 'costly song ' || ${i}, CAST(${now} AS bigint),
    'costly song ' || ${i} || ' of many words', 'costly artist ' || (${i} % 997) || ' and band',
    'costly album ' || (${i} % 4999) || ' volume one', 'costly'`;
  if (dialect === 'sqlite') {
    await sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      INSERT INTO songs ${columns} SELECT ${values(sql`n.i`)} FROM n`.execute(t.db.kysely);
  } else {
    await sql`INSERT INTO songs ${columns}
      SELECT ${values(sql`n.i`)} FROM generate_series(1, ${count}) AS n(i)`.execute(t.db.kysely);
    await sql`ANALYZE songs`.execute(t.db.kysely);
  }
}

const FIELDS = ['title', 'artist', 'album'] as const;

/** 50 `contains` of 12 letters that match nothing, under `any`, sorted by three keys: every song read 50 times. */
export const COSTLY_RULES = {
  match: 'any',
  conditions: Array.from({ length: 50 }, (_, i) => ({
    field: FIELDS[i % 3],
    op: 'contains',
    value: `qz${String(i).padStart(2, '0')}xvkwjpyf`,
  })),
  sort: [{ field: 'artist' }, { field: 'album', order: 'desc' }, { field: 'title' }],
  limit: 1000,
};

/** Rules a lookup of an index answers: Jazz, three songs. */
export const CHEAP_RULES = { match: 'all', conditions: [{ field: 'genre', op: 'is', value: 'jazz' }], limit: 3 };
