import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Playlists become editable (API 1.3.0): each row carries a version, 1 when created and counted up by every edit in
 * the edit's own transaction, so that an answer kept in memory is confirmed by its version. On SQLite an edit is
 * also written to `playlist_changes`, the log other processes read when `PRAGMA data_version` says another
 * connection committed, as deletes are (the log keeps the last 10 000 changes of either kind).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .alterTable('playlists')
    .addColumn('version', dialect === 'sqlite' ? 'integer' : 'bigint', (col: any) => col.notNull().defaultTo(1))
    .execute();
  if (dialect === 'sqlite') {
    await sql`CREATE TRIGGER playlists_edits AFTER UPDATE OF version ON playlists BEGIN
      INSERT INTO playlist_changes (playlist_id) VALUES (new.id);
      DELETE FROM playlist_changes WHERE seq <= (SELECT max(seq) FROM playlist_changes) - 10000;
    END`.execute(db);
  }
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await sql`DROP TRIGGER playlists_edits`.execute(db);
  await db.schema.alterTable('playlists').dropColumn('version').execute();
}
