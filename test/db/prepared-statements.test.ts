import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresPool, prepared } from '../../src/db/postgres.js';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js';

// A statement marked with `prepared` runs as a named prepared statement on its connection; any other statement does
// not, and a name stays with its one text.
describe('statements prepared once per connection on PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    await database.drop();
  });

  it('names a marked statement on the server and reuses it with other values; leaves the rest unnamed', async () => {
    const pool = openPostgresPool(
      {
        dialect: 'postgres',
        url: database.url,
        poolSize: 1,
        queryTimeoutMs: 5000,
        connectTimeoutMs: 5000,
        startTimeoutMs: 5000,
      },
      { onConnectionError: () => undefined },
    );
    const client = await pool.connect();
    try {
      // What `prepared('probe')` writes first in a statement's SQL.
      const mark = prepared('probe').toOperationNode().sqlFragments.join('');
      expect(mark).toBe('/* prepared: probe */');
      const marked = `${mark} SELECT $1::int + 1 AS n`;
      const first = await client.query<{ n: number }>(marked, [1]);
      const second = await client.query<{ n: number }>(marked, [41]);
      expect([first.rows[0]!.n, second.rows[0]!.n]).toEqual([2, 42]);
      await client.query('SELECT $1::int AS plain', [1]);

      const named = await client.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements ORDER BY name',
        [],
      );
      expect(named.rows).toEqual([{ name: 'mixtape-probe', statement: marked }]);

      await expect(client.query('/* prepared: probe */ SELECT 2 AS other', [])).rejects.toThrow(/probe/);
    } finally {
      client.release();
      await pool.end();
    }
  });
});
