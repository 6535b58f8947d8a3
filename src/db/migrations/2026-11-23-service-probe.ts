import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/** One row that readiness checks write after a failed write, to see whether the database takes writes again. */
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('service_probe')
    .addColumn('id', 'integer', (col: any) => col.primaryKey())
    .addColumn('checked_at', 'bigint', (col: any) => col.notNull())
    .execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropTable('service_probe').execute();
}
