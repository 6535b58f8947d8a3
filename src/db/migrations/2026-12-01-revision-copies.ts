import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * The whole copies among a playlist's revisions (`splice_at` null), by version: reading a version finds the nearest
 * copy at or before it in one index probe, however long the playlist's history.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createIndex('playlist_revisions_copies')
    .on('playlist_revisions')
    .columns(['playlist_id', 'version'])
    .where(sql.ref('splice_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropIndex('playlist_revisions_copies').execute();
}
