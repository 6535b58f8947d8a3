import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './database.js';
import * as initial from './migrations/2026-11-20-initial.js';

/** Every migration, oldest first. Landed migrations are frozen; add a new file for a change. */
const MIGRATIONS = { '2026-11-20-initial': initial } as const;

class StaticMigrationProvider implements MigrationProvider {
  constructor(private readonly db: Db) {}

  getMigrations(): Promise<Record<string, Migration>> {
    const dialect = this.db.dialect;
    return Promise.resolve(
      Object.fromEntries(
        Object.entries(MIGRATIONS).map(([name, m]) => [
          name,
          { up: (kysely) => m.up(kysely, dialect), down: (kysely) => m.down(kysely, dialect) },
        ]),
      ),
    );
  }
}

/** Brings the schema up to date; returns the names of the migrations it applied. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db: db.kysely, provider: new StaticMigrationProvider(db) });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) throw error instanceof Error ? error : new Error('migration failed', { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
