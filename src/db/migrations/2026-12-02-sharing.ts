import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Sharing (API 1.5.0).
 *
 * `playlist_members`: who besides its owner may read (`viewer`) or also edit (`editor`) a playlist. Rows go with
 * either user (a removed owner's or member's memberships go with them), not with the playlist: a deleted playlist
 * keeps its members, and its owner's restore brings them back; pruning its history removes them.
 *
 * `member_events`: what the change feed tells a user about their memberships (`shared` when added or given another
 * role, `unshared` when removed), numbered and stamped with the writing transaction's id as revisions are, so that a
 * reader delivers them under the same horizon (see history/changes).
 *
 * `playlist_links`: links anyone may open. Only a digest of a link's token is stored (SHA-256, hex); a revoked link's
 * row is deleted.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  const serial = (col: any) =>
    dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedByDefaultAsIdentity();

  await db.schema
    .createTable('playlist_members')
    .addColumn('playlist_id', id, (col: any) => col.notNull())
    .addColumn('user_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('owner_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (col: any) => col.notNull().check(sql`role IN ('viewer', 'editor')`))
    .addColumn('added_at', 'bigint', (col: any) => col.notNull())
    .addPrimaryKeyConstraint('playlist_members_pk', ['playlist_id', 'user_id'])
    .execute();
  await db.schema
    .createIndex('playlist_members_user')
    .on('playlist_members')
    .columns(['user_id', 'playlist_id'])
    .execute();
  await db.schema.createIndex('playlist_members_owner').on('playlist_members').column('owner_id').execute();

  await db.schema
    .createTable('member_events')
    .addColumn('seq', id, serial)
    .addColumn('xid', 'bigint', (col: any) =>
      col.notNull().defaultTo(dialect === 'sqlite' ? 0 : sql`(pg_current_xact_id()::text::bigint)`),
    )
    .addColumn('user_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('playlist_id', id, (col: any) => col.notNull())
    .addColumn('change', 'text', (col: any) => col.notNull())
    .addColumn('version', 'bigint', (col: any) => col.notNull())
    .addColumn('at', 'bigint', (col: any) => col.notNull())
    .execute();
  await db.schema.createIndex('member_events_feed').on('member_events').columns(['user_id', 'xid', 'seq']).execute();
  await db.schema.createIndex('member_events_at').on('member_events').column('at').execute();

  await db.schema
    .createTable('playlist_links')
    .addColumn('id', id, serial)
    .addColumn('playlist_id', id, (col: any) => col.notNull())
    .addColumn('owner_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('digest', 'text', (col: any) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col: any) => col.notNull())
    .addColumn('expires_at', 'bigint')
    .execute();
  await db.schema.createIndex('playlist_links_playlist').on('playlist_links').column('playlist_id').execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropTable('playlist_links').execute();
  await db.schema.dropTable('member_events').execute();
  await db.schema.dropTable('playlist_members').execute();
}
