import { sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';

// A search reads its caller's documents through the key (owner, playlist), never another owner's rows, however
// many other owners have: its cost is the caller's library.
describeEachDatabase('search plan on %s', (t, dialect) => {
  let small = '';

  beforeAll(async () => {
    await t.addUser('planner', 'pw');
    small = await t.addUser('small', 'pw');
    // 50 000 playlists of another owner, then the caller's 10.
    await sql`INSERT INTO playlists (owner_id, name, created_at)
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
        SELECT 1, 'List ' || i, 0 FROM n`.execute(t.db.kysely);
    await sql`INSERT INTO playlists (owner_id, name, created_at) SELECT 2, 'Small ' || id, 0 FROM playlists WHERE id <= 10`.execute(
      t.db.kysely,
    );
    await sql`INSERT INTO playlist_documents (owner_id, playlist_id, doc)
        SELECT owner_id, id, lower(name) FROM playlists`.execute(t.db.kysely);
    await sql`UPDATE users SET playlist_count = (SELECT count(*) FROM playlists WHERE owner_id = users.id)`.execute(
      t.db.kysely,
    );
    await sql.raw(dialect === 'postgres' ? 'VACUUM ANALYZE' : 'ANALYZE').execute(t.db.kysely);
  });

  it("reads the caller's documents through the owner key, slice after slice", async () => {
    const before = t.queries.length;
    const answer = await t.app.inject({ url: '/v3/playlist?search=small', headers: { security: small } });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['x-total-count']).toBe('10');
    const reads = t.queries.slice(before).filter((query) => /playlist_documents/.test(query.sql));
    expect(reads.length).toBeGreaterThan(0);
    for (const query of reads) {
      const prefix = dialect === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
      const result = await t.db.kysely.executeQuery<Record<string, string>>({ ...query, sql: prefix + query.sql });
      const plan = result.rows.map((row) => row.detail ?? row['QUERY PLAN']).join('\n');
      expect(plan, plan).toMatch(
        dialect === 'sqlite'
          ? /USING PRIMARY KEY \(owner_id=\? AND playlist_id>\?\)/
          : /Index Scan using playlist_documents_pk on playlist_documents d[^\n]*\n\s+Index Cond: \(\(ROW\(owner_id, playlist_id\) > ROW\('\d+'::bigint, '\d+'::bigint\)\) AND \(owner_id = '\d+'::bigint\)\)/,
      );
      expect(plan, plan).not.toMatch(/SCAN d\b|Seq Scan on playlist_documents/);
    }
  });
});
