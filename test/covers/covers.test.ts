import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { colourOf } from '../../src/covers/design.js';
import { openTestApp, type TestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { coverCacheHits, coverRenders, decode, expectColour, pixel } from '../helpers/images.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';
import { sleep } from '../helpers/traffic.js';

// Songs of the demo catalog with four different artists, and two songs by one of them.
const FOUR_ARTISTS = [1, 2, 3, 4];
const artistsOf = (playlist: PlaylistBody) => [...new Set(playlist.songs.map((s) => s.artist))];

describeEachDatabase('GET /v3/playlist/{id}/image (%s)', (t) => {
  let security: string;
  let mosaic: PlaylistBody;

  const image = (id: number, headers: Record<string, string> = {}, query = '', app = t) =>
    app.app.inject({ method: 'GET', url: `/v3/playlist/${id}/image${query}`, headers: { security, ...headers } });

  beforeAll(async () => {
    security = await t.addUser();
    mosaic = await createPlaylist(t.app, security, 'Four corners', [...FOUR_ARTISTS, 1, 2]);
  });

  it('answers a 600x600 PNG by default, cacheable only by the caller, with a strong ETag', async () => {
    const response = await image(mosaic.id);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('image/png');
    expect(response.headers['cache-control']).toMatch(/^private\b/);
    expect(response.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(String(response.headers.vary)).toMatch(/\bAccept\b/);
    const png = await decode(response.rawPayload);
    expect(png).toMatchObject({ format: 'png', width: 600, height: 600 });
  });

  it('draws one panel per artist, first four distinct artists in order, in colours derived from their names', async () => {
    const artists = artistsOf(mosaic);
    expect(artists).toHaveLength(4);
    const png = await decode((await image(mosaic.id)).rawPayload);
    // Near the top left corner of each quarter: clear of the initial letter and of the shade under the text.
    const corners: [number, number][] = [
      [60, 60],
      [360, 60],
      [60, 310],
      [360, 310],
    ];
    corners.forEach(([x, y], i) => {
      expectColour(pixel(png, x, y), colourOf(artists[i]!), 2, `panel ${i}`);
    });
  });

  it('draws halves for two artists, and a half and two quarters for three', async () => {
    const two = await createPlaylist(t.app, security, 'Two', [3, 3, 4, 3]);
    const [a, b] = artistsOf(two);
    const halves = await decode((await image(two.id)).rawPayload);
    for (const y of [60, 310]) {
      expectColour(pixel(halves, 60, y), colourOf(a!), 2, `left half at ${y}`);
      expectColour(pixel(halves, 360, y), colourOf(b!), 2, `right half at ${y}`);
    }

    const three = await createPlaylist(t.app, security, 'Three', [2, 3, 4]);
    const [c, d, e] = artistsOf(three);
    const thirds = await decode((await image(three.id)).rawPayload);
    expectColour(pixel(thirds, 60, 60), colourOf(c!), 2, 'left half, top');
    expectColour(pixel(thirds, 60, 310), colourOf(c!), 2, 'left half, bottom');
    expectColour(pixel(thirds, 360, 60), colourOf(d!), 2, 'top right quarter');
    expectColour(pixel(thirds, 360, 310), colourOf(e!), 2, 'bottom right quarter');
  });

  it("draws one panel in the colour of the playlist's name when it has no songs", async () => {
    const empty = await createPlaylist(t.app, security, 'Nothing yet', []);
    const png = await decode((await image(empty.id)).rawPayload);
    for (const [x, y] of [
      [60, 60],
      [360, 60],
      [60, 300],
    ] as const) {
      expectColour(pixel(png, x, y), colourOf('Nothing yet'), 2, `at ${x},${y}`);
    }
  });

  it('answers JPEG or SVG when Accept prefers them, and PNG when Accept names no image type', async () => {
    const jpeg = await image(mosaic.id, { accept: 'image/jpeg, image/png;q=0.5' });
    expect(jpeg.headers['content-type']).toBe('image/jpeg');
    const decoded = await decode(jpeg.rawPayload);
    expect(decoded).toMatchObject({ format: 'jpeg', width: 600, height: 600 });
    expectColour(pixel(decoded, 60, 60), colourOf(artistsOf(mosaic)[0]!), 8, 'JPEG panel 0');

    const svg = await image(mosaic.id, { accept: 'image/svg+xml' });
    expect(svg.headers['content-type']).toBe('image/svg+xml');
    expect(svg.body).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="600" height="600"/);
    expect(svg.body).toContain('<title>Four corners</title>');
    // Letters are outlines, so the picture does not depend on the fonts of whoever opens it.
    expect(svg.body).not.toMatch(/<text\b/);

    for (const accept of ['application/json', '*/*', 'image/*']) {
      expect((await image(mosaic.id, { accept })).headers['content-type'], accept).toBe('image/png');
    }
    const etags = new Set([jpeg, svg, await image(mosaic.id)].map((r) => r.headers.etag));
    expect(etags.size).toBe(3);
  });

  it('answers every cover, the SVG in particular, with a policy under which it loads and runs nothing', async () => {
    const policy = "default-src 'none'; sandbox";
    for (const accept of ['image/svg+xml', 'image/png', 'image/jpeg']) {
      const response = await image(mosaic.id, { accept });
      expect(response.statusCode, accept).toBe(200);
      expect(response.headers['content-security-policy'], accept).toBe(policy);
    }
    // The SVG needs nothing the policy forbids: no style, script, link, font, image or reference outside itself.
    const svg = (await image(mosaic.id, { accept: 'image/svg+xml' })).body;
    expect(svg).not.toMatch(/<(?:style|script|image|use|a|foreignObject|font)\b|\sstyle=|\bhref=|@import|data:/i);
    expect(svg.match(/url\([^)]*\)/g)?.every((ref) => /^url\(#[\w-]+\)$/.test(ref))).toBe(true);
    const etag = String((await image(mosaic.id, { accept: 'image/svg+xml' })).headers.etag);
    const revalidated = await image(mosaic.id, { accept: 'image/svg+xml', 'if-none-match': etag });
    expect(revalidated.statusCode).toBe(304);
    expect(revalidated.headers['content-security-policy']).toBe(policy);
  });

  it('draws the name in proportion at every size: its glyphs scale with the cover, in Arabic and emoji too', async () => {
    const named = await createPlaylist(t.app, security, 'أغاني 🎸 Rock 🔥 Night 🌙', [1]);
    // The name's glyph scales (the first group of white outlines), each font's own.
    const scales = async (size: number) => {
      const svg = (await image(named.id, { accept: 'image/svg+xml' }, `?size=${size}`)).body;
      const group = /<g fill="#fff">(.*?)<\/g>/.exec(svg)?.[1] ?? '';
      return [...group.matchAll(/matrix\(([\d.]+) /g)].map((m) => Number(m[1]));
    };
    const large = await scales(600);
    expect(large.length).toBeGreaterThan(10);
    const fonts = [...new Set(large)];
    expect(fonts.length).toBeGreaterThanOrEqual(2); // the text fonts and the emoji font differ in units per em
    for (const size of [100, 200]) {
      const small = await scales(size);
      expect(small.length, `size ${size}`).toBeGreaterThan(3);
      // The name is 7% of the cover, and at least 11 pixels, as in design.ts.
      const ratio = Math.max(11, size * 0.07) / (600 * 0.07);
      for (const scale of small) {
        const nearest = Math.min(...fonts.map((font) => Math.abs(scale / (font * ratio) - 1)));
        expect(nearest, `size ${size}: scale ${scale}`).toBeLessThan(0.001);
      }
    }
  });

  it('draws ?size from 64 to 1200 and refuses other sizes with 400', async () => {
    for (const size of [64, 1200]) {
      const response = await image(mosaic.id, {}, `?size=${size}`);
      expect(await decode(response.rawPayload)).toMatchObject({ width: size, height: size });
    }
    for (const size of ['63', '1201', '0', 'big', '600.5']) {
      const body = expectError(await image(mosaic.id, {}, `?size=${size}`), 400);
      expect(body.errormsg).toContain('size');
    }
  });

  it('gives the same bytes for the same playlist and different bytes for a different one', async () => {
    // A second instance without a cache draws every cover afresh.
    const uncached = await openTestApp(t.config.database.url, { MIXTAPE_IMAGE_CACHE_MB: '0' });
    try {
      const before = await coverRenders(uncached.app);
      const first = await image(mosaic.id, {}, '', uncached);
      const second = await image(mosaic.id, {}, '', uncached);
      expect(await coverRenders(uncached.app)).toBe(before + 2);
      expect(first.rawPayload.equals(second.rawPayload)).toBe(true);
      expect(first.rawPayload.equals((await image(mosaic.id)).rawPayload)).toBe(true);

      const other = await createPlaylist(t.app, security, 'Four corners', [...FOUR_ARTISTS].reverse());
      const different = await image(other.id, {}, '', uncached);
      expect(different.rawPayload.equals(first.rawPayload)).toBe(false);
      expect(different.headers.etag).not.toBe(first.headers.etag);
    } finally {
      await uncached.close();
    }
  });

  it('answers 304 to a matching If-None-Match without drawing', async () => {
    const uncached = await openTestApp(t.config.database.url, { MIXTAPE_IMAGE_CACHE_MB: '0' });
    try {
      const first = await image(mosaic.id, {}, '?size=300', uncached);
      const etag = String(first.headers.etag);
      const drawn = await coverRenders(uncached.app);
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const revalidated = await image(mosaic.id, { 'if-none-match': header }, '?size=300', uncached);
        expect(revalidated.statusCode, header).toBe(304);
        expect(revalidated.body).toBe('');
        expect(revalidated.headers.etag).toBe(etag);
        expect(revalidated.headers['cache-control']).toMatch(/^private\b/);
      }
      expect(await coverRenders(uncached.app)).toBe(drawn);

      // Another size or format is another representation: it is drawn and sent.
      const stale = await image(mosaic.id, { 'if-none-match': etag }, '?size=301', uncached);
      expect(stale.statusCode).toBe(200);
      expect(await coverRenders(uncached.app)).toBe(drawn + 1);
    } finally {
      await uncached.close();
    }
  });

  it('serves a cover drawn once from memory', async () => {
    const before = await coverRenders(t.app);
    const first = await image(mosaic.id, {}, '?size=200');
    const second = await image(mosaic.id, {}, '?size=200');
    expect(second.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(await coverRenders(t.app)).toBe(before + 1);
  });

  it("keeps each user's covers apart: another user's identical cover is drawn for them, not found in memory", async () => {
    const alice = await t.addUser();
    const bob = await t.addUser();
    const songs = [...FOUR_ARTISTS, 5];
    const hers = await createPlaylist(t.app, alice, 'Same on both sides', songs);
    const his = await createPlaylist(t.app, bob, 'Same on both sides', songs);
    const cover = (id: number, who: string) => image(id, { security: who }, '?size=333');
    // Both signed in once beforehand, and her cover drawn and kept.
    expect((await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: bob } })).statusCode).toBe(
      200,
    );
    const first = await cover(hers.id, alice);
    expect(first.statusCode).toBe(200);

    const hits = await coverCacheHits(t.app);
    const drawn = await coverRenders(t.app);
    const theirs = await cover(his.id, bob);
    expect(theirs.statusCode).toBe(200);
    // The same picture, and so the same validator, but what her request kept does not answer his.
    expect(theirs.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(theirs.headers.etag).toBe(first.headers.etag);
    expect(await coverCacheHits(t.app)).toBe(hits);
    expect(await coverRenders(t.app)).toBe(drawn + 1);

    // Each of them finds their own cover in memory.
    expect((await cover(hers.id, alice)).statusCode).toBe(200);
    expect(await coverCacheHits(t.app)).toBe(hits + 1);
    expect((await cover(his.id, bob)).statusCode).toBe(200);
    expect(await coverCacheHits(t.app)).toBe(hits + 2);
    expect(await coverRenders(t.app)).toBe(drawn + 1);
  });

  it("answers as the JSON endpoint does for no credential, another user's playlist, and a deleted one", async () => {
    const sameAsJson = async (url: string, headers: Record<string, string>, status: number) => {
      const json = await t.app.inject({ method: 'GET', url, headers });
      const cover = await t.app.inject({ method: 'GET', url: `${url}/image`, headers });
      expect(expectError(cover, status).errormsg).toBe(expectError(json, status).errormsg);
      expect(cover.headers.etag).toBeUndefined();
      expect(cover.headers['cache-control']).toBe('no-store');
      return cover;
    };
    const mine = await createPlaylist(t.app, security, 'Soon gone', [5]);
    const stranger = await t.addUser();

    const anonymous = await sameAsJson(`/v3/playlist/${mine.id}`, {}, 401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic/);
    await sameAsJson(`/v3/playlist/${mine.id}`, { security: stranger }, 404);
    await sameAsJson(`/v3/playlists/${mine.id}`, { security: stranger }, 404);
    await sameAsJson('/v3/playlist/999999999', { security }, 404);
    await sameAsJson('/v3/playlist/0', { security }, 400);

    const deleted = await t.app.inject({ method: 'DELETE', url: `/v3/playlist/${mine.id}`, headers: { security } });
    expect(deleted.statusCode).toBe(200);
    await sameAsJson(`/v3/playlist/${mine.id}`, { security }, 410);
    await sameAsJson(`/v3/playlists/${mine.id}`, { security }, 410);
    await sameAsJson(`/v3/playlist/${mine.id}`, { security: stranger }, 404);
  });

  /** A user of their own with a playlist, signed in once on `app` (so that their next requests reach it at once). */
  const userWithPlaylist = async (app: TestApp) => {
    const user = await t.addUser();
    const playlist = await createPlaylist(t.app, user, 'Busy covers', [...FOUR_ARTISTS]);
    expect((await app.app.inject({ url: '/v3/playlist', headers: { security: user } })).statusCode).toBe(200);
    return { security: user, playlist };
  };
  const coverOf = (app: TestApp, user: { security: string; playlist: PlaylistBody }, size: number) =>
    app.app.inject({
      url: `/v3/playlist/${user.playlist.id}/image?size=${size}`,
      headers: { security: user.security },
    });

  /** An app on the same database drawing one cover at a time with `queue` waiting, none kept; closed after `use`. */
  const withOneRenderer = async (queue: number, use: (busy: TestApp) => Promise<void>) => {
    const busy = await openTestApp(t.config.database.url, {
      MIXTAPE_IMAGE_CACHE_MB: '0',
      MIXTAPE_IMAGE_RENDERS: '1',
      MIXTAPE_IMAGE_QUEUE: String(queue),
    });
    try {
      await use(busy);
    } finally {
      await busy.close();
    }
  };

  it('answers 503 with Retry-After when every renderer is busy with several users’ covers, while JSON endpoints keep answering', async () => {
    await withOneRenderer(1, async (busy) => {
      // One after another: sign-ins from one address are checked a few at a time.
      const users = [];
      for (let i = 0; i < 5; i++) users.push(await userWithPlaylist(busy));
      // Large covers of different sizes, so that no two requests share one drawing; two from each user.
      const covers = users.flatMap((user, i) => [coverOf(busy, user, 1200 - 2 * i), coverOf(busy, user, 1199 - 2 * i)]);
      const json = busy.app.inject({ method: 'GET', url: `/v3/playlist/${mosaic.id}`, headers: { security } });
      const answers: LightMyRequestResponse[] = await Promise.all(covers);
      expect((await json).statusCode).toBe(200);

      // One drawing at a time and one waiting: at least the first two requests get covers, and the rest of a
      // burst that arrives while they are drawn is turned away.
      const statuses = answers.map((a) => a.statusCode);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
      expect(statuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(1);
      for (const refused of answers.filter((a) => a.statusCode !== 200)) {
        expectError(refused, 503);
        expect(refused.headers['retry-after']).toBe('1');
      }
    });
  });

  it('lets one user’s burst of covers wait its turn, never turning another user’s cover away', async () => {
    await withOneRenderer(2, async (busy) => {
      const [mallory, alice] = [await userWithPlaylist(busy), await userWithPlaylist(busy)];
      const burst = Array.from({ length: 12 }, (_, i) => coverOf(busy, mallory, 1200 - i));
      // Asked for while mallory's burst is being drawn (a cover this large takes tens of milliseconds).
      await sleep(30);
      const hers = coverOf(busy, alice, 1000);
      expect((await hers).statusCode).toBe(200);
      // Mallory's covers all come, in turn: two of them among everyone's, the others waiting apart.
      expect((await Promise.all(burst)).map((a) => a.statusCode)).toEqual(Array<number>(12).fill(200));

      // Past two drawing or queued and 32 waiting, a user's covers are refused with 429. Sixty, not just past the
      // 34: covers drawn while the burst is still arriving make room for a few more (all 36 of a burst of 36 were
      // drawn once on a busy machine).
      const flood = await Promise.all(Array.from({ length: 60 }, (_, i) => coverOf(busy, mallory, 1100 - i)));
      const refused = flood.filter((a) => a.statusCode !== 200);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      for (const answer of refused) {
        expect(expectError(answer, 429).errormsg).toMatch(/previous covers are still being drawn/);
      }
    });
  });
});
