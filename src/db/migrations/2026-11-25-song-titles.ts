import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/**
 * An index on each song's normalised title (the first line of its search document), so that a playlist import
 * finds the songs named by its tracks' titles with index lookups rather than reading the whole catalog.
 * The expression must be written exactly so in queries for them to use the index (see song.repository.ts).
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`CREATE INDEX songs_title_key ON songs (substr(search_doc, 1, instr(search_doc || char(10), char(10)) - 1))`.execute(
      db,
    );
  } else {
    await sql`CREATE INDEX songs_title_key ON songs (split_part(search_doc, E'\n', 1))`.execute(db);
  }
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await sql`DROP INDEX songs_title_key`.execute(db);
}
