import type { Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/** Smart playlists read per statement while the table is filled. */
const CHUNK = 500;

/** A group of rules as stored (smart/rules.ts when this migration lands), only as far as it is read here. */
interface StoredGroup {
  readonly conditions: readonly ({ readonly field?: string; readonly value?: unknown } & Partial<StoredGroup>)[];
}

/** The ids every `playlist` condition of the rules names, at any depth (smart/rules.ts `rulePlaylists`), frozen here. */
function namedPlaylists(group: StoredGroup, into: Set<number>): Set<number> {
  for (const entry of group.conditions) {
    if (entry.conditions !== undefined) namedPlaylists(entry as StoredGroup, into);
    else if (entry.field === 'playlist' && typeof entry.value === 'number') into.add(entry.value);
  }
  return into;
}

/**
 * The playlists each smart playlist's rules name (`smart_sources`): a row (`source_id`, `playlist_id`) for each
 * playlist `source_id` that the rules of smart playlist `playlist_id` name in a `playlist` condition. After a write
 * of a playlist, the smart playlists that follow it are one read of the primary key, where they were found by reading
 * every smart playlist's rules.
 *
 * The store writes the rows with the rules, in the same transaction: a smart playlist's rows are those of its rules
 * while it exists. They go with it when it is deleted (`playlist_id` references `playlists`, on delete cascade; its
 * rules stay in `deleted_playlists.rules`) and come back with an undelete. `source_id` references nothing: a deleted
 * playlist is still named by the rules that name it, whose playlists are refreshed when it is deleted or undeleted.
 * The index on `playlist_id` finds a smart playlist's rows when its rules change or it is deleted.
 *
 * Filled here from the rules stored now.
 *
 * Besides, `songs_norm_genre_added` on songs (norm_genre, added): the rule smart playlists are most often made of, a
 * genre newest first, reads its first songs in order from it (a LIMIT stops it there) instead of reading and sorting
 * every song of the genre, tens of milliseconds over a catalog of 200 000 (docs/benchmarks.md, "Smart playlists").
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const id = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .createTable('smart_sources')
    .addColumn('source_id', id, (col: any) => col.notNull())
    .addColumn('playlist_id', id, (col: any) => col.notNull().references('playlists.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('smart_sources_pk', ['source_id', 'playlist_id'])
    .execute();
  await db.schema.createIndex('smart_sources_playlist').on('smart_sources').column('playlist_id').execute();
  await db.schema.createIndex('songs_norm_genre_added').on('songs').columns(['norm_genre', 'added']).execute();

  let last = 0;
  for (;;) {
    const rows: { id: number | string; rules: string }[] = await db
      .selectFrom('playlists')
      .select(['id', 'rules'])
      .where('rules', 'is not', null)
      .where('id', '>', last)
      .orderBy('id')
      .limit(CHUNK)
      .execute();
    if (rows.length === 0) break;
    last = Number(rows[rows.length - 1]!.id);
    const values = rows.flatMap((row) =>
      [...namedPlaylists(JSON.parse(row.rules) as StoredGroup, new Set())].map((source) => ({
        source_id: source,
        playlist_id: Number(row.id),
      })),
    );
    // 250 rows (500 bound values) per statement: well under SQLite's limit of bound variables.
    for (let start = 0; start < values.length; start += 250) {
      await db
        .insertInto('smart_sources')
        .values(values.slice(start, start + 250))
        .execute();
    }
  }
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropIndex('songs_norm_genre_added').execute();
  await db.schema.dropTable('smart_sources').execute();
}
