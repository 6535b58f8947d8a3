import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * SQLite: a membership added, changed or removed is written to `playlist_changes` as an edit or a delete is, so
 * that every process that remembers who may read a playlist forgets it at its next request (the log keeps the last
 * 10 000 changes of every kind). PostgreSQL reads memberships at every request and needs nothing.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  for (const [event, row] of [
    ['INSERT', 'new'],
    ['UPDATE', 'new'],
    ['DELETE', 'old'],
  ] as const) {
    await sql
      .raw(
        `CREATE TRIGGER playlist_members_changes_${event.toLowerCase()} AFTER ${event} ON playlist_members BEGIN
          INSERT INTO playlist_changes (playlist_id) VALUES (${row}.playlist_id);
          DELETE FROM playlist_changes WHERE seq <= (SELECT max(seq) FROM playlist_changes) - 10000;
        END`,
      )
      .execute(db);
  }
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  for (const event of ['insert', 'update', 'delete']) {
    await sql.raw(`DROP TRIGGER playlist_members_changes_${event}`).execute(db);
  }
}
