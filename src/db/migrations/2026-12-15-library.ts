import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Each user's folders and their own order of the playlists they may read (API 1.10.0, src/library/):
 *
 * - `folders`: a user's folder, in `parent_id` (null: the top level), placed by `order_key` among the folders and
 *   placements of that parent (fractional-indexing keys, compared as bytes: `COLLATE "C"` on PostgreSQL).
 * - `library_placements`: where a user filed a playlist they may read: in `folder_id` (null: the top level), by
 *   `order_key`. One row per (user, playlist), so a playlist is in one place of a user's tree; a playlist without a row
 *   (new, newly shared, restored) is shown at the end of the top level. A delete or an unshare removes the rows.
 * - `library_changes`: the version of each user's tree, one row per user (written first in every write of the tree, so
 *   that it also holds the user's writes of it one after the other): its `seq` is the version, and the change feed
 *   (`types=library`) reads the row past a position as it reads the other logs (`seq`, and `xid` on PostgreSQL: see
 *   history/changes.repository.ts). A write replaces the row, so the log keeps each user's latest change only.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  const key = dialect === 'postgres' ? sql`text COLLATE "C"` : sql`text`;
  await db.schema
    .createTable('folders')
    .addColumn('id', id, (col: any) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedByDefaultAsIdentity(),
    )
    .addColumn('user_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('parent_id', id)
    .addColumn('name', 'text', (col: any) => col.notNull())
    .addColumn('order_key', key, (col: any) => col.notNull())
    .addColumn('created_at', 'bigint', (col: any) => col.notNull())
    .execute();
  await db.schema.createIndex('folders_parent').on('folders').columns(['user_id', 'parent_id', 'order_key']).execute();

  await db.schema
    .createTable('library_placements')
    .addColumn('user_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('playlist_id', id, (col: any) => col.notNull())
    .addColumn('folder_id', id)
    .addColumn('order_key', key, (col: any) => col.notNull())
    .addPrimaryKeyConstraint('library_placements_pk', ['user_id', 'playlist_id'])
    .execute();
  await db.schema
    .createIndex('library_placements_folder')
    .on('library_placements')
    .columns(['user_id', 'folder_id', 'order_key'])
    .execute();
  await db.schema.createIndex('library_placements_playlist').on('library_placements').column('playlist_id').execute();

  if (dialect === 'postgres') await sql`CREATE SEQUENCE library_changes_seq`.execute(db);
  await db.schema
    .createTable('library_changes')
    .addColumn('user_id', id, (col: any) => col.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('seq', 'bigint', (col: any) => col.notNull())
    .addColumn('xid', 'bigint', (col: any) =>
      col.notNull().defaultTo(dialect === 'sqlite' ? 0 : sql`(pg_current_xact_id()::text::bigint)`),
    )
    .addColumn('at', 'bigint', (col: any) => col.notNull())
    .execute();
  // The last version written (SQLite's feed horizon) and those written since (SQLite's look at other processes'
  // commits); the feed reads a user's row by its key.
  await db.schema.createIndex('library_changes_seq_order').on('library_changes').column('seq').execute();
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema.dropTable('library_changes').execute();
  if (dialect === 'postgres') await sql`DROP SEQUENCE library_changes_seq`.execute(db);
  await db.schema.dropTable('library_placements').execute();
  await db.schema.dropTable('folders').execute();
}
