import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * A search reads only its caller's documents (`playlist_documents`, keyed by owner then playlist), so that its cost
 * depends on the caller's own library and never on what other users' playlists contain. The trigram indexes ran
 * over every owner's documents and are dropped: FTS5's `playlist_trigrams` on SQLite (with `users.search_indexed`,
 * which said whose documents it held) and pg_trgm's `playlist_documents_doc` on PostgreSQL.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`DROP TRIGGER playlists_search_delete`.execute(db);
    await sql`DROP TABLE playlist_trigrams`.execute(db);
    await sql`CREATE TRIGGER playlists_search_delete AFTER DELETE ON playlists BEGIN
      DELETE FROM playlist_documents WHERE owner_id = old.owner_id AND playlist_id = old.id;
    END`.execute(db);
  } else {
    await sql`DROP INDEX playlist_documents_doc`.execute(db);
  }
  await db.schema.alterTable('users').dropColumn('search_indexed').execute();
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('search_indexed', 'integer', (col: any) => col.notNull().defaultTo(0))
    .execute();
  if (dialect === 'sqlite') {
    await sql`CREATE VIRTUAL TABLE playlist_trigrams
      USING fts5(doc, tokenize = 'trigram', content = '', contentless_delete = 1)`.execute(db);
    await sql`UPDATE users SET search_indexed = 1 WHERE playlist_count > 2000`.execute(db);
    await sql`INSERT INTO playlist_trigrams (rowid, doc)
      SELECT d.playlist_id, d.doc FROM playlist_documents d JOIN users u ON u.id = d.owner_id
      WHERE u.search_indexed = 1`.execute(db);
    await sql`DROP TRIGGER playlists_search_delete`.execute(db);
    await sql`CREATE TRIGGER playlists_search_delete AFTER DELETE ON playlists BEGIN
      DELETE FROM playlist_documents WHERE owner_id = old.owner_id AND playlist_id = old.id;
      DELETE FROM playlist_trigrams WHERE rowid = old.id;
    END`.execute(db);
  } else {
    await sql`CREATE INDEX playlist_documents_doc ON playlist_documents USING gin (doc gin_trgm_ops)`.execute(db);
  }
}
