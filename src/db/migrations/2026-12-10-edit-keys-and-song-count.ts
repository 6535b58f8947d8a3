import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * What a merged edit's key keeps, bounded, and the catalog's size kept rather than counted.
 *
 * - `edit_keys.digest`: a digest of the request the key came with (its ops, `base` and `atomic`), so that the key sent
 *   again with another request is refused instead of answered the first one's results. Null on the keys kept before
 *   this migration, which are answered as they were until they are pruned. Keys written from now on keep their
 *   results compact (playlists/edits/kept-results.ts), in `results` still. The index (user_id, at) finds a user's
 *   oldest keys: each key kept forgets those past the newest `MIXTAPE_EDIT_KEYS_PER_USER`, in its transaction.
 * - `catalog_version.songs`: how many songs the catalog holds, counted by triggers on `songs` in the transaction of
 *   each insert and delete, so that a page of the catalog reads its total from one row instead of counting every song
 *   (tens of milliseconds at 200 000 songs on PostgreSQL). The catalog's version cannot stand for it: an import that
 *   only adds songs leaves the version as it was (it tells whether songs still read the same, not how many there
 *   are). Filled here from a count, after the triggers are in place. On PostgreSQL once per statement, over the rows
 *   it wrote, and only when it wrote some (an import that finds its songs there already locks nothing more); a
 *   TRUNCATE sets it to 0.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('edit_keys').addColumn('digest', 'text').execute();
  await db.schema.createIndex('edit_keys_user').on('edit_keys').columns(['user_id', 'at']).execute();

  await db.schema
    .alterTable('catalog_version')
    .addColumn('songs', 'bigint', (col: any) => col.notNull().defaultTo(0))
    .execute();
  if (dialect === 'sqlite') {
    for (const [event, step] of [
      ['INSERT', '+ 1'],
      ['DELETE', '- 1'],
    ] as const) {
      await sql
        .raw(
          `CREATE TRIGGER songs_count_${event.toLowerCase()} AFTER ${event} ON songs BEGIN
            UPDATE catalog_version SET songs = songs ${step};
          END`,
        )
        .execute(db);
    }
  } else {
    for (const [event, table, sign] of [
      ['INSERT', 'NEW', ''],
      ['DELETE', 'OLD', '-'],
    ] as const) {
      const name = event.toLowerCase();
      await sql
        .raw(
          `CREATE FUNCTION count_songs_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE n bigint := (SELECT count(*) FROM written);
            BEGIN
              IF n > 0 THEN UPDATE catalog_version SET songs = songs + ${sign}n; END IF;
              RETURN NULL;
            END $$`,
        )
        .execute(db);
      await sql
        .raw(
          `CREATE TRIGGER songs_count_${name} AFTER ${event} ON songs REFERENCING ${table} TABLE AS written
            FOR EACH STATEMENT EXECUTE FUNCTION count_songs_${name}()`,
        )
        .execute(db);
    }
    await sql`CREATE FUNCTION count_songs_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN UPDATE catalog_version SET songs = 0; RETURN NULL; END $$`.execute(db);
    await sql`CREATE TRIGGER songs_count_truncate AFTER TRUNCATE ON songs
      FOR EACH STATEMENT EXECUTE FUNCTION count_songs_truncate()`.execute(db);
  }
  await sql`UPDATE catalog_version SET songs = (SELECT count(*) FROM songs)`.execute(db);
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`DROP TRIGGER songs_count_insert`.execute(db);
    await sql`DROP TRIGGER songs_count_delete`.execute(db);
  } else {
    for (const name of ['insert', 'delete', 'truncate']) {
      await sql.raw(`DROP TRIGGER songs_count_${name} ON songs`).execute(db);
      await sql.raw(`DROP FUNCTION count_songs_${name}()`).execute(db);
    }
  }
  await db.schema.alterTable('catalog_version').dropColumn('songs').execute();
  await db.schema.dropIndex('edit_keys_user').execute();
  await db.schema.alterTable('edit_keys').dropColumn('digest').execute();
}
