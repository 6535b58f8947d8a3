import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * The catalog's changes, as the change feed tells them (`types=catalog`, API 1.8.0) and `GET /v3/song?changedSince=N`
 * lists them.
 *
 * - `songs.changed_in`: the catalog version a song's last change made (0 for a song never changed since it came in).
 *   The trigger that counts the catalog's version now also counts a change of `genre` (a playlist's answer shows it,
 *   and smart playlists choose by it), and writes the version it made into the song's row. The index
 *   `songs_changed (changed_in, id)` pages the songs changed after a version.
 * - `catalog_changes`: one row per catalog import that changed songs, the catalog version it reached and when. An
 *   import in several transactions replaces its row in each (`import_id`), so that the feed, which reads rows past a
 *   position as it reads revisions (`seq`, and `xid` on PostgreSQL: see history/changes.repository.ts), lists one
 *   item per import.
 */
/** What a catalog change is from here on: a song's title, artist, album, genre or duration changed. */
const CATALOG_COLUMNS = ['title', 'artist', 'album', 'genre', 'duration'];

/** A trigger's condition: any of `columns` differs between the row before (`old`) and after (`next`). */
function anyChanged(dialect: Dialect, columns: readonly string[], old: string, next: string): string {
  const differs = dialect === 'sqlite' ? 'IS NOT' : 'IS DISTINCT FROM';
  return columns.map((c) => `${old}.${c} ${differs} ${next}.${c}`).join(' OR ');
}

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .alterTable('songs')
    .addColumn('changed_in', 'bigint', (col: any) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('songs_changed').on('songs').columns(['changed_in', 'id']).execute();

  await db.schema
    .createTable('catalog_changes')
    .addColumn('seq', id, (col: any) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedByDefaultAsIdentity(),
    )
    .addColumn('xid', 'bigint', (col: any) =>
      col.notNull().defaultTo(dialect === 'sqlite' ? 0 : sql`(pg_current_xact_id()::text::bigint)`),
    )
    .addColumn('import_id', 'text', (col: any) => col.notNull())
    .addColumn('version', 'bigint', (col: any) => col.notNull())
    .addColumn('at', 'bigint', (col: any) => col.notNull())
    .execute();
  await db.schema.createIndex('catalog_changes_feed').on('catalog_changes').columns(['xid', 'seq']).execute();
  await db.schema.createIndex('catalog_changes_import').on('catalog_changes').column('import_id').execute();

  const changed = (old: string, next: string) => anyChanged(dialect, CATALOG_COLUMNS, old, next);

  if (dialect === 'sqlite') {
    await sql`DROP TRIGGER songs_catalog_version`.execute(db);
    await sql
      .raw(
        `CREATE TRIGGER songs_catalog_version AFTER UPDATE ON songs WHEN ${changed('old', 'new')} BEGIN
          UPDATE catalog_version SET version = version + 1;
          UPDATE songs SET changed_in = (SELECT version FROM catalog_version) WHERE id = new.id;
        END`,
      )
      .execute(db);
    return;
  }
  await sql`DROP TRIGGER songs_catalog_version ON songs`.execute(db);
  await sql`DROP FUNCTION count_catalog_version()`.execute(db);
  await sql`CREATE FUNCTION count_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE catalog_version SET version = version + 1 RETURNING version INTO NEW.changed_in;
      RETURN NEW;
    END $$`.execute(db);
  await sql
    .raw(
      `CREATE TRIGGER songs_catalog_version BEFORE UPDATE ON songs
      FOR EACH ROW WHEN (${changed('OLD', 'NEW')}) EXECUTE FUNCTION count_catalog_version()`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  // The columns of migration 2026-11-24-serving, before genre counted.
  const changed = (old: string, next: string) =>
    anyChanged(dialect, ['title', 'artist', 'album', 'duration'], old, next);
  if (dialect === 'sqlite') {
    await sql`DROP TRIGGER songs_catalog_version`.execute(db);
    await sql
      .raw(
        `CREATE TRIGGER songs_catalog_version AFTER UPDATE ON songs WHEN ${changed('old', 'new')} BEGIN
          UPDATE catalog_version SET version = version + 1;
        END`,
      )
      .execute(db);
  } else {
    await sql`DROP TRIGGER songs_catalog_version ON songs`.execute(db);
    await sql`DROP FUNCTION count_catalog_version()`.execute(db);
    await sql`CREATE FUNCTION count_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN UPDATE catalog_version SET version = version + 1; RETURN NULL; END $$`.execute(db);
    await sql
      .raw(
        `CREATE TRIGGER songs_catalog_version AFTER UPDATE ON songs
        FOR EACH ROW WHEN (${changed('OLD', 'NEW')}) EXECUTE FUNCTION count_catalog_version()`,
      )
      .execute(db);
  }
  await db.schema.dropTable('catalog_changes').execute();
  await db.schema.dropIndex('songs_changed').execute();
  await db.schema.alterTable('songs').dropColumn('changed_in').execute();
}
