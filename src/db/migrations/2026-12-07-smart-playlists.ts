import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/** Search's normaliser as it is when this migration lands (search/search-text.ts `normaliseText`), frozen here. */
const normalise = (text: string): string =>
  text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/\s+/gu, ' ').trim();

/** Songs normalised per statement. */
const CHUNK = 1000;

const TEXT_FIELDS = ['title', 'artist', 'album', 'genre'] as const;

/**
 * Smart playlists (API 1.7.0). A playlist's `rules` (JSON text; null for a hand-made playlist) choose its songs from
 * the catalog, which they compare and sort by:
 *
 * - `songs.added`: when the song came into the catalog (Unix ms). Songs already there get the time of this migration
 *   (the column's default, which also stands for any insert that gives none; catalog imports give theirs).
 * - `songs.norm_title`, `norm_artist`, `norm_album`, `norm_genre`: each field as search normalises it (case, accents,
 *   compatibility forms, spaces), filled here by that same function, then by every catalog import. The search
 *   document cannot stand for them: it keeps each distinct text once, so a field's place in it is not known. Text
 *   rules compare these by `=`, by range (`startsWith`) or by LIKE; they are compared as bytes (`COLLATE "C"` on
 *   PostgreSQL; SQLite's BINARY), so a prefix is a range of the index and the order is the same on both databases.
 *
 * `playlists.rules` holds a smart playlist's rules, `deleted_playlists.rules` those of a deleted one,
 * `playlist_revisions.rules` those of each version.
 *
 * Each has an index whose second column is the id, the tie-breaker of every rule order: `=` and prefix lookups, and
 * sorts that stop at the limit, read them in order.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const now = Date.now();
  await db.schema
    .alterTable('songs')
    .addColumn('added', 'bigint', (col: any) => col.notNull().defaultTo(now))
    .execute();
  const textType = dialect === 'postgres' ? sql`text COLLATE "C"` : sql`text`;
  for (const field of TEXT_FIELDS) {
    await db.schema
      .alterTable('songs')
      .addColumn(`norm_${field}`, textType, (col: any) => col.notNull().defaultTo(''))
      .execute();
  }

  let last = 0;
  for (;;) {
    const rows: { id: number | string; title: string; artist: string; album: string; genre: string }[] = await db
      .selectFrom('songs')
      .select(['id', ...TEXT_FIELDS])
      .where('id', '>', last)
      .orderBy('id')
      .limit(CHUNK)
      .execute();
    if (rows.length === 0) break;
    last = Number(rows[rows.length - 1]!.id);
    if (dialect === 'postgres') {
      await sql`UPDATE songs SET norm_title = v.title, norm_artist = v.artist, norm_album = v.album, norm_genre = v.genre
        FROM unnest(${rows.map((r) => Number(r.id))}::bigint[], ${rows.map((r) => normalise(r.title))}::text[],
          ${rows.map((r) => normalise(r.artist))}::text[], ${rows.map((r) => normalise(r.album))}::text[],
          ${rows.map((r) => normalise(r.genre))}::text[]) AS v (id, title, artist, album, genre)
        WHERE songs.id = v.id`.execute(db);
    } else {
      for (const row of rows) {
        await db
          .updateTable('songs')
          .set({
            norm_title: normalise(row.title),
            norm_artist: normalise(row.artist),
            norm_album: normalise(row.album),
            norm_genre: normalise(row.genre),
          })
          .where('id', '=', row.id)
          .execute();
      }
    }
  }

  await db.schema.createIndex('songs_added').on('songs').columns(['added', 'id']).execute();
  for (const field of TEXT_FIELDS) {
    await db.schema
      .createIndex(`songs_norm_${field}`)
      .on('songs')
      .columns([`norm_${field}`, 'id'])
      .execute();
  }
  await db.schema.alterTable('playlists').addColumn('rules', 'text').execute();
  // The smart playlists alone, in id order: every write looks among them for those whose rules name the playlist it
  // wrote, which without this index read every playlist (a write answered about half as many a second).
  await db.schema
    .createIndex('playlists_smart')
    .on('playlists')
    .column('id')
    .where(sql.ref('rules'), 'is not', null)
    .execute();
  // A deleted smart playlist keeps its rules, so that an undelete brings back a smart playlist.
  await db.schema.alterTable('deleted_playlists').addColumn('rules', 'text').execute();
  // Each version keeps the rules it had, so that it is answered, and restored, as it was.
  await db.schema.alterTable('playlist_revisions').addColumn('rules', 'text').execute();
}

export async function down(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.dropIndex('playlists_smart').execute();
  await db.schema.alterTable('playlist_revisions').dropColumn('rules').execute();
  await db.schema.alterTable('deleted_playlists').dropColumn('rules').execute();
  await db.schema.alterTable('playlists').dropColumn('rules').execute();
  for (const field of TEXT_FIELDS) {
    await db.schema.dropIndex(`songs_norm_${field}`).execute();
    await db.schema.alterTable('songs').dropColumn(`norm_${field}`).execute();
  }
  await db.schema.dropIndex('songs_added').execute();
  await db.schema.alterTable('songs').dropColumn('added').execute();
}
