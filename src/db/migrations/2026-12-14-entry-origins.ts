import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Who added each entry of a playlist, and when (API 1.9.0): one row per entry ever made, written once when it is made
 * and never changed, so that a move keeps it and a restore that gives an entry back gives back its origin. `added_by`
 * is a user's id (no foreign key: a user removed leaves their entries, which then name nobody). The entries of the
 * playlists there now are given their owner and the playlist's creation time; entries made before and no longer in a
 * playlist have none.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('playlist_entry_origins')
    .addColumn('playlist_id', 'bigint', (col: any) => col.notNull())
    .addColumn('entry', 'bigint', (col: any) => col.notNull())
    .addColumn('added_by', 'bigint', (col: any) => col.notNull())
    .addColumn('added_at', 'bigint', (col: any) => col.notNull())
    .addPrimaryKeyConstraint('playlist_entry_origins_pk', ['playlist_id', 'entry'])
    .execute();
  await sql`INSERT INTO playlist_entry_origins (playlist_id, entry, added_by, added_at)
    SELECT s.playlist_id, s.entry, p.owner_id, p.created_at FROM playlist_songs s JOIN playlists p ON p.id = s.playlist_id`.execute(
    db,
  );
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropTable('playlist_entry_origins').execute();
}
