import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * Tickets for the stream of changes (`POST /v3/changes/tickets`): a browser's `EventSource` cannot send a credential
 * header, so it opens `GET /v3/changes/stream?ticket=…` instead. A row per ticket: the SHA-256 of the ticket (never the
 * ticket itself), its user and when it expires (Unix ms). Taking a ticket deletes its row, so each works once, on
 * any instance; expired rows are deleted as new tickets are made. The index on `user_id` counts a user's tickets.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .createTable('stream_tickets')
    .addColumn('digest', 'text', (col: any) => col.primaryKey())
    .addColumn('user_id', id, (col: any) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (col: any) => col.notNull())
    .execute();
  await db.schema.createIndex('stream_tickets_user').on('stream_tickets').columns(['user_id', 'expires_at']).execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropTable('stream_tickets').execute();
}
