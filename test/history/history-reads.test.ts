import type { CompiledQuery } from 'kysely';
import { expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist } from '../helpers/requests.js';

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The revision rows a PostgreSQL statement reads (returned or filtered out), as EXPLAIN ANALYZE counts them. */
const revisionRowsRead = (node: PlanNode): number =>
  (node['Relation Name'] === 'playlist_revisions'
    ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1)
    : 0) + (node.Plans ?? []).reduce((sum, child) => sum + revisionRowsRead(child), 0);

/** What the statements read of the revisions: rows on PostgreSQL; on SQLite, the plans that search them. */
async function revisionReads(t: TestApp, dialect: string, statements: CompiledQuery[]) {
  let rows = 0;
  const plans: string[] = [];
  for (const statement of statements.filter((s) => s.sql.includes('playlist_revisions'))) {
    if (dialect === 'postgres') {
      const explained = await t.db.kysely.executeQuery<{ 'QUERY PLAN': { Plan: PlanNode }[] }>({
        ...statement,
        sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
      });
      rows += revisionRowsRead(explained.rows[0]!['QUERY PLAN'][0]!.Plan);
    } else {
      const explained = await t.db.kysely.executeQuery<{ detail: string }>({
        ...statement,
        sql: `EXPLAIN QUERY PLAN ${statement.sql}`,
      });
      plans.push(...explained.rows.map((row) => row.detail).filter((d) => d.includes('playlist_revisions')));
    }
  }
  return { rows, plans };
}

describeEachDatabase('reading a version after a long history on %s', (t, dialect) => {
  const renames = 60;

  it('keeps every version within its playlist length of a whole copy, even when only the name changes', async () => {
    const security = await t.addUser();
    const created = await createPlaylist(t.app, security, 'Name 0', [1, 2, 3]);
    for (let i = 1; i <= renames; i++) {
      const renamed = await t.app.inject({
        method: 'PATCH',
        url: `/v3/playlist/${created.id}`,
        headers: { security, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: `Name ${i}` }),
      });
      expect(renamed.statusCode).toBe(200);
    }
    const rows = await t.db.kysely
      .selectFrom('playlist_revisions')
      .select(['version', 'splice_at'])
      .where('playlist_id', '=', created.id)
      .orderBy('version')
      .execute();
    expect(rows).toHaveLength(renames + 1);
    let sinceCopy = 0;
    let longest = 0;
    for (const row of rows) {
      sinceCopy = row.splice_at === null ? 0 : sinceCopy + 1;
      longest = Math.max(longest, sinceCopy);
    }
    // Rows after a whole copy: at most one more than its songs.
    expect(longest).toBeLessThanOrEqual(3 + 1);

    // Reading the newest version reads those rows and a few more, not the history.
    const before = t.queries.length;
    const read = await t.app.inject({
      method: 'GET',
      url: `/v3/playlist/${created.id}/versions/${renames + 1}`,
      headers: { security },
    });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json<{ name: string }>().name).toBe(`Name ${renames}`);
    const reads = await revisionReads(t, dialect, t.queries.slice(before));
    if (dialect === 'postgres') {
      expect(reads.rows).toBeGreaterThan(0);
      expect(reads.rows).toBeLessThanOrEqual(2 * (3 + 2));
    } else {
      expect(reads.plans.length).toBeGreaterThan(0);
      // Every search of the revisions is bounded by version, none by the playlist alone.
      for (const plan of reads.plans) expect(plan).not.toMatch(/\(playlist_id=\?\)/);
    }
  });
});
