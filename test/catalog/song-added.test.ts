import { sql, type Kysely } from 'kysely';
import { expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';

/** The songs table before the migration, as this test writes it. */
interface SongsBefore {
  songs: { title: string; artist: string; album: string; genre: string; duration: number; search_doc: string };
}

const songs = (db: Db) =>
  db.kysely
    .selectFrom('songs')
    .select(['id', 'title', 'added', 'norm_title', 'norm_artist', 'norm_album', 'norm_genre'])
    .orderBy('id')
    .execute();

describeEachEmptyDatabase('when songs came into the catalog, and their normalised fields, on %s', (database) => {
  it('gives songs already there the time of the migration and their fields as search normalises them', async () => {
    const db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
    try {
      await migrateTo(db, '2026-12-06-entries');
      // 1 500 songs: more than one of the migration's chunks.
      const rows = Array.from({ length: 1500 }, (_, i) => ({
        title: i === 0 ? 'Ça  Plane Pour MOI' : `Song ${i}`,
        artist: i === 0 ? 'Plastic Bertrand' : 'ＡＢＢＡ',
        album: i === 0 ? '' : 'Ångström ﬁnal',
        genre: 'Jazz',
        duration: 180,
        search_doc: '',
      }));
      for (let start = 0; start < rows.length; start += 100) {
        await (db.kysely as unknown as Kysely<SongsBefore>)
          .insertInto('songs')
          .values(rows.slice(start, start + 100))
          .execute();
      }
      const before = Date.now();
      expect(await migrateTo(db, '2026-12-07-smart-playlists')).toEqual(['2026-12-07-smart-playlists']);
      const after = Date.now();
      const found = await songs(db);
      expect(found).toHaveLength(1500);
      for (const song of found) {
        expect(Number(song.added)).toBeGreaterThanOrEqual(before);
        expect(Number(song.added)).toBeLessThanOrEqual(after);
      }
      expect(found[0]).toMatchObject({
        norm_title: 'ca plane pour moi',
        norm_artist: 'plastic bertrand',
        norm_album: '',
        norm_genre: 'jazz',
      });
      expect(found[1499]).toMatchObject({
        norm_title: 'song 1499',
        norm_artist: 'abba',
        norm_album: 'angstrom final',
      });
      expect(new Set(found.map((song) => song.added)).size).toBe(1);
      const playlists = await sql<{ rules: unknown }>`SELECT rules FROM playlists`.execute(db.kysely);
      expect(playlists.rows).toEqual([]);

      // And back down, and up again.
      await migrateTo(db, '2026-12-06-entries');
      await expect(sql`SELECT added FROM songs`.execute(db.kysely)).rejects.toThrow();
      await migrateToLatest(db);
      expect((await songs(db))[0]!.norm_title).toBe('ca plane pour moi');
    } finally {
      await db.close();
    }
  });

  it('imports set `added` for new songs only, and keep the normalised fields up to date', async () => {
    const db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
    try {
      await migrateToLatest(db);
      await db.kysely.deleteFrom('songs').execute();
      const first = 1_800_000_000_000;
      expect(
        await importCatalog(
          db,
          [
            { id: 9001, title: 'Só Danço Samba', artist: 'João Gilberto', genre: 'Bossa Nova' },
            { id: 9002, title: 'Naima', artist: 'John Coltrane', genre: 'Jazz' },
          ],
          () => {},
          first,
        ),
      ).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
      const second = first + 86_400_000;
      expect(
        await importCatalog(
          db,
          [
            { id: 9001, title: 'SÓ DANÇO SAMBA (Live)', artist: 'João Gilberto', genre: 'Bossa Nova' },
            { id: 9002, title: 'Naima', artist: 'John Coltrane', genre: 'Jazz' },
            { title: 'Giant Steps', artist: 'John Coltrane', album: 'Giant Steps', genre: 'Jazz' },
          ],
          () => {},
          second,
        ),
      ).toEqual({ inserted: 1, updated: 1, unchanged: 1 });
      const found = await songs(db);
      expect(found.map((song) => [song.title, Number(song.added), song.norm_title])).toEqual([
        ['SÓ DANÇO SAMBA (Live)', first, 'so danco samba (live)'],
        ['Naima', first, 'naima'],
        ['Giant Steps', second, 'giant steps'],
      ]);
      expect(found[2]).toMatchObject({ norm_artist: 'john coltrane', norm_album: 'giant steps', norm_genre: 'jazz' });
    } finally {
      await db.close();
    }
  });
});
