import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * App tokens (API 1.11.0, src/tokens/): a credential a user makes for one app, with the password, so that the app
 * never keeps the password. A row per live token: its user, the name the user gave it, its scope (`read` or `write`),
 * the SHA-256 of the token (never the token itself; unique, the index every Bearer request is looked up by), when it
 * was made and expires, and when it was last used (null: never; written at most once a minute per token and
 * instance). Revoking a token deletes its row, so the table holds what a user lists and expired rows until the user's
 * next new token removes them. Removing a user removes their tokens (the foreign key).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .createTable('app_tokens')
    .addColumn('id', id, (col: any) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedByDefaultAsIdentity(),
    )
    .addColumn('user_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (col: any) => col.notNull())
    .addColumn('scope', 'text', (col: any) => col.notNull().check(sql`scope IN ('read', 'write')`))
    .addColumn('digest', 'text', (col: any) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col: any) => col.notNull())
    .addColumn('expires_at', 'bigint', (col: any) => col.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  // A user's tokens, listed and counted by expiry.
  await db.schema.createIndex('app_tokens_user').on('app_tokens').columns(['user_id', 'expires_at']).execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropTable('app_tokens').execute();
}
