import type { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

/**
 * Every ETag a playlist's answer carries, in whatever encoding it went out (identity, gzip, br, deflate, zstd where
 * Node has it), works in `If-Match` while the playlist is unchanged and in `If-None-Match` for a 304, from a client
 * that compresses or not; a stale tag and one the service never made answer 412.
 */

const STRONG = /^"[\x21\x23-\x7e]+"$/;
const ENCODINGS = [
  ['identity', undefined],
  ['gzip', 'gzip'],
  ['br', 'br'],
  ['deflate', 'deflate'],
  // Node 22.15 and later compress with zstd; the service offers what its Node has.
  ...(typeof zlib.zstdCompressSync === 'function' ? [['zstd', 'zstd'] as const] : []),
] as const;
const SONGS = Array.from({ length: 200 }, (_v, i) => (i % 240) + 1);

describeEachDatabase('ETags of compressed answers on %s', (t) => {
  let security: string;
  beforeAll(async () => {
    security = await t.addUser();
  });

  const get = (id: number, headers: Record<string, string> = {}, query = '') =>
    t.app.inject({ url: `/v3/playlist/${id}${query}`, headers: { security, ...headers } });
  const edit = (method: 'PATCH' | 'PUT' | 'POST', id: number, payload: unknown, headers: Record<string, string>) =>
    t.app.inject({
      method,
      url: `/v3/playlist/${id}${method === 'POST' ? '/songs' : ''}`,
      headers: { security, 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(payload),
    });
  const etagOf = (answer: { headers: Record<string, unknown> }) => String(answer.headers.etag);

  it('gives a strong ETag in every encoding, each of which revalidates from any client', async () => {
    const playlist = await createPlaylist(t.app, security, 'Two hundred', SONGS);
    const tags: string[] = [];
    for (const [accept, encoding] of ENCODINGS) {
      const answer = await get(playlist.id, { 'accept-encoding': accept });
      expect(answer.statusCode, accept).toBe(200);
      expect(answer.headers['content-encoding'], accept).toBe(encoding);
      expect(etagOf(answer), accept).toMatch(STRONG);
      tags.push(etagOf(answer));
      const head = await t.app.inject({
        method: 'HEAD',
        url: `/v3/playlist/${playlist.id}`,
        headers: { security, 'accept-encoding': accept },
      });
      // HEAD says what GET would send; Fastify's HEAD leaves the coding out, and so the tag names none.
      const coded = head.headers['content-encoding'] !== undefined;
      expect(etagOf(head), `HEAD ${accept}`).toBe(coded ? etagOf(answer) : tags[0]);
    }
    // Other bytes, another strong tag.
    expect(new Set(tags).size).toBe(tags.length);

    for (const tag of tags) {
      for (const [accept] of ENCODINGS) {
        const again = await get(playlist.id, { 'accept-encoding': accept, 'if-none-match': tag });
        expect(again.statusCode, `${tag} ${accept}`).toBe(304);
        expect(again.body).toBe('');
        expect(etagOf(again), `${tag} ${accept}`).toMatch(STRONG);
      }
    }
    const other = await get(playlist.id, { 'accept-encoding': 'gzip', 'if-none-match': '"never-made-gzip"' });
    expect(other.statusCode).toBe(200);
  });

  for (const [accept, encoding] of ENCODINGS) {
    it(`takes the ETag of a ${accept} answer in If-Match for PATCH, PUT and POST …/songs, and only while current`, async () => {
      const playlist = await createPlaylist(t.app, security, `Guarded ${accept}`, SONGS);
      const read = await get(playlist.id, { 'accept-encoding': accept });
      expect(read.headers['content-encoding']).toBe(encoding);
      let tag = etagOf(read);

      // A client that compresses or not: the edit's answer comes in its encoding, with a tag of that encoding.
      const steps = [
        ['PATCH', { name: `Renamed ${accept}` }, 'gzip'],
        ['PUT', { name: `Replaced ${accept}`, songIds: SONGS.slice(1) }, accept],
        ['POST', { songIds: [7, 8] }, 'identity'],
      ] as const;
      for (const [method, payload, answerEncoding] of steps) {
        const done = await edit(method, playlist.id, payload, { 'if-match': tag, 'accept-encoding': answerEncoding });
        expect(done.statusCode, `${method} with ${tag}`).toBe(200);
        expect(etagOf(done)).toMatch(STRONG);
        const stale = await edit(method, playlist.id, payload, { 'if-match': tag, 'accept-encoding': answerEncoding });
        expectError(stale, 412);
        tag = etagOf(done);
      }

      // The last edit's tag still names the playlist as GET answers it, in every encoding.
      for (const [other] of ENCODINGS) {
        expect((await get(playlist.id, { 'accept-encoding': other, 'if-none-match': tag })).statusCode).toBe(304);
      }
      const current = etagOf(await get(playlist.id, { 'accept-encoding': accept }));
      for (const made of [`"${current.slice(1, -1)}-gzip2"`, `"x${current.slice(1)}`, '"never-made-br"']) {
        expectError(await edit('PATCH', playlist.id, { name: 'No' }, { 'if-match': made }), 412);
      }
      expectError(await edit('PATCH', playlist.id, { name: 'No' }, { 'if-match': `W/${current}` }), 412);
      const last = await edit('PATCH', playlist.id, { name: 'Yes' }, { 'if-match': current });
      expect(last.statusCode).toBe(200);
    });
  }

  it('gives XSPF, JSPF and M3U8 files and SVG covers strong ETags that revalidate when compressed', async () => {
    const playlist = await createPlaylist(t.app, security, 'Files', SONGS);
    // M3U8's media types are not among those compressed (mime-db's list): its answer goes out as it is.
    const files = [
      ['application/xspf+xml', 'gzip'],
      ['application/jspf+json', 'gzip'],
      ['audio/mpegurl', undefined],
    ] as const;
    for (const [type, encoding] of files) {
      const answer = await get(playlist.id, { accept: type, 'accept-encoding': 'gzip' });
      expect(answer.statusCode, type).toBe(200);
      expect(answer.headers['content-encoding'], type).toBe(encoding);
      expect(etagOf(answer), type).toMatch(STRONG);
      for (const [accept] of ENCODINGS) {
        const again = await get(playlist.id, {
          accept: type,
          'accept-encoding': accept,
          'if-none-match': etagOf(answer),
        });
        expect(again.statusCode, `${type} ${accept}`).toBe(304);
      }
    }

    const cover = (headers: Record<string, string>) =>
      t.app.inject({
        url: `/v3/playlist/${playlist.id}/image?size=600`,
        headers: { security, accept: 'image/svg+xml', ...headers },
      });
    const svg = await cover({ 'accept-encoding': 'br' });
    expect(svg.statusCode).toBe(200);
    expect(svg.headers['content-encoding']).toBe('br');
    expect(etagOf(svg)).toMatch(STRONG);
    for (const [accept] of ENCODINGS) {
      expect((await cover({ 'accept-encoding': accept, 'if-none-match': etagOf(svg) })).statusCode, accept).toBe(304);
    }
  });

  it('lets fetch(), which asks for compressed answers, edit a large playlist with If-Match', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}/v3/playlist`;
    const created = await fetch(url, {
      method: 'POST',
      headers: { security, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Fetched', songIds: SONGS }),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as PlaylistBody;

    const read = await fetch(`${url}/${id}`, { headers: { security } });
    expect(read.status).toBe(200);
    expect(read.headers.get('content-encoding')).toMatch(/^(gzip|br|deflate|zstd)$/);
    const tag = read.headers.get('etag')!;
    expect(tag).toMatch(STRONG);

    const patched = await fetch(`${url}/${id}`, {
      method: 'PATCH',
      headers: { security, 'content-type': 'application/merge-patch+json', 'if-match': tag },
      body: JSON.stringify({ name: 'Fetched and renamed' }),
    });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as PlaylistBody).name).toBe('Fetched and renamed');
    const next = patched.headers.get('etag')!;
    expect(next).toMatch(STRONG);

    const appended = await fetch(`${url}/${id}/songs`, {
      method: 'POST',
      headers: { security, 'content-type': 'application/json', 'if-match': next },
      body: JSON.stringify({ songIds: [3] }),
    });
    expect(appended.status).toBe(200);
    const revalidated = await fetch(`${url}/${id}`, {
      headers: { security, 'if-none-match': appended.headers.get('etag')! },
    });
    expect(revalidated.status).toBe(304);
    const stale = await fetch(`${url}/${id}`, {
      method: 'PATCH',
      headers: { security, 'content-type': 'application/merge-patch+json', 'if-match': next },
      body: JSON.stringify({ name: 'Lost' }),
    });
    expect(stale.status).toBe(412);
  });
});
