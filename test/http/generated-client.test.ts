import type { AddressInfo } from 'node:net';
import createClient from 'openapi-fetch';
import sharp from 'sharp';
import { beforeAll, expect, it } from 'vitest';
import type { paths as mixtape } from '../client/mixtape.js';
import type { paths } from '../client/musicapi.js';
import { describeEachDatabase } from '../helpers/each-database.js';

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
      errormsg: expect.stringMatching(/^This playlist is already deleted\. You can restore it: /) as string,
      logdata: { entry: expect.any(Number) as number, date: expect.any(Number) as number },
    });
  });
});

// A client generated from Mixtape's own document (`npm run client:generate`): JSPF arrives as the object the document
// types, XSPF and M3U8 as text with `parseAs: 'text'` (openapi-fetch reads every answer as JSON otherwise), and an
// edit's failures as the documented error body.
describeEachDatabase('a client generated from docs/openapi.json (%s)', (t) => {
  let client: ReturnType<typeof createClient<mixtape>>;

  beforeAll(async () => {
    const authorization = await t.addUser();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    client = createClient<mixtape>({ baseUrl: `http://127.0.0.1:${port}`, headers: { Authorization: authorization } });
  });

  it('reads the playlist files and an edit refused as text/plain', async () => {
    const created = await client.POST('/v3/playlist', { body: { name: 'أغاني الصيف', songIds: [1, 2] } });
    const path = { 'playlist-id': created.data!.id };

    const jspf = await client.GET('/v3/playlist/{playlist-id}', {
      params: { path, query: { format: 'jspf' } },
    });
    expect(jspf.response.headers.get('content-type')).toMatch(/^application\/jspf\+json/);
    const file = jspf.data as Extract<typeof jspf.data, { playlist: unknown }>;
    expect(file.playlist.title).toBe('أغاني الصيف');
    expect(file.playlist.track.map((track) => track.location.length)).toEqual([1, 1]);

    for (const format of ['xspf', 'm3u8'] as const) {
      const text = await client.GET('/v3/playlist/{playlist-id}', {
        params: { path, query: { format } },
        parseAs: 'text',
      });
      expect(text.response.status, format).toBe(200);
      expect(text.data, format).toMatch(format === 'xspf' ? /^<\?xml/ : /^#EXTM3U/);
    }

    const refused = await client.PUT('/v3/playlist/{playlist-id}', {
      params: { path },
      body: { name: 'x', songIds: [] },
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(refused.response.status).toBe(415);
    expect(refused.error?.errormsg).toMatch(/security header/);
  });

  // What an offline app sends and reads, typed from the document alone: no cast, no non-null assertion (tsc --strict
  // checks this file in `npm run check`).
  it('types an offline app’s requests with no cast: a smart playlist, merged edits with refs and seen, the feed', async () => {
    const smart = await client.POST('/v3/playlist', {
      body: {
        name: 'Short jazz',
        rules: { match: 'all', conditions: [{ field: 'genre', op: 'is', value: 'Jazz' }], limit: 5 },
      },
    });
    if (smart.data === undefined) throw new Error(`create: ${smart.response.status}`);
    expect(smart.data.rules?.match).toBe('all');

    const made = await client.POST('/v3/playlist', { body: { name: 'Offline', songIds: [1, 2, 3] } });
    if (made.data === undefined) throw new Error(`create: ${made.response.status}`);
    const path = { 'playlist-id': made.data.id };
    const entries = await client.GET('/v3/playlist/{playlist-id}/entries', { params: { path } });
    if (entries.data === undefined) throw new Error(`entries: ${entries.response.status}`);
    const base = entries.data.version;
    const first = await client.POST('/v3/playlist/{playlist-id}/edits', {
      params: { path },
      body: {
        base,
        key: 'q1',
        ops: [
          { op: 'rename', name: 'Offline, day 1' },
          { op: 'insert', songIds: [4, 5], after: null, refs: ['n1', 'n2'] },
          { op: 'move', entry: '#n1', after: entries.data.entries[2]?.entry },
        ],
      },
    });
    if (first.data === undefined) throw new Error(`edits: ${first.response.status}`);
    expect(first.data.results.map((result) => result.applied)).toEqual([true, true, true]);
    const second = await client.POST('/v3/playlist/{playlist-id}/edits', {
      params: { path },
      body: { base, key: 'q2', seen: ['q1'], ops: [{ op: 'rename', name: 'Offline, day 2' }] },
    });
    if (second.data === undefined) throw new Error(`edits: ${second.response.status}`);
    const [renamed] = second.data.results;
    expect(renamed?.applied).toBe(true);
    expect(renamed?.reason).toBeUndefined();
    // The answer is the playlist, or with `Prefer: return=minimal` its version: told apart by their members.
    if (!('playlist' in second.data)) throw new Error('edits: the whole answer was not sent');
    expect(second.data.playlist.name).toBe('Offline, day 2');
    expect(second.data.playlist.entries.map((entry) => entry.id)).toEqual([5, 1, 2, 3, 4]);
    const brief = await client.POST('/v3/playlist/{playlist-id}/edits', {
      params: { path, header: { prefer: 'return=minimal' } },
      body: { ops: [{ op: 'rename', name: 'Offline, day 3' }] },
    });
    if (brief.data === undefined || !('version' in brief.data)) throw new Error(`edits: ${brief.response.status}`);
    expect(brief.data.version).toBe(second.data.playlist.version + 1);
    expect(brief.response.headers.get('preference-applied')).toBe('return=minimal');

    const refused = await client.POST('/v3/playlist/{playlist-id}/edits', {
      params: { path },
      body: {
        atomic: true,
        ops: [
          { op: 'remove', entry: 'e1' },
          { op: 'remove', entry: 'e1' },
        ],
      },
    });
    expect(refused.response.status).toBe(409);
    // The 409's body is the `refusedEdits` error; other statuses' are the plain error.
    const results = refused.error !== undefined && 'results' in refused.error ? refused.error.results : undefined;
    expect(results?.map((result) => result.reason)).toEqual([undefined, 'removed']);

    const feed = await client.GET('/v3/changes', { params: { query: { types: 'playlist,catalog' } } });
    if (feed.data === undefined) throw new Error(`changes: ${feed.response.status}`);
    const items = feed.data.changes.map((item) =>
      'catalog' in item
        ? `catalog ${item.catalog}`
        : 'library' in item
          ? `library ${item.library}`
          : `${item.id} ${item.change}`,
    );
    expect(items[0]).toMatch(/^catalog \d+$/);
    expect(items).toContain(`${made.data.id} edit`);
    const songs = await client.GET('/v3/song', { params: { query: { limit: 1 } } });
    expect(songs.data?.map((song) => typeof song.added)).toEqual(['string']);
    const changed = await client.GET('/v3/song', { params: { query: { changedSince: 0 } } });
    expect(changed.data).toEqual([]);
  });
});
