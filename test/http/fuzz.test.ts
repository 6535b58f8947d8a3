import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { basic, type TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';
import { useTestApp } from '../helpers/each-database.js';
import {
  b64,
  badCredentialConstants,
  badCredentialValue,
  credentialArb,
  encode,
  HOSTILE_FILES,
  HOSTILE_TEXTS,
  importFileArb,
  injectOptions,
  INVALID_UTF8,
  ODD_PATHS,
  QUERY_VALUES,
  requestArb,
  TRICKY_IDS,
  wellFormedArb,
  WRONG_TYPES,
  type FuzzRequest,
  type Headers,
  type Method,
} from '../helpers/fuzz-requests.js';

/**
 * Property-based fuzzing of every endpoint through `app.inject`: random and hostile methods, paths, query
 * strings, bodies, content types and credentials. Whatever comes in, the service answers below 500, and every
 * error is the one error body (`{"errorcode", "errormsg"}`) with the headers its status needs.
 */

const RUNS = 500;
const THROTTLED_RUNS = 40;

// ---------------------------------------------------------------------------------------------- the contract

interface Tally {
  statuses: Map<number, number>;
}

const newTally = (): Tally => ({ statuses: new Map() });

function checkResponse(request: FuzzRequest, response: LightMyRequestResponse, tally: Tally): void {
  const where = `${request.method} ${request.url} -> ${response.statusCode} ${response.body.slice(0, 300)}`;
  tally.statuses.set(response.statusCode, (tally.statuses.get(response.statusCode) ?? 0) + 1);
  expect(response.statusCode, where).toBeLessThan(500);
  expect(response.statusCode, where).toBeGreaterThanOrEqual(200);

  const contentType = response.headers['content-type'] ?? '';
  if (/^application\/json\b/i.test(contentType) && response.body !== '') {
    expect(() => JSON.parse(response.body) as unknown, where).not.toThrow();
  }
  if (response.statusCode < 400) return;

  // No stack trace, source path or driver message ever reaches a client (unless the client sent it in the URL).
  for (const leak of [
    /\bat \S+ \(\S+:\d+:\d+\)/,
    /node_modules/,
    /\.ts:\d+/,
    /SQLITE_[A-Z]/,
    /syntax for type|violates/,
  ]) {
    if (!leak.test(request.url)) expect(response.body, where).not.toMatch(leak);
  }
  // The shared page answers people: its errors are the same small page (JSON when asked for; see test/sharing).
  if (request.url.startsWith('/s/') && /^text\/html\b/i.test(contentType)) {
    expect(String(response.headers['content-security-policy']), where).toContain("default-src 'none'");
    return;
  }
  expect(contentType, where).toMatch(/^application\/json\b/i);
  if (request.method !== 'HEAD') {
    const body = JSON.parse(response.body) as Record<string, unknown>;
    const { errormsg, logdata } = body as { errormsg?: unknown; logdata?: { entry?: unknown; date?: unknown } };
    expect(typeof errormsg, where).toBe('string');
    expect(String(errormsg).trim().length, where).toBeGreaterThan(0);
    expect(Number.isSafeInteger(logdata?.entry), where).toBe(true);
    expect(Number.isSafeInteger(logdata?.date), where).toBe(true);
    expect(Number(logdata?.entry), where).toBeGreaterThan(0);
    expect(Math.abs(Number(logdata?.date) - Date.now() / 1000), where).toBeLessThan(600);
    expect(String(response.headers['cache-control']), where).toContain('no-store');
  }
  if (response.statusCode === 401) {
    // A Bearer credential is an app token (1.11.0), refused with its own challenge.
    expect(String(response.headers['www-authenticate']), where).toMatch(
      /^(Basic realm=|Bearer error="invalid_token"$)/,
    );
  }
  if (response.statusCode === 405) {
    const allow = (response.headers.allow ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter((m) => m !== '');
    expect(allow.length, where).toBeGreaterThan(0);
    expect(allow, where).not.toContain(request.method);
  }
  if (response.statusCode === 429) {
    expect(String(response.headers['retry-after']), where).toMatch(/^[1-9]\d*$/);
  }
}

async function fuzz(
  testApp: TestApp,
  arbitrary: fc.Arbitrary<FuzzRequest>,
  numRuns: number,
  alsoCheck: (request: FuzzRequest, response: LightMyRequestResponse) => void = () => undefined,
): Promise<Tally> {
  const tally = newTally();
  await fc.assert(
    fc.asyncProperty(arbitrary, async (request) => {
      const response = await testApp.app.inject(injectOptions(request));
      checkResponse(request, response, tally);
      alsoCheck(request, response);
    }),
    { numRuns },
  );
  return tally;
}

interface PlaylistBody {
  id: number;
  name: string;
  songs: { id: number; title: string; artist: string }[];
}

/** The ordinary life of a playlist, after the storm. */
async function expectStillWorks(testApp: TestApp, security: string): Promise<void> {
  const { app } = testApp;
  const name = `After the storm ${Date.now()}`;
  const created = await app.inject({
    method: 'POST',
    url: '/v3/playlist',
    headers: { security, 'content-type': 'application/json' },
    payload: JSON.stringify({ name, songIds: [3, 1, 3, 240] }),
  });
  expect(created.statusCode, created.body).toBe(200);
  const playlist = created.json<PlaylistBody>();
  expect(playlist.name).toBe(name);
  expect(playlist.songs.map((s) => s.id)).toEqual([3, 1, 3, 240]);
  expect(created.headers.location).toBe(`/v3/playlist/${playlist.id}`);

  const got = await app.inject({ method: 'GET', url: `/v3/playlist/${playlist.id}`, headers: { security } });
  expect(got.statusCode, got.body).toBe(200);
  expect(got.json<PlaylistBody>()).toEqual(playlist);

  const listed = await app.inject({
    method: 'GET',
    url: `/v3/playlist?search=${encodeURIComponent(name)}&limit=100`,
    headers: { security },
  });
  expect(listed.statusCode, listed.body).toBe(200);
  expect(listed.json<PlaylistBody[]>()).toEqual([playlist]);
  expect(listed.headers['x-total-count']).toBe('1');

  const all = await app.inject({ method: 'GET', url: '/v3/playlist?limit=1', headers: { authorization: security } });
  expect(all.statusCode, all.body).toBe(200);
  expect(Number(all.headers['x-total-count'])).toBeGreaterThanOrEqual(1);

  const deleted = await app.inject({ method: 'DELETE', url: `/v3/playlist/${playlist.id}`, headers: { security } });
  expect(deleted.statusCode, deleted.body).toBe(200);
  expect(deleted.body).toBe('');

  const again = await app.inject({ method: 'GET', url: `/v3/playlist/${playlist.id}`, headers: { security } });
  expect(again.statusCode, again.body).toBe(410);
}

describe.each(DIALECTS)('fuzzing every endpoint (%s)', (dialect) => {
  describe('with the failed-attempt throttle raised', () => {
    const testApp = useTestApp(dialect, { MIXTAPE_AUTH_MAX_FAILURES: '1000000' });
    const user = { name: `fuzz_${dialect}`, password: 'ünïcödé pass' };
    let security: string;

    beforeAll(async () => {
      security = await testApp.addUser(user.name, user.password);
      // A few playlists of the user's own, so that ids 1..n exist for get, delete and search.
      for (let i = 0; i < 5; i++) {
        const response = await testApp.app.inject({
          method: 'POST',
          url: '/v3/playlist',
          headers: { security },
          payload: { name: `Seed ${i} rock é`, songIds: [i + 1, 240 - i] },
        });
        expect(response.statusCode, response.body).toBe(200);
      }
    });

    it('answers every tricky id, query value, body, path and credential of the lists below 500', async () => {
      const tally = newTally();
      const requests: FuzzRequest[] = [];
      const add = (method: Method, url: string, headers: Headers = { security }, body?: string | Buffer) => {
        requests.push({ method, url, headers, body, remoteAddress: '127.0.0.1' });
      };
      for (const id of TRICKY_IDS) {
        add('GET', `/v3/playlist/${id}`);
        add('DELETE', `/v3/playlists/${id}`);
        add('GET', `/v3/playlist/${id}/image`);
        add('GET', `/v3/song/${id}`);
      }
      for (const value of QUERY_VALUES) {
        for (const key of ['limit', 'offset', 'search']) {
          add('GET', `/v3/playlist?${key}=${encode(value)}`);
          add('GET', `/v3/song?${key}=${encode(value)}`);
        }
      }
      for (const body of [...WRONG_TYPES, ...HOSTILE_TEXTS, ...INVALID_UTF8]) {
        for (const contentType of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
          add('POST', '/v3/playlist', { security, 'content-type': contentType }, body);
          add('POST', '/v3/playlists', { authorization: security, 'content-type': contentType }, body);
        }
      }
      for (const path of ODD_PATHS) {
        for (const method of ['GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'] as const) add(method, path);
      }
      for (const value of badCredentialConstants(user.name, user.password)) {
        add('GET', '/v3/playlist', { security: value });
        add('GET', '/v3/song/1', { authorization: value });
      }
      for (const request of requests) checkResponse(request, await testApp.app.inject(injectOptions(request)), tally);
      console.info(`fuzz ${dialect}: ${requests.length} listed cases`);
    });

    it(`answers ${RUNS} random and hostile requests below 500, every error in the error body`, async () => {
      const addresses = fc.constantFrom('127.0.0.1', '10.0.0.7', '::1', '2001:db8::1');
      const hostile = requestArb(credentialArb(user.name, user.password), addresses);
      const arbitrary = fc.oneof({ weight: 3, arbitrary: hostile }, { weight: 1, arbitrary: wellFormedArb(security) });
      const tally = await fuzz(testApp, arbitrary, RUNS);
      const statuses = [...tally.statuses.entries()].sort(([a], [b]) => a - b);
      console.info(`fuzz ${dialect}: ${RUNS} requests; statuses ${statuses.map(([s, n]) => `${s}x${n}`).join(' ')}`);
      // The generator reaches the service's main answers, not only one kind of rejection.
      for (const status of [200, 400, 401, 404, 405]) expect(tally.statuses.get(status) ?? 0).toBeGreaterThan(0);
      await expectStillWorks(testApp, security);
    }, 120_000);

    it('answers hostile XSPF, JSPF and M3U8 imports below 500, every refusal in the error body', async () => {
      const tally = newTally();
      for (const [contentType, body] of HOSTILE_FILES) {
        for (const query of ['', '?unmatched=fail', '?name=n']) {
          const request: FuzzRequest = {
            method: 'POST',
            url: `/v3/playlist/import${query}`,
            headers: { security, 'content-type': contentType },
            body,
            remoteAddress: '127.0.0.1',
          };
          checkResponse(request, await testApp.app.inject(injectOptions(request)), tally);
        }
      }
      const files = fc
        .tuple(importFileArb, fc.constantFrom('', '?unmatched=fail', '?name=Fuzzed', '?unmatched=x', '?name='))
        .map(([file, query]): FuzzRequest => ({
          method: 'POST',
          url: `/v3/playlist/import${query}`,
          headers: { security, 'content-type': file.contentType },
          body: file.body,
          remoteAddress: '127.0.0.1',
        }));
      const random = await fuzz(testApp, files, RUNS);
      const statuses = [...random.statuses.entries()].sort(([a], [b]) => a - b);
      console.info(
        `fuzz ${dialect}: ${RUNS} playlist files; statuses ${statuses.map(([s, n]) => `${s}x${n}`).join(' ')}`,
      );
      for (const status of [200, 400]) expect(random.statuses.get(status) ?? 0).toBeGreaterThan(0);
      expect(tally.statuses.get(400) ?? 0).toBeGreaterThan(0);
      await expectStillWorks(testApp, security);
    }, 120_000);
  });

  describe('with the default failed-attempt throttle', () => {
    const testApp = useTestApp(dialect);
    const user = { name: `throttled_${dialect}`, password: 'correct horse' };
    let security: string;

    beforeAll(async () => {
      security = await testApp.addUser(user.name, user.password);
    });

    it('answers bad credentials with 401, then 429 with Retry-After, never 500', async () => {
      const bad = badCredentialValue(user.name, user.password);
      const credentials = fc.oneof(
        bad.map((value): Headers => ({ security: value })),
        bad.map((value): Headers => ({ authorization: value })),
        fc
          .constantFrom(`Basic ${b64(`${user.name}:wrong`)}`, `Basic ${b64('nobody:wrong')}`)
          .map((value): Headers => ({ security: value })),
      );
      const addresses = fc.constantFrom('127.0.0.1', '10.0.0.1', '10.0.0.2');
      // No credential here is valid: no playlist or song endpoint may answer with success.
      const tally = await fuzz(testApp, requestArb(credentials, addresses), THROTTLED_RUNS, (request, response) => {
        if (/^\/v3\/(playlists?|song)\b/.test(request.url)) {
          expect(response.statusCode, `${request.method} ${request.url}`).toBeGreaterThanOrEqual(400);
        }
      });

      // Deterministically: ten wrong passwords for one name from one address, then 429 for that name from that
      // address, even with the right password; the name from elsewhere and the address with another name go on.
      const { app } = testApp;
      const victim = 'victim';
      await testApp.addUser(victim, 'right');
      const probe: FuzzRequest = {
        method: 'GET',
        url: '/v3/playlist',
        headers: {},
        body: undefined,
        remoteAddress: '',
      };
      const attempt = (name: string, password: string, remoteAddress: string) =>
        app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: basic(name, password) }, remoteAddress });
      for (let i = 0; i < 10; i++) {
        const response = await attempt(victim, `wrong ${i}`, '192.0.2.10');
        expect(response.statusCode, response.body).toBe(401);
        checkResponse(probe, response, tally);
      }
      const refused = await attempt(victim, 'right', '192.0.2.10');
      expect(refused.statusCode, refused.body).toBe(429);
      checkResponse(probe, refused, tally);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(300);
      for (const [name, password, address, status] of [
        [victim, 'right', '192.0.2.99', 200], // the owner, from their own address
        ['someone-else', 'x', '192.0.2.10', 401], // the address, with another name
      ] as const) {
        const response = await attempt(name, password, address);
        expect(response.statusCode, response.body).toBe(status);
        checkResponse(probe, response, tally);
      }
      // Another user from another address is not affected.
      const fine = await app.inject({
        method: 'GET',
        url: '/v3/playlist',
        headers: { security },
        remoteAddress: '192.0.2.200',
      });
      expect(fine.statusCode, fine.body).toBe(200);
    }, 60_000);
  });
});
