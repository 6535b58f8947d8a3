import { beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { rulesRunner } from '../../src/smart/rules-runner.js';
import { readRules } from '../../src/smart/rules.js';
import { smartSongIds } from '../../src/smart/smart-songs.repository.js';
import { prepareDatabase } from '../../src/startup.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { addGeneratedSongs, CHEAP_RULES, COSTLY_RULES } from './costly-rules.js';

const TIMEOUT_MS = 50;

/** A query's outcome as a status: 200 for its songs, an ApiError's status otherwise. */
const status = (query: Promise<unknown>) =>
  query.then(
    () => 200,
    (error: unknown) => (error as { statusCode?: number }).statusCode ?? 500,
  );

describeEachDatabase('the rules runner on %s', (t, dialect) => {
  beforeAll(async () => {
    await addGeneratedSongs(t, dialect);
  });

  it('chooses the songs the rules choose, as the query run in place does', async () => {
    const runner = rulesRunner(t.db, { timeoutMs: 10_000, database: t.config.database, threads: 1 });
    try {
      const options = { now: Date.now(), songsMax: t.config.limits.songsMax };
      const rules = readRules(
        {
          match: 'any',
          conditions: [
            { field: 'artist', op: 'contains', value: 'artist 99' },
            { field: 'genre', op: 'is', value: 'jazz' },
          ],
          sort: [{ field: 'album', order: 'desc' }, { field: 'title' }],
          limit: 200,
        },
        t.config.limits,
      );
      const ids = await runner.songIds(rules, options, 1);
      expect(ids).toHaveLength(200);
      const expected = await t.db.kysely
        .selectFrom('songs')
        .select('id')
        .where((eb) => eb.or([eb('norm_artist', 'like', '%artist 99%'), eb('norm_genre', '=', 'jazz')]))
        .orderBy('norm_album', 'desc')
        .orderBy('norm_title')
        .orderBy('id')
        .limit(200)
        .execute();
      expect(ids).toEqual(expected.map((row) => row.id));
    } finally {
      await runner.close();
    }
  });

  it("runs one query of a user's at a time, and refuses their burst with 429 while others' queries run", async () => {
    const runner = rulesRunner(t.db, { timeoutMs: TIMEOUT_MS, database: t.config.database, threads: 2 });
    try {
      const options = { now: Date.now(), songsMax: t.config.limits.songsMax };
      const burst = Array.from({ length: 12 }, () =>
        status(runner.songIds(readRules(COSTLY_RULES, t.config.limits), options, 1)),
      );
      const other = status(runner.songIds(readRules(CHEAP_RULES, t.config.limits), options, 2));
      const statuses = await Promise.all(burst);
      // One runs (out of time) and eight wait, each at most as long as a query may run; the rest are refused at once.
      expect(statuses[0]).toBe(422);
      expect(statuses.slice(1).every((s) => s === 422 || s === 429)).toBe(true);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(3);
      expect(await other).toBe(200);
    } finally {
      await runner.close();
    }
  });

  it('refuses queries once closed', async () => {
    const runner = rulesRunner(t.db, { timeoutMs: TIMEOUT_MS, database: t.config.database, threads: 1 });
    await runner.close();
    const options = { now: Date.now(), songsMax: t.config.limits.songsMax };
    expect(await status(runner.songIds(readRules(CHEAP_RULES, t.config.limits), options, 1))).toBe(503);
  });
});

it('runs the query on the event loop for an in-memory SQLite database, which no thread can open', async () => {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
  const db = openDatabase(config.database);
  const runner = rulesRunner(db, { timeoutMs: 1000, database: config.database, threads: 1 });
  try {
    await prepareDatabase(db, config, { info: () => {}, warn: () => {} });
    const rules = readRules(CHEAP_RULES, config.limits);
    const options = { now: Date.now(), songsMax: config.limits.songsMax };
    const ids = await runner.songIds(rules, options, 1);
    expect(ids).toHaveLength(3);
    expect(ids).toEqual(await smartSongIds(db.kysely, 'sqlite', rules, options));
  } finally {
    await runner.close();
    await db.close();
  }
});
