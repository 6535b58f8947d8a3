import { expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js';
import { describeEachDatabase, describeEachEmptyDatabase } from '../helpers/each-database.js';
import { sendAs } from '../helpers/requests.js';

describeEachDatabase('the catalog’s total on %s', (t) => {
  const page = async (security: string, query: string) => {
    const answer = await sendAs(t.app, 'GET', `/v3/song?${query}`, security);
    expect(answer.statusCode, answer.body).toBe(200);
    return { total: Number(answer.headers['x-total-count']), ids: answer.json<{ id: number }[]>().map((s) => s.id) };
  };
  const counted = async () =>
    Number(
      (
        await t.db.kysely
          .selectFrom('songs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  /** The statements a request sends that count songs. */
  const countsOfSongs = async (request: () => Promise<unknown>) => {
    const before = t.queries.length;
    await request();
    return t.queries
      .slice(before)
      .map((q) => q.sql)
      .filter((text) => /count\(/i.test(text) && /from "songs"/i.test(text));
  };

  it('answers the total of a page of the whole catalog without counting its songs', async () => {
    const security = await t.addUser();
    let first: Awaited<ReturnType<typeof page>> | undefined;
    expect(await countsOfSongs(async () => (first = await page(security, 'limit=100&offset=10')))).toEqual([]);
    expect(first!.total).toBe(await counted());
    expect(first!.ids).toHaveLength(100);
    expect(await countsOfSongs(() => page(security, 'limit=5&offset=100000'))).toEqual([]);
  });

  it('keeps the total right as imports add songs, change them, and songs go', async () => {
    const security = await t.addUser();
    const start = (await page(security, 'limit=1')).total;
    expect(start).toBe(await counted());

    const added = await importCatalog(t.db, [
      { title: 'Counted One', artist: 'Tally' },
      { title: 'Counted Two', artist: 'Tally' },
      { title: 'Counted Three', artist: 'Tally' },
    ]);
    expect(added.inserted).toBe(3);
    expect((await page(security, 'limit=1')).total).toBe(start + 3);
    // The same songs again add none, nor does a change of one (which counts the catalog's version up).
    const { id } = await t.db.kysely
      .selectFrom('songs')
      .select('id')
      .where('title', '=', 'Counted One')
      .executeTakeFirstOrThrow();
    expect((await importCatalog(t.db, [{ title: 'Counted One', artist: 'Tally' }])).unchanged).toBe(1);
    expect((await importCatalog(t.db, [{ id, title: 'Counted One', artist: 'Tally', duration: 200 }])).updated).toBe(1);
    expect((await page(security, 'limit=1')).total).toBe(start + 3);
    // Songs that go (no API removes one; the database may) are counted out.
    await t.db.kysely.deleteFrom('songs').where('artist', '=', 'Tally').where('title', '=', 'Counted Three').execute();
    const last = await page(security, 'limit=100&offset=0');
    expect(last.total).toBe(start + 2);
    expect(last.total).toBe(await counted());

    // A search still counts its own matches.
    const found = await page(security, 'search=counted%20tally&limit=1');
    expect(found.total).toBe(2);
  });
});

describeEachEmptyDatabase('the catalog’s kept count, as its migration starts it, on %s', (database) => {
  it('counts the songs already there, then keeps counting; and goes back down', async () => {
    const db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
    const kept = async () =>
      Number((await db.kysely.selectFrom('catalog_version').select('songs').executeTakeFirstOrThrow()).songs);
    try {
      await migrateTo(db, '2026-12-08-smart-sources');
      const songs = Array.from({ length: 1200 }, (_, i) => ({ title: `Before ${i}`, artist: 'Earlier' }));
      expect((await importCatalog(db, songs)).inserted).toBe(1200);
      await migrateToLatest(db);
      expect(await kept()).toBe(1200);
      // A statement of many rows counts them all (PostgreSQL counts once per statement).
      await db.kysely
        .insertInto('songs')
        .values(
          Array.from({ length: 50 }, (_, i) => ({
            title: `Bulk ${i}`,
            artist: 'Many',
            album: '',
            genre: '',
            duration: null,
            search_doc: '',
            added: 0,
            norm_title: '',
            norm_artist: '',
            norm_album: '',
            norm_genre: '',
          })),
        )
        .execute();
      expect(await kept()).toBe(1250);
      await db.kysely.deleteFrom('songs').where('artist', '=', 'Many').execute();
      expect(await kept()).toBe(1200);

      await migrateTo(db, '2026-12-08-smart-sources');
      await importCatalog(db, [{ title: 'While down', artist: 'Later' }]);
      await migrateToLatest(db);
      expect(await kept()).toBe(1201);
    } finally {
      await db.close();
    }
  });
});
