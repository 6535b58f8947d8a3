import { sql, type Insertable, type Kysely, type Updateable } from 'kysely';
import type { Database, SongRow, SongTable } from '../db/schema.js';

type Q = Kysely<Database>;

/** The catalog's songs of these ids. */
export function songsWithIds(db: Q, ids: readonly number[]): Promise<SongRow[]> {
  return db.selectFrom('songs').selectAll().where('id', 'in', ids).execute();
}

/** The catalog's songs with any of these titles. */
export function songsWithTitles(db: Q, titles: readonly string[]): Promise<SongRow[]> {
  return db.selectFrom('songs').selectAll().where('title', 'in', titles).execute();
}

/** Adds the song; false when another with its id or its title, artist and album is there already. */
export async function insertSong(db: Q, song: Insertable<SongTable>): Promise<boolean> {
  const added = await db
    .insertInto('songs')
    .values(song)
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return added.numInsertedOrUpdatedRows !== 0n;
}

export async function updateSong(db: Q, id: number, changes: Updateable<SongTable>): Promise<void> {
  await db.updateTable('songs').set(changes).where('id', '=', id).execute();
}

/** PostgreSQL: moves the songs' id sequence past the highest id, which songs inserted with their own ids leave behind. */
export async function catchUpSongIds(db: Q): Promise<void> {
  await sql`SELECT setval(pg_get_serial_sequence('songs', 'id'), GREATEST((SELECT max(id) FROM songs), 1))`.execute(db);
}

export async function catalogIsEmpty(db: Q): Promise<boolean> {
  return (await db.selectFrom('songs').select('id').limit(1).executeTakeFirst()) === undefined;
}

/**
 * Records, in the import's transaction, that import `importId` changed songs: its one row of `catalog_changes`
 * (replacing the row an earlier transaction of the same import wrote) with the catalog version reached and `at`.
 */
export async function recordCatalogChange(trx: Q, importId: string, at: number): Promise<void> {
  await trx.deleteFrom('catalog_changes').where('import_id', '=', importId).execute();
  await trx
    .insertInto('catalog_changes')
    .columns(['import_id', 'version', 'at'])
    .expression((eb) =>
      eb.selectFrom('catalog_version').select([eb.val(importId).as('import_id'), 'version', eb.val(at).as('at')]),
    )
    .execute();
}

/** Removes the catalog changes older than `cutoff` but the newest (the feed's first answer reads its time). */
export async function deleteCatalogChangesBefore(trx: Q, cutoff: number): Promise<number> {
  const removed = await trx
    .deleteFrom('catalog_changes')
    .where('at', '<', cutoff)
    .where('seq', '<', (eb) => eb.selectFrom('catalog_changes').select((inner) => inner.fn.max('seq').as('seq')))
    .executeTakeFirst();
  return Number(removed.numDeletedRows);
}
