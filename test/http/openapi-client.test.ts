import type { AddressInfo } from 'node:net';
import createClient from 'openapi-fetch';
import { beforeAll, expect, it } from 'vitest';
import type { paths } from '../client/mixtape.js';
import { describeEachDatabase } from '../helpers/each-database.js';

/**
 * A client generated from the service's own document (docs/openapi.json, `npm run openapi:client`) with
 * openapi-typescript and openapi-fetch: Node's fetch asks for compressed answers, so a 200-song playlist's ETags are
 * those of compressed answers, and the edit with `If-Match` must take them.
 */

const SONGS = Array.from({ length: 200 }, (_v, i) => (i % 240) + 1);

describeEachDatabase('a client generated from docs/openapi.json (%s)', (t, dialect) => {
  let client: ReturnType<typeof createClient<paths>>;

  beforeAll(async () => {
    const security = await t.addUser();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    client = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}`, headers: { security } });
  });

  it('creates, edits with If-Match, gets and deletes a 200-song playlist, with compressed answers', async () => {
    const created = await client.POST('/v3/playlist', { body: { name: `Two hundred ${dialect}`, songIds: SONGS } });
    expect(created.response.status).toBe(200);
    expect(created.response.headers.get('content-encoding')).toMatch(/^(zstd|br|gzip|deflate)$/);
    const id = created.data!.id;
    const path = { 'playlist-id': id };
    let etag = created.response.headers.get('etag')!;

    const patched = await client.PATCH('/v3/playlist/{playlist-id}', {
      params: { path, header: { 'if-match': etag } },
      body: { name: `Renamed ${dialect}` },
    });
    expect(patched.response.status, JSON.stringify(patched.error)).toBe(200);
    // The edited playlist (with `Prefer: return=minimal`, its version only).
    expect(patched.data && 'name' in patched.data && patched.data.name).toBe(`Renamed ${dialect}`);
    etag = patched.response.headers.get('etag')!;

    const read = await client.GET('/v3/playlist/{playlist-id}', { params: { path } });
    expect(read.response.status).toBe(200);
    expect(read.response.headers.get('content-encoding')).toMatch(/^(zstd|br|gzip|deflate)$/);
    expect(read.data).toEqual(patched.data);
    const cached = await client.GET('/v3/playlist/{playlist-id}', {
      params: { path, header: { 'if-none-match': etag } },
    });
    expect(cached.response.status).toBe(304);

    const added = await client.POST('/v3/playlist/{playlist-id}/songs', {
      params: { path, header: { 'if-match': read.response.headers.get('etag')! } },
      body: { songIds: [5], position: 0 },
    });
    expect(added.response.status, JSON.stringify(added.error)).toBe(200);
    expect(added.data && 'songs' in added.data && added.data.songs.map((song) => song.id)).toEqual([5, ...SONGS]);

    const replaced = await client.PUT('/v3/playlist/{playlist-id}', {
      params: { path, header: { 'if-match': added.response.headers.get('etag')! } },
      body: { name: 'Replaced', songIds: SONGS.slice(0, 199) },
    });
    expect(replaced.response.status, JSON.stringify(replaced.error)).toBe(200);

    const stale = await client.PATCH('/v3/playlist/{playlist-id}', {
      params: { path, header: { 'if-match': etag } },
      body: { name: 'Lost' },
    });
    expect(stale.response.status).toBe(412);
    expect(stale.error?.errormsg).toMatch(/If-Match/);

    const deleted = await client.DELETE('/v3/playlist/{playlist-id}', { params: { path } });
    expect(deleted.response.status).toBe(200);
    const gone = await client.GET('/v3/playlist/{playlist-id}', { params: { path } });
    expect(gone.response.status).toBe(410);
  });
});
