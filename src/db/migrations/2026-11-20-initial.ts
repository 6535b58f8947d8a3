import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  // Ids are never reused: AUTOINCREMENT on SQLite, an identity sequence on PostgreSQL.
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  const idColumn = (name: string, builder: any) =>
    builder.addColumn(name, id, (col: any) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedByDefaultAsIdentity(),
    );

  await idColumn('id', db.schema.createTable('users'))
    .addColumn('name', 'text', (col: any) => col.notNull().unique())
    .addColumn('password_hash', 'text', (col: any) => col.notNull())
    .addColumn('playlist_count', 'integer', (col: any) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (col: any) => col.notNull())
    .execute();

  await idColumn('id', db.schema.createTable('songs'))
    .addColumn('title', 'text', (col: any) => col.notNull())
    .addColumn('artist', 'text', (col: any) => col.notNull())
    .addColumn('album', 'text', (col: any) => col.notNull().defaultTo(''))
    .addColumn('genre', 'text', (col: any) => col.notNull().defaultTo(''))
    .addColumn('duration', 'integer')
    // The normalised title, artist, album and genre that catalog search matches against.
    .addColumn('search_doc', 'text', (col: any) => col.notNull().defaultTo(''))
    .execute();
  await db.schema.createIndex('songs_natural_key').unique().on('songs').columns(['title', 'artist', 'album']).execute();

  await idColumn('id', db.schema.createTable('playlists'))
    .addColumn('owner_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (col: any) => col.notNull())
    .addColumn('created_at', 'bigint', (col: any) => col.notNull())
    .execute();
  await db.schema.createIndex('playlists_owner_id').on('playlists').columns(['owner_id', 'id']).execute();

  await db.schema
    .createTable('playlist_songs')
    .addColumn('playlist_id', id, (col) => col.notNull().references('playlists.id').onDelete('cascade'))
    .addColumn('position', 'integer', (col) => col.notNull())
    .addColumn('song_id', id, (col) => col.notNull().references('songs.id'))
    .addPrimaryKeyConstraint('playlist_songs_pk', ['playlist_id', 'position'])
    .execute();
  await db.schema.createIndex('playlist_songs_song_id').on('playlist_songs').column('song_id').execute();

  await db.schema
    .createTable('deleted_playlists')
    .addColumn('id', id, (col) => col.primaryKey())
    .addColumn('owner_id', id, (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('deleted_at', 'bigint', (col) => col.notNull())
    .execute();

  // Search: one normalised document per playlist (its name and its songs' titles, artists and genres),
  // behind a substring index: FTS5 trigrams on SQLite, pg_trgm on PostgreSQL.
  if (dialect === 'sqlite') {
    await sql`CREATE VIRTUAL TABLE playlist_search USING fts5(doc, tokenize = 'trigram')`.execute(db);
    await sql`CREATE TRIGGER playlists_search_delete AFTER DELETE ON playlists BEGIN
      DELETE FROM playlist_search WHERE rowid = old.id;
    END`.execute(db);
  } else {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
    await db.schema
      .createTable('playlist_search')
      .addColumn('playlist_id', id, (col) => col.primaryKey().references('playlists.id').onDelete('cascade'))
      .addColumn('doc', 'text', (col) => col.notNull())
      .execute();
    await sql`CREATE INDEX playlist_search_doc ON playlist_search USING gin (doc gin_trgm_ops)`.execute(db);
  }
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await sql`DROP TRIGGER IF EXISTS playlists_search_delete`.execute(db);
  for (const table of ['playlist_search', 'deleted_playlists', 'playlist_songs', 'playlists', 'songs', 'users']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
