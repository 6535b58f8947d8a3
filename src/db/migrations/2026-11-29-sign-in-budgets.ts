import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * The failed sign-in budgets, kept where every instance sees them: one row per budget (an address and a name, an
 * address, a name) with its failures and when its window ends, and one per address known for a name, until when.
 * Rows whose window has ended are removed a few at a time, oldest first (`sign_in_budgets_expiry`).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('sign_in_budgets')
    .addColumn('key', 'text', (col: any) => col.primaryKey())
    .addColumn('failures', 'integer', (col: any) => col.notNull())
    .addColumn('expires_at', 'bigint', (col: any) => col.notNull())
    .modifyEnd(dialect === 'sqlite' ? sql`WITHOUT ROWID` : sql``)
    .execute();
  await db.schema.createIndex('sign_in_budgets_expiry').on('sign_in_budgets').column('expires_at').execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropTable('sign_in_budgets').execute();
}
