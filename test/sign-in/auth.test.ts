import { expect, it } from 'vitest';
import { userService } from '../../src/users/user.service.js';
import { basic, createTestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { expectError } from '../helpers/requests.js';

const CHALLENGE = 'Basic realm="mixtape", charset="UTF-8"';

describeEachDatabase(
  'authentication on %s',
  {
    MIXTAPE_AUTH_RECHECK_SECONDS: '0',
    MIXTAPE_AUTH_MAX_FAILURES: '1000',
    MIXTAPE_AUTH_MAX_FAILURES_PER_ADDRESS: '1000',
    MIXTAPE_AUTH_MAX_FAILURES_PER_NAME: '1000',
  },
  (t, dialect) => {
    it('accepts the credential in security (with or without "Basic") and in Authorization', async () => {
      await userService(t.db).add('carol', 'pässwörd:with colon');
      const value = basic('carol', 'pässwörd:with colon');
      const headerSets = [
        { security: value },
        { security: value.slice('Basic '.length) },
        { security: `basic   ${value.slice('Basic '.length)}` },
        { authorization: value },
      ];
      for (const headers of headerSets) {
        const response = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers });
        expect(response.statusCode, JSON.stringify(headers)).toBe(200);
      }
    });

    it('prefers security over Authorization', async () => {
      const good = await t.addUser();
      const response = await t.app.inject({
        method: 'GET',
        url: '/v3/playlist',
        headers: { security: basic('nobody', 'nothing'), authorization: good },
      });
      expectError(response, 401);
    });

    it('answers 401 with WWW-Authenticate on every endpoint for a missing, malformed or wrong credential', async () => {
      await t.addUser('dave', 'right');
      const bad: Record<string, string>[] = [
        {},
        { security: '' },
        { security: 'Basic' },
        { security: 'Basic !!!not-base64!!!' },
        { security: Buffer.from('no-colon').toString('base64') },
        { security: basic('dave', 'wrong') },
        { security: basic('nobody', 'right') },
        { authorization: basic('dave', 'wrong') },
        { security: `Basic ${Buffer.from([0x64, 0x3a, 0xff, 0xfe]).toString('base64')}` },
      ];
      const endpoints = [
        ['GET', '/v3/playlist'],
        ['POST', '/v3/playlist'],
        ['GET', '/v3/playlist/1'],
        ['DELETE', '/v3/playlists/1'],
        ['GET', '/v3/song'],
        ['GET', '/v3/song/1'],
      ] as const;
      for (const headers of bad) {
        for (const [method, url] of endpoints) {
          const response = await t.app.inject({ method, url, headers, payload: method === 'POST' ? {} : undefined });
          expectError(response, 401);
          expect(response.headers['www-authenticate']).toBe(CHALLENGE);
        }
      }
      // A Bearer credential is an app token (1.11.0): refused with its own challenge (test/tokens/).
      for (const headers of [{ authorization: 'Bearer abc' }, { security: 'Bearer abc' }]) {
        const response = await t.app.inject({ method: 'GET', url: '/v3/playlist', headers });
        expectError(response, 401);
        expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      }
    });

    it('gives the same message for an unknown user and a wrong password', async () => {
      await t.addUser('erin', 'right');
      const unknown = expectError(
        await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: basic('nobody-at-all', 'x') } }),
        401,
      );
      const wrong = expectError(
        await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: basic('erin', 'x') } }),
        401,
      );
      expect(unknown.errormsg).toBe(wrong.errormsg);
    });

    it('signs in with a name in either Unicode form as the one user, and refuses invisible characters', async () => {
      const [nfc, nfd] = ['ren\u00e9e', 'rene\u0301e'];
      const users = userService(t.db);
      expect(await users.add(nfd, 'right')).toBe(true);
      expect(await users.add(nfc, 'other')).toBe(false);
      expect((await users.list()).map((user) => user.name)).toContain(nfc);
      expect((await users.list()).map((user) => user.name)).not.toContain(nfd);

      const created = await t.app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security: basic(nfd, 'right') },
        payload: { name: 'Either form', songIds: [1] },
      });
      expect(created.statusCode, created.body).toBe(200);
      const listed = await t.app.inject({ url: '/v3/playlist', headers: { security: basic(nfc, 'right') } });
      expect(listed.statusCode, listed.body).toBe(200);
      expect(listed.json<{ name: string }[]>().map((p) => p.name)).toEqual(['Either form']);
      expectError(await t.app.inject({ url: '/v3/playlist', headers: { security: basic(nfd, 'other') } }), 401);

      for (const name of ['ren\u00e9e\u200b', '\u202erenée', 'ren\u2066\u00e9e']) {
        const answer = await t.app.inject({ url: '/v3/playlist', headers: { security: basic(name, 'right') } });
        expect(expectError(answer, 401).errormsg, JSON.stringify(name)).toMatch(
          /^A user name may not contain control or format characters .*: it has U\+(200B|202E|2066) at character \d+\.$/,
        );
        expect(answer.headers['www-authenticate']).toBe(CHALLENGE);
        await expect(users.add(name, 'right')).rejects.toThrow(/control or format characters/);
        await expect(users.setPassword(name, 'right')).rejects.toThrow(/control or format characters/);
        await expect(users.remove(name)).rejects.toThrow(/control or format characters/);
      }
      expect(await users.setPassword(nfd, 'changed')).toBe(true);
      expect(await users.remove(nfd)).toBe(true);
      expect((await users.list()).map((user) => user.name)).not.toContain(nfc);
    });

    it('refuses over-long user names and passwords with 401', async () => {
      for (const headers of [{ security: basic('u'.repeat(65), 'x') }, { security: basic('erin', 'p'.repeat(1025)) }]) {
        expectError(await t.app.inject({ method: 'GET', url: '/v3/playlist', headers }), 401);
      }
    });

    it('takes a password change and a removal into account (recheck interval 0 here)', async () => {
      const old = await t.addUser('frank', 'first');
      expect((await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: old } })).statusCode).toBe(
        200,
      );
      await userService(t.db).setPassword('frank', 'second');
      expectError(await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: old } }), 401);
      const fresh = basic('frank', 'second');
      expect(
        (await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: fresh } })).statusCode,
      ).toBe(200);
      await userService(t.db).remove('frank');
      expectError(await t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: fresh } }), 401);
    });

    it('throttles failed attempts per user name with 429 and Retry-After, and lets a cached credential through', async () => {
      const throttled = await createTestApp(dialect, {
        MIXTAPE_AUTH_MAX_FAILURES: '3',
        MIXTAPE_AUTH_MAX_FAILURES_PER_ADDRESS: '4',
      });
      try {
        const good = await throttled.addUser('grace', 'right');
        expect(
          (await throttled.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: good } })).statusCode,
        ).toBe(200);
        const wrong = { security: basic('grace', 'wrong') };
        for (let i = 0; i < 3; i++)
          expectError(await throttled.app.inject({ method: 'GET', url: '/v3/playlist', headers: wrong }), 401);
        const refused = await throttled.app.inject({ method: 'GET', url: '/v3/playlist', headers: wrong });
        expectError(refused, 429);
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        // The owner, already verified, is not locked out by someone guessing their password.
        expect(
          (await throttled.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: good } })).statusCode,
        ).toBe(200);
        // The client address has a budget of its own, whatever names it tries.
        const henry = { security: basic('henry', 'x') };
        expectError(await throttled.app.inject({ method: 'GET', url: '/v3/playlist', headers: henry }), 401);
        expectError(await throttled.app.inject({ method: 'GET', url: '/v3/playlist', headers: henry }), 429);
      } finally {
        await throttled.close();
      }
    });

    it('rate-limits all requests when configured, with the error body', async () => {
      const limited = await createTestApp(dialect, { MIXTAPE_RATE_LIMIT: '2' });
      try {
        const security = await limited.addUser();
        for (let i = 0; i < 2; i++) {
          expect(
            (await limited.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } })).statusCode,
          ).toBe(200);
        }
        const refused = await limited.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
        expectError(refused, 429);
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        // Probes and metrics are never limited: a liveness probe must not be throttled into a restart.
        for (let i = 0; i < 5; i++) {
          for (const url of ['/healthz', '/readyz', '/metrics']) {
            expect((await limited.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
          }
        }
      } finally {
        await limited.close();
      }
    });

    it('sends X-Content-Type-Options: nosniff on answers and errors', async () => {
      const security = await t.addUser();
      const answers = await Promise.all([
        t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } }),
        t.app.inject({ method: 'GET', url: '/v3/playlist' }),
        t.app.inject({ method: 'GET', url: '/v3/playlist/999999', headers: { security } }),
        t.app.inject({ method: 'GET', url: '/no/such/path' }),
        t.app.inject({ method: 'GET', url: '/healthz' }),
      ]);
      expect(answers.map((a) => a.statusCode)).toEqual([200, 401, 404, 404, 200]);
      for (const answer of answers) expect(answer.headers['x-content-type-options']).toBe('nosniff');
    });

    it('sends no CORS headers by default, and allows the security header in preflight when origins are set', async () => {
      const plain = await t.app.inject({
        method: 'OPTIONS',
        url: '/v3/playlist',
        headers: { origin: 'https://app.example' },
      });
      expect(plain.headers['access-control-allow-origin']).toBeUndefined();
      const cors = await createTestApp(dialect, { MIXTAPE_CORS_ORIGINS: 'https://app.example' });
      try {
        const preflight = await cors.app.inject({
          method: 'OPTIONS',
          url: '/v3/playlist',
          headers: {
            origin: 'https://app.example',
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'security, content-type',
          },
        });
        expect(preflight.statusCode).toBe(204);
        expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example');
        expect(String(preflight.headers['access-control-allow-headers'])).toContain('security');
      } finally {
        await cors.close();
      }
    });
  },
);
