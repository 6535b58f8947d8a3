import { sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { SCAN_OWNER_UP_TO, countSearchMatches, pageOfMatches } from '../src/search/playlist-search.js';
import { describeEachDatabase } from './helpers/each-database.js';
import { createPlaylist, type PlaylistBody } from './helpers/requests.js';

// Search must be able to use its trigram index rather than scan every playlist (DESIGN.md section 5), and a small
// library is read through its owner's key, so that its cost does not depend on everyone else's playlists.
describeEachDatabase('search plan on %s', (t, dialect) => {
  beforeAll(async () => {
    await t.addUser('planner', 'pw');
    await t.addUser('small', 'pw');
    if (dialect === 'postgres') {
      // Enough playlists for the planner to prefer the trigram index for a rare word over the owner's rows.
      await sql`INSERT INTO playlists (owner_id, name, created_at)
          SELECT 1, 'List ' || g, 0 FROM generate_series(1, 50000) g`.execute(t.db.kysely);
      await sql`INSERT INTO playlists (owner_id, name, created_at)
          SELECT 2, 'Small ' || g, 0 FROM generate_series(1, 10) g`.execute(t.db.kysely);
      await sql`INSERT INTO playlist_documents (owner_id, playlist_id, doc)
          SELECT owner_id, id, lower(name) || ' ' || md5(id::text) FROM playlists`.execute(t.db.kysely);
      await sql`VACUUM ANALYZE`.execute(t.db.kysely);
    }
  });

  const plan = async (run: () => Promise<unknown>): Promise<string> => {
    const before = t.queries.length;
    await run();
    const query = t.queries[before]!;
    const prefix = dialect === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
    const result = await t.db.kysely.executeQuery<Record<string, string>>({ ...query, sql: prefix + query.sql });
    return result.rows.map((row) => row.detail ?? row['QUERY PLAN']).join('\n');
  };
  const index =
    dialect === 'sqlite' ? /playlist_trigrams VIRTUAL TABLE INDEX \d+:M/ : /Index Scan on playlist_documents_doc/;

  const ownerIndex = dialect === 'sqlite' ? /USING PRIMARY KEY \(owner_id=\?\)/ : /Index.* using playlist_documents_pk/;

  it('finds the page of matches of a large library through the trigram index', async () => {
    const words = ['zqxjv', 'vibes'];
    expect(await plan(() => pageOfMatches(t.db.kysely, dialect, 1, words, true, 20, 0).execute())).toMatch(index);
  });

  it('counts the matches of a large library through the trigram index', async () => {
    expect(await plan(() => countSearchMatches(t.db.kysely, dialect, 1, ['zqxjv'], true))).toMatch(index);
  });

  it("reads a small library's own documents through the owner index, without the trigram index", async () => {
    const pagePlan = await plan(() => pageOfMatches(t.db.kysely, dialect, 2, ['zqxjv'], false, 20, 0).execute());
    const countPlan = await plan(() => countSearchMatches(t.db.kysely, dialect, 2, ['zqxjv'], false));
    for (const found of [pagePlan, countPlan]) {
      expect(found).toMatch(ownerIndex);
      expect(found).not.toMatch(index);
    }
  });
});

// A library that grows past SCAN_OWNER_UP_TO is searched through the trigram index from then on (on SQLite its
// documents go into the index at that moment), and finds every match: those made before and after.
describeEachDatabase(`a library growing past ${SCAN_OWNER_UP_TO} playlists on %s`, (t, dialect) => {
  it('finds the matches made before and after it grew, and forgets a deleted one', async () => {
    const security = await t.addUser('grower', 'pw');
    const marked = new Set([5, SCAN_OWNER_UP_TO - 1, SCAN_OWNER_UP_TO + 1, SCAN_OWNER_UP_TO + 4]);
    const ids: number[] = [];
    // A few at a time, so that several creates share a write and one of them crosses the line.
    for (let start = 0; start < SCAN_OWNER_UP_TO + 5; start += 25) {
      const batch = Array.from({ length: Math.min(25, SCAN_OWNER_UP_TO + 5 - start) }, (_, i) => start + i);
      const made = await Promise.all(
        batch.map((n) => createPlaylist(t.app, security, marked.has(n) ? `Zqxjv ${n}` : `List ${n}`, [1, 2])),
      );
      ids.push(...made.map((p) => p.id));
    }
    const search = async () => {
      const response = await t.app.inject({ method: 'GET', url: '/v3/playlist?search=zqxjv', headers: { security } });
      // Creates made at once get their ids in no set order: compared as sets.
      return response
        .json<PlaylistBody[]>()
        .map((p) => p.name)
        .sort();
    };
    const before = t.queries.length;
    expect(await search()).toEqual([...marked].map((n) => `Zqxjv ${n}`).sort());
    const used = t.queries
      .slice(before)
      .map((q) => q.sql)
      .join('\n');
    expect(used).toMatch(dialect === 'sqlite' ? /playlist_trigrams MATCH/ : /LIKE/);

    const gone = ids[SCAN_OWNER_UP_TO + 1]!;
    const deleted = await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${gone}`, headers: { security } });
    expect(deleted.statusCode).toBe(200);
    const left = [5, SCAN_OWNER_UP_TO - 1, SCAN_OWNER_UP_TO + 4].map((n) => `Zqxjv ${n}`);
    expect(await search()).toEqual(left.sort());
  }, 120_000);
});
