import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * `users.library_version`: counted up whenever one of the user's playlist search documents is added, changed or
 * removed (a create, an edit, a restore, a delete, an import, a catalog change of one of its songs), by triggers on
 * `playlist_documents`, in the same transaction as the write. A search of a user's own playlists kept with the
 * version it was read at is current while the version is unchanged (see search/playlist-search.ts), on every
 * instance and whichever process wrote.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('library_version', 'bigint', (col: any) => col.notNull().defaultTo(0))
    .execute();
  if (dialect === 'sqlite') {
    for (const [event, row] of [
      ['INSERT', 'new'],
      ['UPDATE', 'new'],
      ['DELETE', 'old'],
    ] as const) {
      await sql
        .raw(
          `CREATE TRIGGER playlist_documents_library_${event.toLowerCase()} AFTER ${event} ON playlist_documents BEGIN
            UPDATE users SET library_version = library_version + 1 WHERE id = ${row}.owner_id;
          END`,
        )
        .execute(db);
    }
    return;
  }
  // Once per statement, over the owners of the rows it wrote: a bulk write counts each owner up once, where a row
  // trigger would update one user's row once per document. (A trigger with a transition table takes one event.)
  await sql`CREATE FUNCTION count_library_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE users SET library_version = library_version + 1 WHERE id IN (SELECT DISTINCT owner_id FROM changed);
      RETURN NULL;
    END $$`.execute(db);
  for (const [event, table] of [
    ['INSERT', 'NEW'],
    ['UPDATE', 'NEW'],
    ['DELETE', 'OLD'],
  ] as const) {
    await sql
      .raw(
        `CREATE TRIGGER playlist_documents_library_${event.toLowerCase()} AFTER ${event} ON playlist_documents
          REFERENCING ${table} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION count_library_version()`,
      )
      .execute(db);
  }
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    for (const event of ['insert', 'update', 'delete']) {
      await sql.raw(`DROP TRIGGER playlist_documents_library_${event}`).execute(db);
    }
  } else {
    for (const event of ['insert', 'update', 'delete']) {
      await sql.raw(`DROP TRIGGER playlist_documents_library_${event} ON playlist_documents`).execute(db);
    }
    await sql`DROP FUNCTION count_library_version()`.execute(db);
  }
  await db.schema.alterTable('users').dropColumn('library_version').execute();
}
