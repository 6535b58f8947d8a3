import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { sendAs } from '../helpers/requests.js';

interface CatalogSongBody {
  id: number;
  title: string;
  artist: string;
  album: string;
  genre: string;
  duration: number | null;
  added: string;
}

const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describeEachDatabase('catalog songs on %s', (t) => {
  it('carry `added`, when the song came into the catalog, in every answer of the catalog', async () => {
    const security = await t.addUser();
    const when = Date.UTC(2026, 11, 7, 10, 0, 0, 123);
    await sql`UPDATE songs SET added = ${when} WHERE id = 2`.execute(t.db.kysely);
    const song = await sendAs(t.app, 'GET', '/v3/song/2', security);
    expect(song.statusCode, song.body).toBe(200);
    const body = song.json<CatalogSongBody>();
    expect(Object.keys(body)).toEqual(['id', 'title', 'artist', 'album', 'genre', 'duration', 'added']);
    expect(body.added).toBe('2026-12-07T10:00:00.123Z');

    const page = await sendAs(t.app, 'GET', '/v3/songs?limit=3', security);
    const songs = page.json<CatalogSongBody[]>();
    expect(songs.map((s) => s.id)).toEqual([1, 2, 3]);
    for (const each of songs) expect(each.added).toMatch(RFC3339_MS);
    expect(songs[1]!.added).toBe(body.added);
    const row = await t.db.kysely.selectFrom('songs').select('added').where('id', '=', 1).executeTakeFirstOrThrow();
    expect(Date.parse(songs[0]!.added)).toBe(Number(row.added));

    const found = await sendAs(t.app, 'GET', `/v3/song?search=${encodeURIComponent(body.title)}`, security);
    expect(found.json<CatalogSongBody[]>().find((s) => s.id === 2)?.added).toBe(body.added);
    const changed = await sendAs(t.app, 'GET', '/v3/song?changedSince=0&limit=1', security);
    expect(changed.statusCode, changed.body).toBe(200);
    for (const each of changed.json<CatalogSongBody[]>()) expect(each.added).toMatch(RFC3339_MS);
  });

  it('are songs a smart playlist’s `added` rule chooses by that time', async () => {
    const security = await t.addUser();
    await sql`UPDATE songs SET added = ${Date.UTC(2030, 0, 1)} WHERE id IN (4, 5)`.execute(t.db.kysely);
    const made = await sendAs(t.app, 'POST', '/v3/playlist', security, {
      name: 'Newest',
      rules: { match: 'all', conditions: [{ field: 'added', op: 'after', value: '2029-12-31T23:59:59.999Z' }] },
    });
    expect(made.statusCode, made.body).toBe(200);
    const ids = made.json<{ songs: { id: number }[] }>().songs.map((s) => s.id);
    expect(ids.toSorted((a, b) => a - b)).toEqual([4, 5]);
    for (const id of ids) {
      const song = (await sendAs(t.app, 'GET', `/v3/song/${id}`, security)).json<CatalogSongBody>();
      expect(song.added).toBe('2030-01-01T00:00:00.000Z');
    }
  });
});
