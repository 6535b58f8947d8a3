import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { expectError } from '../helpers/requests.js';

describeEachDatabase('paths a new user tries (%s)', (t) => {
  let security: string;

  beforeAll(async () => {
    security = await t.addUser();
  });

  it('a path without /v3 that exists under it answers 404 saying where the API is', async () => {
    for (const [path, versioned] of [
      ['/playlist', '/v3/playlist'],
      ['/playlists/12', '/v3/playlists/12'],
      ['/song?limit=3', '/v3/song'],
    ]) {
      const answer = await t.app.inject({ url: path!, headers: { security } });
      const message = expectError(answer, 404).errormsg;
      expect(message).toBe(`There is nothing at ${path!.split('?')[0]}. The API is under /v3: try ${versioned}.`);
    }
    for (const path of ['/nowhere', '/v3/nowhere', '/v3/v3/playlist']) {
      const answer = await t.app.inject({ url: path, headers: { security } });
      expect(expectError(answer, 404).errormsg).toBe(`There is nothing at ${path}.`);
    }
  });

  it('/v3/songs and /v3/songs/{id} answer as /v3/song does, as /v3/playlists does for playlists', async () => {
    for (const url of ['/v3/song?limit=5&search=a', '/v3/song/7']) {
      const singular = await t.app.inject({ url, headers: { security } });
      const plural = await t.app.inject({ url: url.replace('/v3/song', '/v3/songs'), headers: { security } });
      expect(singular.statusCode, url).toBe(200);
      expect(plural.statusCode, url).toBe(200);
      expect(plural.json(), url).toEqual(singular.json());
    }
    const page = await t.app.inject({ url: '/v3/songs?limit=1', headers: { security } });
    expect(page.headers.link).toContain('/v3/songs?');
    expectError(await t.app.inject({ url: '/v3/songs/987654', headers: { security } }), 404);
    expectError(await t.app.inject({ url: '/v3/songs' }), 401);
  });
});
