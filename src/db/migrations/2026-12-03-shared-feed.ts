import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * A playlist's revisions in feed order: the change feed reads those of the playlists shared with the reader one
 * playlist at a time, from the reader's position on (`playlist_revisions_feed` orders them by owner).
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createIndex('playlist_revisions_playlist_feed')
    .on('playlist_revisions')
    .columns(['playlist_id', 'xid', 'seq'])
    .execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropIndex('playlist_revisions_playlist_feed').execute();
}
