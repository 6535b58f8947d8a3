import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Every change kept (API 1.4.0). `playlist_revisions` holds one row per revision of a playlist (its create, each
 * edit and restore, its delete), written in the write's own transaction. A row stores the name and song count after
 * it and its songs either whole (`splice_at` null: a snapshot, the ids comma-separated in `songs`) or as one splice
 * of the version before (`splice_deleted` ids removed at `splice_at`, then the ids in `songs` inserted there);
 * `chain` counts the ids the splices since the last snapshot removed and inserted, and a snapshot is written instead
 * once it would pass the playlist's length, so reading any version reads at most about twice the playlist.
 *
 * The rows are also the change feed: `seq` orders them, and on PostgreSQL `xid` is the writing transaction's id, so
 * that a reader can deliver only what transactions older than every running one wrote (see history/changes).
 * Rows go with their owner (a removed user's history goes with them), not with the playlist: a deleted playlist
 * keeps its history. Existing playlists get their current version as a snapshot.
 *
 * `service_keys` holds keys every instance shares: `changes` signs the feed's tokens.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .createTable('playlist_revisions')
    .addColumn('seq', id, (col: any) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedByDefaultAsIdentity(),
    )
    .addColumn('xid', 'bigint', (col: any) =>
      col.notNull().defaultTo(dialect === 'sqlite' ? 0 : sql`(pg_current_xact_id()::text::bigint)`),
    )
    .addColumn('playlist_id', id, (col: any) => col.notNull())
    .addColumn('owner_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('version', 'bigint', (col: any) => col.notNull())
    .addColumn('at', 'bigint', (col: any) => col.notNull())
    .addColumn('by_id', id, (col: any) => col.notNull())
    .addColumn('change', 'text', (col: any) => col.notNull())
    .addColumn('name', 'text', (col: any) => col.notNull())
    .addColumn('song_count', 'integer', (col: any) => col.notNull())
    .addColumn('splice_at', 'integer')
    .addColumn('splice_deleted', 'integer')
    .addColumn('songs', 'text', (col: any) => col.notNull())
    .addColumn('chain', 'integer', (col: any) => col.notNull())
    .execute();
  await db.schema
    .createIndex('playlist_revisions_version')
    .unique()
    .on('playlist_revisions')
    .columns(['playlist_id', 'version'])
    .execute();
  await db.schema
    .createIndex('playlist_revisions_feed')
    .on('playlist_revisions')
    .columns(['owner_id', 'xid', 'seq'])
    .execute();
  await db.schema.createIndex('playlist_revisions_at').on('playlist_revisions').column('at').execute();

  const ids =
    dialect === 'sqlite'
      ? sql`(SELECT coalesce(group_concat(song_id, ',' ORDER BY position), '') FROM playlist_songs WHERE playlist_id = p.id)`
      : sql`(SELECT coalesce(string_agg(song_id::text, ',' ORDER BY position), '') FROM playlist_songs WHERE playlist_id = p.id)`;
  await sql`INSERT INTO playlist_revisions
      (playlist_id, owner_id, version, at, by_id, change, name, song_count, splice_at, splice_deleted, songs, chain)
    SELECT p.id, p.owner_id, p.version, p.created_at, p.owner_id,
      CASE WHEN p.version = 1 THEN 'create' ELSE 'edit' END, p.name,
      (SELECT count(*) FROM playlist_songs WHERE playlist_id = p.id), NULL, NULL, ${ids}, 0
    FROM playlists p ORDER BY p.id`.execute(db);

  await db.schema
    .createTable('service_keys')
    .addColumn('name', 'text', (col: any) => col.primaryKey())
    .addColumn('key', 'text', (col: any) => col.notNull())
    .execute();
  await db
    .insertInto('service_keys')
    .values({ name: 'changes', key: randomBytes(32).toString('base64') })
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('service_keys').execute();
  await db.schema.dropTable('playlist_revisions').execute();
}
