import { readFileSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createTestApp } from '../helpers/app.js';
import { useTestApp } from '../helpers/each-database.js';
import { createPlaylist, expectError } from '../helpers/requests.js';

const PAGE = 'https://app.example';
const OTHER = 'https://elsewhere.example';

/** Answer headers a page reads without their being exposed, and those that only speak to the browser or the hop. */
const ALWAYS_READABLE = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires']);
// Meant for the browser itself, not for a page's script: the cover's Content-Security-Policy among them.
const NOT_FOR_SCRIPT = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'vary',
  'content-security-policy',
]);
const isForScript = (name: string): boolean =>
  !ALWAYS_READABLE.has(name) &&
  !NOT_FOR_SCRIPT.has(name) &&
  !name.startsWith('access-control-') &&
  name !== 'x-content-type-options';

const listOf = (value: string | string[] | number | undefined): string[] =>
  String(value ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');

const documented = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};

describe('CORS with MIXTAPE_CORS_ORIGINS set', () => {
  const t = useTestApp('sqlite', { MIXTAPE_CORS_ORIGINS: PAGE, MIXTAPE_RATE_LIMIT: '1000' });
  const plain = useTestApp('sqlite');

  const preflight = (url: string, method: string, origin = PAGE) =>
    t.app.inject({
      method: 'OPTIONS',
      url,
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'security, content-type, if-none-match, if-match, x-request-id',
      },
    });

  it('allows, in a preflight, every method and request header the documented operations use', async () => {
    const operations = Object.entries(documented.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => ({ url: path.replace(/\{[^}]+\}/g, '1'), method: method.toUpperCase() })),
    );
    expect(operations.map((o) => o.method)).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']));
    for (const { url, method } of [...operations, { url: '/v3/playlist', method: 'HEAD' }]) {
      const answer = await preflight(url, method);
      const where = `${method} ${url}`;
      expect(answer.statusCode, where).toBe(204);
      expect(answer.headers['access-control-allow-origin'], where).toBe(PAGE);
      expect(listOf(answer.headers['access-control-allow-methods']), where).toContain(method.toLowerCase());
      expect(listOf(answer.headers['access-control-allow-headers']), where).toEqual(
        expect.arrayContaining([
          'security',
          'authorization',
          'content-type',
          'if-none-match',
          'if-match',
          'x-request-id',
        ]),
      );
      expect(Number(answer.headers['access-control-max-age']), where).toBeGreaterThan(0);
    }
  });

  it('lets script read every header the API answers with', async () => {
    const security = await t.addUser();
    const headers = { origin: PAGE, security };
    const playlist = await createPlaylist(t.app, security, 'Readable', [1, 2, 3]);
    const answers: [string, LightMyRequestResponse][] = [
      [
        'create',
        await t.app.inject({ method: 'POST', url: '/v3/playlist', headers, payload: { name: 'x', songIds: [] } }),
      ],
      ['list', await t.app.inject({ url: '/v3/playlist?limit=1', headers })],
      ['get', await t.app.inject({ url: `/v3/playlist/${playlist.id}`, headers })],
      ['cover', await t.app.inject({ url: `/v3/playlist/${playlist.id}/image?size=64`, headers })],
      ['songs', await t.app.inject({ url: '/v3/song?limit=2', headers })],
      ['unauthenticated', await t.app.inject({ url: '/v3/playlist', headers: { origin: PAGE } })],
      ['not allowed', await t.app.inject({ method: 'PUT', url: '/v3/playlist', headers, payload: {} })],
      [
        'edit',
        await t.app.inject({
          method: 'PATCH',
          url: `/v3/playlist/${playlist.id}`,
          headers: { ...headers, 'content-type': 'application/merge-patch+json' },
          payload: { name: 'Renamed' },
        }),
      ],
      [
        'patch of another type',
        await t.app.inject({
          method: 'PATCH',
          url: `/v3/playlist/${playlist.id}`,
          headers: { ...headers, 'content-type': 'application/xml' },
          payload: '<name/>',
        }),
      ],
    ];
    const seen = new Set<string>();
    for (const [what, answer] of answers) {
      expect(answer.statusCode, what).toBeLessThan(500);
      expect(answer.headers['access-control-allow-origin'], what).toBe(PAGE);
      const exposed = listOf(answer.headers['access-control-expose-headers']);
      for (const name of Object.keys(answer.headers).filter(isForScript)) {
        seen.add(name);
        expect(exposed, `${what}: ${name}`).toContain(name);
      }
    }
    // The headers the issue names are among those actually answered, so the loop above checked them.
    expect([...seen]).toEqual(
      expect.arrayContaining([
        'etag',
        'location',
        'x-total-count',
        'link',
        'www-authenticate',
        'allow',
        'accept-patch',
      ]),
    );
    expect([...seen]).toEqual(expect.arrayContaining(['x-ratelimit-limit', 'x-ratelimit-remaining']));
  });

  it('exposes Retry-After on 429', async () => {
    const limited = await createTestApp('sqlite', { MIXTAPE_CORS_ORIGINS: PAGE, MIXTAPE_RATE_LIMIT: '1' });
    try {
      const headers = { origin: PAGE, security: await limited.addUser() };
      await limited.app.inject({ url: '/v3/song', headers });
      const refused = await limited.app.inject({ url: '/v3/song', headers });
      expectError(refused, 429);
      expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
      expect(listOf(refused.headers['access-control-expose-headers'])).toContain('retry-after');
      expect(refused.headers['retry-after']).toBeDefined();
    } finally {
      await limited.close();
    }
  });

  it('answers a plain OPTIONS as with CORS off: 405 with Allow, or 404, with the JSON error body', async () => {
    const cases = [
      { url: '/v3/playlist', headers: {} },
      { url: '/v3/playlist/1', headers: { origin: PAGE } },
      { url: '/v3/playlist/1/image', headers: { 'access-control-request-method': 'GET' } },
      { url: '/no/such/path', headers: { origin: PAGE } },
    ];
    for (const { url, headers } of cases) {
      const where = `${url} ${JSON.stringify(headers)}`;
      const withCors = await t.app.inject({ method: 'OPTIONS', url, headers });
      const without = await plain.app.inject({ method: 'OPTIONS', url, headers });
      expectError(withCors, without.statusCode);
      expect(withCors.statusCode, where).toBe(url === '/no/such/path' ? 404 : 405);
      expect(withCors.headers.allow, where).toBe(without.headers.allow);
      expect(withCors.json<{ errormsg: string }>().errormsg, where).toBe(without.json<{ errormsg: string }>().errormsg);
      expect(withCors.headers['access-control-allow-methods'], where).toBeUndefined();
    }
  });

  it('grants nothing to an origin that is not listed', async () => {
    const security = await t.addUser();
    const answer = await preflight('/v3/playlist/1', 'DELETE', OTHER);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    const list = await t.app.inject({ url: '/v3/playlist', headers: { origin: OTHER, security } });
    expect(list.statusCode).toBe(200);
    expect(list.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe("docs/api.md's CORS notes", () => {
  const readme = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const notes = readme.slice(readme.indexOf('Browsers: CORS'), readme.indexOf('- Any other `OPTIONS`'));
  const named = new Set([...notes.matchAll(/`([^`]+)`/g)].map((match) => match[1]!.toLowerCase()));

  it('name every method, request header and exposed header the service allows', async () => {
    const t = await createTestApp('sqlite', { MIXTAPE_CORS_ORIGINS: PAGE });
    try {
      const answer = await t.app.inject({
        method: 'OPTIONS',
        url: '/v3/playlist/1',
        headers: { origin: PAGE, 'access-control-request-method': 'PATCH' },
      });
      const allowed = [
        ...listOf(answer.headers['access-control-allow-methods']),
        ...listOf(answer.headers['access-control-allow-headers']),
      ];
      const exposed = listOf(
        (await t.app.inject({ url: '/v3/playlist', headers: { origin: PAGE } })).headers[
          'access-control-expose-headers'
        ],
      ).filter((name) => !name.startsWith('x-ratelimit-'));
      expect(allowed.length + exposed.length).toBeGreaterThan(15);
      for (const name of [...allowed, ...exposed]) expect(named, name).toContain(name);
    } finally {
      await t.close();
    }
  });
});
