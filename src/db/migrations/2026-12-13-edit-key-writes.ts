import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * What a merged edit sent with a key wrote, so that a later request of the same user may name it in `seen` (API
 * 1.8.0, offline queues): `version`, the version its write made (null when it changed nothing), and `renamed`, the
 * name its applied renames left (null when none applied). A later request whose `seen` names it expects that name
 * rather than its base's. Null on the keys kept before this migration: naming one in `seen` changes nothing.
 */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('edit_keys').addColumn('version', 'bigint').execute();
  await db.schema.alterTable('edit_keys').addColumn('renamed', 'text').execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('edit_keys').dropColumn('renamed').execute();
  await db.schema.alterTable('edit_keys').dropColumn('version').execute();
}
