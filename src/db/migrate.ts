import { sql, type Kysely } from 'kysely';
import { Migrator, type Migration, type MigrationProvider } from 'kysely/migration';
import type { Db } from './database.js';
import type { Database } from './schema.js';
import * as initial from './migrations/2026-11-20-initial.js';
import * as serviceProbe from './migrations/2026-11-23-service-probe.js';
import * as serving from './migrations/2026-11-24-serving.js';
import * as songTitles from './migrations/2026-11-25-song-titles.js';
import * as playlistVersions from './migrations/2026-11-27-playlist-versions.js';
import * as ownerSearch from './migrations/2026-11-28-owner-search.js';
import * as signInBudgets from './migrations/2026-11-29-sign-in-budgets.js';
import * as playlistHistory from './migrations/2026-11-30-playlist-history.js';
import * as revisionCopies from './migrations/2026-12-01-revision-copies.js';
import * as sharing from './migrations/2026-12-02-sharing.js';
import * as sharedFeed from './migrations/2026-12-03-shared-feed.js';
import * as libraryVersion from './migrations/2026-12-04-library-version.js';
import * as membershipChanges from './migrations/2026-12-05-membership-changes.js';
import * as entries from './migrations/2026-12-06-entries.js';
import * as smartPlaylists from './migrations/2026-12-07-smart-playlists.js';
import * as smartSources from './migrations/2026-12-08-smart-sources.js';
import * as smartRights from './migrations/2026-12-09-smart-rights.js';
import * as editKeysAndSongCount from './migrations/2026-12-10-edit-keys-and-song-count.js';
import * as streamTickets from './migrations/2026-12-11-stream-tickets.js';
import * as catalogChanges from './migrations/2026-12-12-catalog-changes.js';
import * as editKeyWrites from './migrations/2026-12-13-edit-key-writes.js';
import * as entryOrigins from './migrations/2026-12-14-entry-origins.js';
import * as library from './migrations/2026-12-15-library.js';
import * as appTokens from './migrations/2026-12-16-app-tokens.js';

/** Every migration, oldest first. Landed migrations are frozen; add a new file for a change. */
const MIGRATIONS = {
  '2026-11-20-initial': initial,
  '2026-11-23-service-probe': serviceProbe,
  '2026-11-24-serving': serving,
  '2026-11-25-song-titles': songTitles,
  '2026-11-27-playlist-versions': playlistVersions,
  '2026-11-28-owner-search': ownerSearch,
  '2026-11-29-sign-in-budgets': signInBudgets,
  '2026-11-30-playlist-history': playlistHistory,
  '2026-12-01-revision-copies': revisionCopies,
  '2026-12-02-sharing': sharing,
  '2026-12-03-shared-feed': sharedFeed,
  '2026-12-04-library-version': libraryVersion,
  '2026-12-05-membership-changes': membershipChanges,
  '2026-12-06-entries': entries,
  '2026-12-07-smart-playlists': smartPlaylists,
  '2026-12-08-smart-sources': smartSources,
  '2026-12-09-smart-rights': smartRights,
  '2026-12-10-edit-keys-and-song-count': editKeysAndSongCount,
  '2026-12-11-stream-tickets': streamTickets,
  '2026-12-12-catalog-changes': catalogChanges,
  '2026-12-13-edit-key-writes': editKeyWrites,
  '2026-12-14-entry-origins': entryOrigins,
  '2026-12-15-library': library,
  '2026-12-16-app-tokens': appTokens,
} as const;

class StaticMigrationProvider implements MigrationProvider {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  getMigrations(): Promise<Record<string, Migration>> {
    const dialect = this.#db.dialect;
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

/** A migration's name. */
export type MigrationName = keyof typeof MIGRATIONS;

async function run(
  kysely: Kysely<Database>,
  db: Db,
  disableTransactions: boolean,
  target: MigrationName | undefined,
): Promise<string[]> {
  const migrator = new Migrator({ db: kysely, provider: new StaticMigrationProvider(db), disableTransactions });
  const { error, results } = await (target === undefined ? migrator.migrateToLatest() : migrator.migrateTo(target));
  if (error !== undefined) throw error instanceof Error ? error : new Error('migration failed', { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Brings the schema up to date; returns the names of the migrations it applied. Safe when several processes
 * start at once: PostgreSQL serialises them with the migrator's advisory lock; on SQLite the whole run holds
 * the database's write lock from its first statement (BEGIN IMMEDIATE), so a second process waits, then finds
 * nothing left to do.
 */
export function migrateToLatest(db: Db): Promise<string[]> {
  return migrateTo(db, undefined);
}

/**
 * Brings the schema up (or down) to the named migration, or the latest one (undefined), as `migrateToLatest` does;
 * returns the names of the migrations it ran. Tests of a migration start from the schema before it.
 */
export async function migrateTo(db: Db, target: MigrationName | undefined): Promise<string[]> {
  if (db.dialect === 'postgres') return run(db.kysely, db, false, target);
  return db.kysely.connection().execute(async (connection) => {
    await sql`BEGIN IMMEDIATE`.execute(connection);
    try {
      const applied = await run(connection, db, true, target);
      await sql`COMMIT`.execute(connection);
      return applied;
    } catch (error) {
      await sql`ROLLBACK`.execute(connection);
      throw error;
    }
  });
}
