import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCAN_OWNER_UP_TO, countSearchMatches, searchPlaylists } from '../src/playlists/playlist.repository.js';
import { DIALECTS } from './helpers/databases.js';
import { createTestApp, type TestApp } from './helpers/app.js';

// Search must be able to use its trigram index rather than scan every playlist (DESIGN.md section 5), and a small
// library is read through its owner's key, so that its cost does not depend on everyone else's playlists.
for (const dialect of DIALECTS) {
  describe(`search plan on ${dialect}`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(dialect);
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
    afterAll(async () => {
      await t.close();
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

    const large = SCAN_OWNER_UP_TO + 1;
    const ownerIndex =
      dialect === 'sqlite' ? /USING PRIMARY KEY \(owner_id=\?\)/ : /Index.* using playlist_documents_pk/;

    it('finds the page of matches of a large library through the trigram index', async () => {
      const words = ['zqxjv', 'vibes'];
      expect(await plan(() => searchPlaylists(t.db.kysely, dialect, 1, words, large, 20, 0))).toMatch(index);
    });

    it('counts the matches of a large library through the trigram index', async () => {
      expect(await plan(() => countSearchMatches(t.db.kysely, dialect, 1, ['zqxjv'], large))).toMatch(index);
    });

    it("reads a small library's own documents through the owner index, without the trigram index", async () => {
      const pagePlan = await plan(() => searchPlaylists(t.db.kysely, dialect, 2, ['zqxjv'], 10, 20, 0));
      const countPlan = await plan(() => countSearchMatches(t.db.kysely, dialect, 2, ['zqxjv'], 10));
      for (const found of [pagePlan, countPlan]) {
        expect(found).toMatch(ownerIndex);
        expect(found).not.toMatch(index);
      }
    });
  });
}
