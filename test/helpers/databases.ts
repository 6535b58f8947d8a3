import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import type { TestPostgres } from '../setup/postgres.js';

export const DIALECTS = ['sqlite', 'postgres'] as const;
export type TestDialect = (typeof DIALECTS)[number];

/**
 * A role that may create databases on the PostgreSQL server of this run (chosen once by test/setup/postgres.ts);
 * every test database is created on it and dropped afterwards.
 */
export function pgAdminUrl(): string {
  const chosen = inject('testPostgres') as TestPostgres | undefined;
  if (chosen === undefined)
    throw new Error('No PostgreSQL was chosen for this run: test/setup/postgres.ts is not in its globalSetup');
  return chosen.adminUrl;
}

export interface TestDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/** A new, empty database of its own: a temporary SQLite file, or a new PostgreSQL database. */
export async function createTestDatabase(dialect: TestDialect): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'mixtape-test-'));
    return {
      url: `sqlite:${join(dir, 'mixtape.db')}`,
      drop: () => {
        rmSync(dir, { recursive: true, force: true });
        return Promise.resolve();
      },
    };
  }
  const name = `mixtape_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgAdminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(pgAdminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: pgAdminUrl() });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
