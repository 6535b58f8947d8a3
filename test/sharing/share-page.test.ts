import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appWithLogLines, createTestApp, type TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface NewLink {
  id: number;
  url: string;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The headers every answer under /s/ carries, the 404 page's included. */
function expectSharedHeaders(response: LightMyRequestResponse, csp: RegExp): void {
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
  expect(response.headers['x-robots-tag']).toBe('noindex');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(String(response.headers['content-security-policy'])).toMatch(csp);
}

const PAGE_CSP =
  /^default-src 'none'; img-src 'self'; style-src 'sha256-[A-Za-z0-9+/]{43}='; base-uri 'none'; form-action 'none'; frame-ancestors 'none'$/;

describeEachDatabase('the shared playlist at /s/{token} on %s', (t) => {
  let ivy: string;
  let playlistId: number;
  let path: string;
  let token: string;
  const NAME = `<script>alert("name")</script> & 'Friends'`;

  beforeAll(async () => {
    ivy = await t.addUser(`ivy_${process.pid}_${Math.random().toString(36).slice(2, 8)}`);
    // A catalog song whose every text would be markup if printed as it is.
    await t.db.kysely
      .updateTable('songs')
      .set({
        title: '<script>alert(1)</script>',
        artist: `"Quoted" & <b>bold</b>`,
        album: `<img src=x onerror=alert(2)>`,
      })
      .where('id', '=', 20)
      .execute();
    const playlist = await createPlaylist(t.app, ivy, NAME, [20, 1, 2, 3]);
    playlistId = playlist.id;
    const made = await sendAs(t.app, 'POST', `/v3/playlist/${playlistId}/links`, ivy, {});
    expect(made.statusCode).toBe(200);
    path = new URL(made.json<NewLink>().url).pathname;
    token = path.split('/')[2]!;
  });

  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

  it("is a web page of the playlist's name, cover, songs, total length, owner and files, for anyone", async () => {
    const response = await get(path, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expectSharedHeaders(response, PAGE_CSP);
    expect(response.headers.vary).toContain('Accept');
    const html = response.body;
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain(`<img class="cover" src="${path}/image?size=600"`);
    expect(html).toContain('Sawdust &amp; Sparks');
    expect(html).toContain('Hollow Pine Engine');
    expect(html).toContain('Smoke Signals');
    expect(html).toContain('5:04');
    expect(html).toMatch(/4 songs · \d+ min/);
    for (const format of ['xspf', 'jspf', 'm3u8']) expect(html).toContain(`href="${path}?format=${format}"`);
    // No script of any kind, nothing from elsewhere.
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<[^>]*\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//i);
    // A plain `curl` gets the page too.
    expect((await get(path)).headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('escapes every text it prints: names, titles, artists and albums', async () => {
    const html = (await get(path)).body;
    expect(html).toContain('&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt; &amp; &#39;Friends&#39;');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&quot;Quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt;');
    expect(html).toContain('&lt;img src=x onerror=alert(2)&gt;');
    expect(html).not.toContain('<b>bold');
    expect(html).not.toContain('<img src=x');
  });

  it("shows the owner's name, and the page's style is the one its policy allows", async () => {
    const response = await get(path);
    const owner = (await get(path, { accept: 'application/json' })).json<{ owner: string }>().owner;
    expect(response.body).toContain(`shared by <strong>${owner}</strong>`);
    const style = /<style>([\s\S]*?)<\/style>/.exec(response.body)![1]!;
    const { createHash } = await import('node:crypto');
    const hash = createHash('sha256').update(style).digest('base64');
    expect(String(response.headers['content-security-policy'])).toContain(`'sha256-${hash}'`);
  });

  it("answers the playlist's JSON with its owner to Accept: application/json", async () => {
    const response = await get(path, { accept: 'application/json' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expectSharedHeaders(response, PAGE_CSP);
    const own = await sendAs(t.app, 'GET', `/v3/playlist/${playlistId}`, ivy);
    expect(response.json()).toEqual({ ...own.json<object>(), owner: expect.stringMatching(/^ivy_/) as string });
    expect(Object.keys(response.json<object>())).toEqual(['id', 'name', 'songs', 'owner']);
  });

  it("answers its cover, as the owner's cover route draws it", async () => {
    const png = await get(`${path}/image?size=64`);
    expect(png.statusCode).toBe(200);
    expect(png.headers['content-type']).toBe('image/png');
    expect(png.rawPayload.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expectSharedHeaders(png, /^default-src 'none'; sandbox$/);
    const own = await sendAs(t.app, 'GET', `/v3/playlist/${playlistId}/image?size=64`, ivy);
    expect(png.rawPayload.equals(own.rawPayload)).toBe(true);
    const svg = await get(`${path}/image?size=64`, { accept: 'image/svg+xml' });
    expect(svg.headers['content-type']).toBe('image/svg+xml');
    expect(svg.body).toMatch(/^<svg/);
    expect((await get(`${path}/image?size=5`)).statusCode).toBe(400);
  });

  it('answers its files as downloads, as the owner gets them, with the same file names', async () => {
    for (const format of ['xspf', 'jspf', 'm3u8']) {
      const shared = await get(`${path}?format=${format}`);
      const own = await sendAs(t.app, 'GET', `/v3/playlist/${playlistId}?format=${format}`, ivy);
      expect(shared.statusCode, format).toBe(200);
      expect(shared.body).toBe(own.body);
      expect(shared.headers['content-type']).toBe(own.headers['content-type']);
      expect(shared.headers['content-disposition']).toBe(own.headers['content-disposition']);
      expect(shared.headers['content-disposition']).toMatch(/^attachment; filename="/);
      expectSharedHeaders(shared, PAGE_CSP);
    }
    expectError(await get(`${path}?format=json`), 400);
    expectError(await get(`${path}?format=pdf`), 400);
  });

  it('shows the current version: an edit shows at once', async () => {
    const renamed = await sendAs(t.app, 'PATCH', `/v3/playlist/${playlistId}`, ivy, { name: 'Renamed for all' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect((await get(path)).body).toContain('<h1>Renamed for all</h1>');
    expect((await get(path, { accept: 'application/json' })).json<{ name: string }>().name).toBe('Renamed for all');
    await sendAs(t.app, 'PATCH', `/v3/playlist/${playlistId}`, ivy, { name: NAME });
  });

  it('answers an unknown token with the small 404 page, with the same headers', async () => {
    // The token with its last character changed (to one it does not already end with).
    const other = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    for (const url of [`/s/${other}`, `/s/${other}/image`, '/s/%E2%9C%93']) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.body).toContain('This link opens nothing');
      expect(response.body).not.toMatch(/<script|<img/i);
      expectSharedHeaders(response, url.endsWith('/image') ? /^default-src 'none'; sandbox$/ : PAGE_CSP);
    }
  });
});

describeEachDatabase('the throttle of /s/ on %s', { MIXTAPE_SHARE_PER_MINUTE: '4' }, (t) => {
  it('answers 429 with Retry-After past the limit, pages, covers and files alike, before any token is read', async () => {
    const ivy = await t.addUser();
    const playlist = await createPlaylist(t.app, ivy, 'Throttled', [1]);
    const path = new URL(
      (await sendAs(t.app, 'POST', `/v3/playlist/${playlist.id}/links`, ivy, {})).json<NewLink>().url,
    ).pathname;
    const statuses = [];
    for (const url of [path, `${path}/image?size=64`, `${path}?format=xspf`, '/s/unknown']) {
      statuses.push((await t.app.inject({ method: 'GET', url })).statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 404]);
    for (const url of [path, `${path}/image`, `${path}?format=m3u8`, '/s/unknown']) {
      const before = t.queries.length;
      const refused = expectError(await t.app.inject({ method: 'GET', url }), 429);
      expect(refused.errormsg).toContain('4 a minute');
      expect(t.queries.length, url).toBe(before);
    }
    const last = await t.app.inject({ method: 'GET', url: path });
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(last.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Another address has its own count, and the API is not throttled by it.
    const elsewhere = await t.app.inject({ method: 'GET', url: path, remoteAddress: '192.0.2.44' });
    expect(elsewhere.statusCode).toBe(200);
    expect((await sendAs(t.app, 'GET', `/v3/playlist/${playlist.id}`, ivy)).statusCode).toBe(200);
  });
});

describe.each(DIALECTS)('what is logged of /s/ on %s', (dialect) => {
  let t: TestApp;
  let app: FastifyInstance;
  let lines: string[];

  beforeAll(async () => {
    t = await createTestApp(dialect);
    ({ app, lines } = await appWithLogLines(t));
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  it('never records the token: request lines, error messages and metrics show /s/[token]', async () => {
    const ivy = await t.addUser();
    const playlist = await createPlaylist(app, ivy, 'Logged', [1, 2]);
    const made = await sendAs(app, 'POST', `/v3/playlist/${playlist.id}/links`, ivy, {});
    const url = made.json<NewLink>().url;
    const path = new URL(url).pathname;
    const token = path.split('/')[2]!;
    const before = lines.length;
    const answers = [
      await app.inject({ method: 'GET', url: path }),
      await app.inject({ method: 'GET', url: `${path}/image?size=64` }),
      await app.inject({ method: 'GET', url: `${path}?format=jspf` }),
      await app.inject({ method: 'GET', url: path, headers: { accept: 'application/json' } }),
      await app.inject({ method: 'GET', url: `${path}?format=nope` }),
      await app.inject({ method: 'GET', url: `${path}/elsewhere` }),
      await app.inject({ method: 'POST', url: path }),
      await app.inject({ method: 'GET', url: `/S/${token}` }),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 400, 404, 405, 404]);
    for (const answer of answers.slice(4)) expect(answer.body).not.toContain(token);
    const written = lines.slice(before);
    expect(written.length).toBeGreaterThanOrEqual(answers.length);
    expect(written.join('\n')).not.toContain(token);
    const urls = written.map((line) => (JSON.parse(line) as { url?: string }).url).filter(Boolean);
    expect(urls).toEqual(
      expect.arrayContaining([
        '/s/[token]',
        '/s/[token]/image?size=64',
        '/s/[token]?format=jspf',
        '/s/[token]/elsewhere',
        '/S/[token]',
      ]),
    );
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('route="/s/:token"');
    expect(metrics.body).not.toContain(token);
  });
});
