import type { AddressInfo } from 'node:net';
import createClient from 'openapi-fetch';
import sharp from 'sharp';
import { beforeAll, expect, it } from 'vitest';
import type { paths } from './client/musicapi.js';
import { describeEachDatabase } from './helpers/each-database.js';

// A client generated from the original description (`npm run client:generate`) works against Mixtape unchanged:
// it sends the credential as `basauth` says, in `Authorization: Basic`, and a string `playlist-id`.
describeEachDatabase('a client generated from musicapi.yaml (%s)', (t, dialect) => {
  let client: ReturnType<typeof createClient<paths>>;

  beforeAll(async () => {
    const authorization = await t.addUser();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    client = createClient<paths>({
      baseUrl: `http://127.0.0.1:${port}/v3`,
      headers: { Authorization: authorization },
    });
  });

  it('creates, lists, gets and deletes a playlist', async () => {
    const name = `Generated client mix ${dialect}`;
    const songIds = [240, 1, 17, 1];

    const created = await client.POST('/playlist', { body: { name, songIds } });
    expect(created.error).toBeUndefined();
    expect(created.response.status).toBe(200);
    const playlist = created.data!;
    expect(playlist.name).toBe(name);
    expect(playlist.songs?.map((song) => song.id)).toEqual(songIds);
    expect(playlist.songs?.every((song) => typeof song.title === 'string' && typeof song.artist === 'string')).toBe(
      true,
    );
    const id = playlist.id!;
    expect(Number.isInteger(id)).toBe(true);

    const listed = await client.GET('/playlist', {
      params: { query: { limit: 10, offset: 0, search: `mix ${dialect}` } },
    });
    expect(listed.response.status).toBe(200);
    expect(listed.data).toContainEqual(playlist);

    const missed = await client.GET('/playlist', { params: { query: { limit: 10, offset: 1 } } });
    expect(missed.response.status).toBe(200);
    expect(missed.data).toEqual([]);

    const fetched = await client.GET('/playlist/{playlist-id}', {
      params: { path: { 'playlist-id': String(id) } },
    });
    expect(fetched.response.status).toBe(200);
    expect(fetched.data).toEqual(playlist);

    // The image operation names PNG and JPEG; with no Accept of its own the client gets PNG.
    const cover = await client.GET('/playlist/{playlist-id}/image', {
      params: { path: { 'playlist-id': String(id) } },
      parseAs: 'arrayBuffer',
    });
    expect(cover.response.status).toBe(200);
    expect(cover.response.headers.get('content-type')).toBe('image/png');
    const png = await sharp(Buffer.from(cover.data as unknown as ArrayBuffer)).metadata();
    expect([png.format, png.width, png.height]).toEqual(['png', 600, 600]);

    const deleted = await client.DELETE('/playlist/{playlist-id}', {
      params: { path: { 'playlist-id': String(id) } },
    });
    expect(deleted.response.status).toBe(200);
    expect(deleted.error).toBeUndefined();

    const gone = await client.GET('/playlist/{playlist-id}', { params: { path: { 'playlist-id': String(id) } } });
    expect(gone.response.status).toBe(410);
    expect(gone.data).toBeUndefined();
    expect(gone.error).toEqual({
      errormsg: 'This playlist is already deleted.',
      logdata: { entry: expect.any(Number) as number, date: expect.any(Number) as number },
    });
  });
});
