import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * What serving playlists from memory needs from the database:
 *
 * - `catalog_version`, one row counted up by a trigger whenever a song's title, artist, album or duration changes
 *   (a catalog import), so that a cached playlist can tell whether its songs still read the same;
 * - on SQLite, `playlist_changes`, a short log of deleted playlist ids written by a trigger (however the delete
 *   came: the API, a user's removal, another process), which a process reads when `PRAGMA data_version` says
 *   another connection committed;
 * - the search documents kept together by owner (`playlist_documents`, keyed by owner then playlist), so that a
 *   user's search reads their own documents side by side in the file, however many playlists others have. On
 *   SQLite the trigram index becomes contentless (`playlist_trigrams`), and holds only the documents of owners
 *   with a library large enough to need it (`users.search_indexed`, set once they pass 2000 playlists): every
 *   other create writes no trigram at all;
 * - no index of entries by song: it made every create write ten more pages at random places, for the sake of
 *   catalog imports that rename songs, which now read the entries once instead.
 *
 * Copying the documents takes about a minute per million playlists.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .createTable('catalog_version')
    .addColumn('id', 'integer', (col: any) => col.primaryKey())
    .addColumn('version', 'bigint', (col: any) => col.notNull())
    .execute();
  await sql`INSERT INTO catalog_version (id, version) VALUES (1, 0)`.execute(db);

  const changed = (old: string, next: string) =>
    ['title', 'artist', 'album', 'duration']
      .map((c) => `${old}.${c} IS ${dialect === 'sqlite' ? 'NOT' : 'DISTINCT FROM'} ${next}.${c}`)
      .join(' OR ');

  await db.schema
    .createTable('playlist_documents')
    .addColumn('owner_id', id, (col: any) => col.notNull())
    .addColumn('playlist_id', id, (col: any) =>
      dialect === 'sqlite' ? col.notNull() : col.notNull().unique().references('playlists.id').onDelete('cascade'),
    )
    .addColumn('doc', 'text', (col: any) => col.notNull())
    .addPrimaryKeyConstraint('playlist_documents_pk', ['owner_id', 'playlist_id'])
    .modifyEnd(dialect === 'sqlite' ? sql`WITHOUT ROWID` : sql``)
    .execute();

  await db.schema.dropIndex('playlist_songs_song_id').execute();
  // SQLite's readiness probe writes 64 KB here: a write that needs new room in the files, as a create does.
  if (dialect === 'sqlite') await db.schema.alterTable('service_probe').addColumn('padding', 'blob').execute();
  await db.schema
    .alterTable('users')
    .addColumn('search_indexed', 'integer', (col: any) => col.notNull().defaultTo(0))
    .execute();

  if (dialect === 'sqlite') {
    await sql
      .raw(
        `CREATE TRIGGER songs_catalog_version AFTER UPDATE ON songs WHEN ${changed('old', 'new')} BEGIN
      UPDATE catalog_version SET version = version + 1;
    END`,
      )
      .execute(db);

    await sql`CREATE TABLE playlist_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, playlist_id INTEGER NOT NULL)`.execute(
      db,
    );
    // The log keeps the last 10 000 deletes; a process that falls further behind forgets everything it cached.
    await sql`CREATE TRIGGER playlists_changes AFTER DELETE ON playlists BEGIN
      INSERT INTO playlist_changes (playlist_id) VALUES (old.id);
      DELETE FROM playlist_changes WHERE seq <= (SELECT max(seq) FROM playlist_changes) - 10000;
    END`.execute(db);

    await sql`INSERT INTO playlist_documents (owner_id, playlist_id, doc)
      SELECT p.owner_id, p.id, s.doc FROM playlists p JOIN playlist_search s ON s.rowid = p.id`.execute(db);
    await sql`CREATE VIRTUAL TABLE playlist_trigrams
      USING fts5(doc, tokenize = 'trigram', content = '', contentless_delete = 1)`.execute(db);
    await sql`UPDATE users SET search_indexed = 1 WHERE playlist_count > 2000`.execute(db);
    await sql`INSERT INTO playlist_trigrams (rowid, doc)
      SELECT d.playlist_id, d.doc FROM playlist_documents d JOIN users u ON u.id = d.owner_id
      WHERE u.search_indexed = 1`.execute(db);
    await sql`DROP TRIGGER playlists_search_delete`.execute(db);
    await sql`DROP TABLE playlist_search`.execute(db);
    await sql`CREATE TRIGGER playlists_search_delete AFTER DELETE ON playlists BEGIN
      DELETE FROM playlist_documents WHERE owner_id = old.owner_id AND playlist_id = old.id;
      DELETE FROM playlist_trigrams WHERE rowid = old.id;
    END`.execute(db);
    return;
  }

  await sql`CREATE FUNCTION count_catalog_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN UPDATE catalog_version SET version = version + 1; RETURN NULL; END $$`.execute(db);
  await sql
    .raw(
      `CREATE TRIGGER songs_catalog_version AFTER UPDATE ON songs
    FOR EACH ROW WHEN (${changed('OLD', 'NEW')}) EXECUTE FUNCTION count_catalog_version()`,
    )
    .execute(db);
  await sql`INSERT INTO playlist_documents (owner_id, playlist_id, doc)
    SELECT p.owner_id, p.id, s.doc FROM playlists p JOIN playlist_search s ON s.playlist_id = p.id`.execute(db);
  await sql`DROP TABLE playlist_search`.execute(db);
  await sql`CREATE INDEX playlist_documents_doc ON playlist_documents USING gin (doc gin_trgm_ops)`.execute(db);
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`CREATE VIRTUAL TABLE playlist_search USING fts5(doc, tokenize = 'trigram')`.execute(db);
    await sql`INSERT INTO playlist_search (rowid, doc) SELECT playlist_id, doc FROM playlist_documents`.execute(db);
    await sql`DROP TRIGGER playlists_search_delete`.execute(db);
    await sql`DROP TRIGGER playlists_changes`.execute(db);
    await sql`DROP TRIGGER songs_catalog_version`.execute(db);
    await sql`DROP TABLE playlist_trigrams`.execute(db);
    await sql`DROP TABLE playlist_changes`.execute(db);
    await sql`CREATE TRIGGER playlists_search_delete AFTER DELETE ON playlists BEGIN
      DELETE FROM playlist_search WHERE rowid = old.id;
    END`.execute(db);
  } else {
    await sql`CREATE TABLE playlist_search (
      playlist_id bigint PRIMARY KEY REFERENCES playlists (id) ON DELETE CASCADE, doc text NOT NULL)`.execute(db);
    await sql`INSERT INTO playlist_search (playlist_id, doc) SELECT playlist_id, doc FROM playlist_documents`.execute(
      db,
    );
    await sql`CREATE INDEX playlist_search_doc ON playlist_search USING gin (doc gin_trgm_ops)`.execute(db);
    await sql`DROP TRIGGER songs_catalog_version ON songs`.execute(db);
    await sql`DROP FUNCTION count_catalog_version()`.execute(db);
  }
  await db.schema.dropTable('playlist_documents').execute();
  await db.schema.dropTable('catalog_version').execute();
  await db.schema.alterTable('users').dropColumn('search_indexed').execute();
  if (dialect === 'sqlite') await db.schema.alterTable('service_probe').dropColumn('padding').execute();
  await db.schema.createIndex('playlist_songs_song_id').on('playlist_songs').column('song_id').execute();
}
