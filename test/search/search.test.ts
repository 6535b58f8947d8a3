import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, type PlaylistBody } from '../helpers/requests.js';

describeEachDatabase('search on %s', (t) => {
  let security: string;
  const ids: Record<string, number> = {};
  // Songs of the demo catalog, looked up by title so the test does not depend on their ids.
  const song: Record<string, number> = {};

  const search = async (words: string) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `/v3/playlist?limit=100&search=${encodeURIComponent(words)}`,
      headers: { security },
    });
    expect(response.statusCode, response.body).toBe(200);
    const names = response.json<PlaylistBody[]>().map((p) => p.name);
    expect(response.headers['x-total-count']).toBe(String(names.length));
    return names;
  };

  beforeAll(async () => {
    security = await t.addUser();
    const songs = await t.db.kysely.selectFrom('songs').select(['id', 'title', 'genre']).execute();
    for (const s of songs) song[s.title] = s.id;
    const jazz = songs.find((s) => s.genre === 'Jazz')!.id;
    const reggae = songs.find((s) => s.genre === 'Reggae')!.id;
    const lists: [string, number[]][] = [
      ['Chill Vibes', [reggae]],
      ['CAFÉ MORNINGS', [jazz]],
      ['Late Night Drive', [reggae]],
      ['100% Focus', [reggae]],
      ['Focus 100 Percent', [reggae]],
      ['snake_case Coding', [reggae]],
      ['snakeXcase Coding', [reggae]],
      ['back\\slash', [reggae]],
      ['Über Mix', [reggae]],
      ['Crème de la crème', [song['Crème Brûlée Blues']!]],
    ];
    for (const [name, songIds] of lists) ids[name] = (await createPlaylist(t.app, security, name, songIds)).id;
    // Another user's playlists never show up.
    await createPlaylist(t.app, await t.addUser(), 'Chill Vibes of someone else', [jazz]);
  });

  it('ignores case', async () => {
    expect(await search('chill')).toEqual(['Chill Vibes']);
    expect(await search('CHILL')).toEqual(['Chill Vibes']);
    expect(await search('cAfÉ')).toEqual(['CAFÉ MORNINGS']);
  });

  it('ignores accents, both ways', async () => {
    expect(await search('cafe')).toEqual(['CAFÉ MORNINGS']);
    expect(await search('uber')).toEqual(['Über Mix']);
    expect(await search('ÜBER')).toEqual(['Über Mix']);
    expect(await search('creme')).toEqual(['Crème de la crème']);
  });

  it('matches any part of a word', async () => {
    expect(await search('ornin')).toEqual(['CAFÉ MORNINGS']);
    expect(await search('ib')).toEqual(expect.arrayContaining(['Chill Vibes']));
    expect(await search('iv')).toEqual(expect.arrayContaining(['Late Night Drive']));
    expect(await search('iv')).not.toContain('CAFÉ MORNINGS');
  });

  it('needs every word to match', async () => {
    expect(await search('late drive')).toEqual(['Late Night Drive']);
    expect(await search('drive   LATE')).toEqual(['Late Night Drive']);
    expect(await search('late chill')).toEqual([]);
  });

  it('takes %, _ and \\ literally', async () => {
    expect(await search('%')).toEqual(['100% Focus']);
    expect(await search('100%')).toEqual(['100% Focus']);
    expect(await search('e_c')).toEqual(['snake_case Coding']);
    expect(await search('_')).toEqual(['snake_case Coding']);
    expect(await search('\\')).toEqual(['back\\slash']);
    expect(await search('k\\s')).toEqual(['back\\slash']);
  });

  it("matches a song's title, artist and genre (the type of song)", async () => {
    expect(await search('jazz')).toEqual(['CAFÉ MORNINGS', 'Crème de la crème']);
    expect(await search('reggae chill')).toEqual(['Chill Vibes']);
    expect(await search('brulee')).toEqual(['Crème de la crème']);
    const [artist] = await t.db.kysely
      .selectFrom('songs')
      .select('artist')
      .where('id', '=', song['Crème Brûlée Blues']!)
      .execute();
    expect(await search(artist!.artist)).toEqual(['Crème de la crème']);
  });

  it('does not match across two fields', async () => {
    // "Vibes" ends the name and "Reggae" is the next field: "vibesreggae" is in neither.
    expect(await search('vibesreggae')).toEqual([]);
  });

  it('pages through matches with X-Total-Count and keeps search in the Link header', async () => {
    const response = await t.app.inject({
      method: 'GET',
      url: '/v3/playlist?search=focus&limit=1',
      headers: { security },
    });
    expect(response.json<PlaylistBody[]>().map((p) => p.name)).toEqual(['100% Focus']);
    expect(response.headers['x-total-count']).toBe('2');
    expect(response.headers.link).toBe('</v3/playlist?limit=1&offset=1&search=focus>; rel="next"');

    // Past the last match the page is empty and the total still counts every match.
    const past = await t.app.inject({
      method: 'GET',
      url: '/v3/playlist?search=focus&limit=1&offset=5',
      headers: { security },
    });
    expect(past.json()).toEqual([]);
    expect(past.headers['x-total-count']).toBe('2');
  });

  it('treats an empty or blank search as no search', async () => {
    expect(await search('   ')).toHaveLength(Object.keys(ids).length);
  });

  it('forgets a deleted playlist', async () => {
    const doomed = await createPlaylist(t.app, security, 'Ephemeral Tune', []);
    expect(await search('ephemeral')).toEqual(['Ephemeral Tune']);
    await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${doomed.id}`, headers: { security } });
    expect(await search('ephemeral')).toEqual([]);
  });

  it('searches the song catalog by title, artist, album and genre', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v3/song?search=brulee', headers: { security } });
    expect(response.statusCode).toBe(200);
    expect(response.json<{ title: string }[]>().map((s) => s.title)).toEqual(['Crème Brûlée Blues']);
    const one = await t.app.inject({
      method: 'GET',
      url: `/v3/song/${song['Crème Brûlée Blues']!}`,
      headers: { security },
    });
    expect(one.json()).toMatchObject({ title: 'Crème Brûlée Blues', genre: 'Jazz' });
    const genre = await t.app.inject({ method: 'GET', url: '/v3/song?search=jazz&limit=100', headers: { security } });
    expect(genre.headers['x-total-count']).toBe('20');
    expect((await t.app.inject({ method: 'GET', url: '/v3/song/999999', headers: { security } })).statusCode).toBe(404);
  });
});
