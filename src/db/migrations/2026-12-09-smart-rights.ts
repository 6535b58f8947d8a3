import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Two columns of a smart playlist's row, both null for a hand-made playlist and for a smart playlist not refreshed
 * since this migration:
 *
 * - `rules_status`: what its answers say beside its rules (JSON, `{"unreadable": [ids]}`): the playlists its rules
 *   name that its owner could not read at its last refresh. Written with the version it belongs to.
 * - `smart_inputs`: what its songs were worked out from at its last refresh (JSON: the catalog's version when the
 *   rules follow the catalog, and each playlist they name with its version and whether the owner could read it). A
 *   read that finds other inputs now refreshes the playlist first; a null one always does.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('playlists').addColumn('rules_status', 'text').execute();
  await db.schema.alterTable('playlists').addColumn('smart_inputs', 'text').execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('playlists').dropColumn('smart_inputs').execute();
  await db.schema.alterTable('playlists').dropColumn('rules_status').execute();
}
