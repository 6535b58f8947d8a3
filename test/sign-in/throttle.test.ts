import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { basic, createTestApp } from '../helpers/app.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { getFrom, isErrorBody, type Reply } from '../helpers/traffic.js';

/**
 * The sign-in throttle against the real service, with clients on distinct loopback addresses: a guesser spends
 * its own budget and never the owner's, concurrent guesses are counted before they are hashed, hashing is bounded,
 * and a client cannot escape its budget by writing X-Forwarded-For.
 */

const count = (replies: readonly Reply[], status: number) => replies.filter((r) => r.status === status).length;

describe('the sign-in throttle', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let list: string;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    server = await startServer({ databaseUrl: database.url, bootstrapUser: 'bob:right horse' });
    list = `${server.url}/v3/playlist`;
  });
  afterAll(async () => {
    await killAllServers();
    await database.drop();
  });

  it("spends the guesser's budget, not the owner's: bob still signs in from elsewhere", async () => {
    const wrong: Reply[] = [];
    for (let i = 0; i < 10; i++) {
      // An over-long password is never hashed, and still counted.
      const password = i % 2 === 0 ? `guess ${i}` : 'x'.repeat(1100);
      wrong.push(await getFrom(list, '127.0.0.2', { security: basic('bob', password) }));
    }
    expect(wrong.map((r) => r.status)).toEqual(Array<number>(10).fill(401));
    const locked = await getFrom(list, '127.0.0.2', { security: basic('bob', 'right horse') });
    expect(locked.status).toBe(429);
    expect(Number(locked.retryAfter)).toBeGreaterThan(0);
    expect(isErrorBody(locked.body)).toBe(true);

    const owner = await getFrom(list, '127.0.0.3', { security: basic('bob', 'right horse') });
    expect(owner.status, owner.body).toBe(200);
  });

  it('counts concurrent guesses before hashing them, and a sign-in from elsewhere is not kept waiting', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    try {
      const guesses = Array.from({ length: 300 }, (_v, i) =>
        getFrom(list, '127.0.0.4', { security: basic('bob', `concurrent ${i}`) }, agent),
      );
      const owner = getFrom(list, '127.0.0.5', { security: basic('bob', 'right horse') });
      const replies = await Promise.all(guesses);
      // At most the address-and-name budget (10) reach a hash; every other guess is refused at once.
      expect(count(replies, 401)).toBeLessThanOrEqual(10);
      expect(count(replies, 401) + count(replies, 429)).toBe(300);
      const signedIn = await owner;
      expect(signedIn.status).toBe(200);
      // Generous: ten hashes at two at a time take well under a second; before the throttle counted first, 300 did.
      expect(signedIn.ms).toBeLessThan(5000);
    } finally {
      agent.destroy();
    }
  });

  it('keeps a burst of different names from one address from filling the queue everyone else waits in', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    try {
      const guesses = Array.from({ length: 300 }, (_v, i) =>
        getFrom(list, '127.0.0.7', { security: basic(`name${i}`, 'guess') }, agent),
      );
      const owner = getFrom(list, '127.0.0.8', { security: basic('bob', 'right horse') });
      const replies = await Promise.all(guesses);
      // A few at a time from one address reach a hash; the rest are refused with 429, none with 503.
      expect(count(replies, 503)).toBe(0);
      expect(count(replies, 401) + count(replies, 429)).toBe(300);
      // Those refused for being too many at once are told so, not that their password failed.
      const busy = replies.filter((reply) => /being checked at once/.test(reply.body));
      expect(busy.length).toBeGreaterThan(0);
      for (const reply of busy) expect(reply.status).toBe(429);
      expect((await owner).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });
});

describe('a client that starts with many connections at once', () => {
  it('signs in on every one: the same credential at once is one attempt, checked once', async () => {
    const database = await createTestDatabase('sqlite');
    try {
      const server = await startServer({ databaseUrl: database.url, bootstrapUser: 'eve:many at once' });
      const agent = new Agent({ keepAlive: true, maxSockets: 40 });
      try {
        const replies = await Promise.all(
          Array.from({ length: 40 }, () =>
            getFrom(`${server.url}/v3/playlist`, '127.0.0.6', { security: basic('eve', 'many at once') }, agent),
          ),
        );
        expect(replies.map((r) => r.status)).toEqual(Array<number>(40).fill(200));
      } finally {
        agent.destroy();
        await server.stop();
      }
    } finally {
      await database.drop();
    }
  });
});

describe('hashing with bounded concurrency', () => {
  it('answers 503 with Retry-After when every hashing slot and the queue are taken', async () => {
    const t = await createTestApp('sqlite', { MIXTAPE_AUTH_HASH_CONCURRENCY: '1', MIXTAPE_AUTH_HASH_QUEUE: '1' });
    try {
      await t.addUser('dora', 'right');
      const replies = await Promise.all(
        Array.from({ length: 6 }, (_v, i) =>
          t.app.inject({
            method: 'GET',
            url: '/v3/playlist',
            headers: { security: basic(`guest${i}`, 'wrong') },
            remoteAddress: `10.0.0.${i + 1}`,
          }),
        ),
      );
      const statuses = replies.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(2);
      for (const reply of replies.filter((r) => r.statusCode === 503)) {
        expect(reply.headers['retry-after']).toBe('1');
        expect(isErrorBody(reply.body)).toBe(true);
      }
    } finally {
      await t.close();
    }
  });
});

describe('trusted proxies', () => {
  it('refuses MIXTAPE_TRUST_PROXY=true, and takes a hop count or addresses', () => {
    expect(() => loadConfig({ MIXTAPE_TRUST_PROXY: 'true' })).toThrow(ConfigError);
    expect(() => loadConfig({ MIXTAPE_TRUST_PROXY: '10.0.0.300' })).toThrow(/MIXTAPE_TRUST_PROXY/);
    expect(loadConfig({ MIXTAPE_TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ MIXTAPE_TRUST_PROXY: '10.0.0.5, 10.1.0.0/16, loopback' }).trustProxy).toEqual([
      '10.0.0.5',
      '10.1.0.0/16',
      'loopback',
    ]);
    expect(loadConfig({}).trustProxy).toBe(false);
  });

  it('with one trusted hop, a sprayed left-most X-Forwarded-For does not escape the address budget', async () => {
    const t = await createTestApp('sqlite', { MIXTAPE_TRUST_PROXY: '1', MIXTAPE_AUTH_MAX_FAILURES_PER_ADDRESS: '20' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        const reply = await t.app.inject({
          method: 'GET',
          url: '/v3/playlist',
          headers: {
            security: basic(`sprayed${i}`, 'wrong'),
            // The client writes the first address; the proxy appends the one it saw.
            'x-forwarded-for': `198.51.100.${i}, 203.0.113.9`,
          },
          remoteAddress: '10.0.0.1',
        });
        statuses.push(reply.statusCode);
      }
      expect(statuses.slice(0, 20)).toEqual(Array<number>(20).fill(401));
      expect(statuses.slice(20)).toEqual(Array<number>(10).fill(429));
      // The address is the one the proxy saw: another client behind the same proxy still has its own budget.
      const neighbour = await t.app.inject({
        method: 'GET',
        url: '/v3/playlist',
        headers: { security: basic('sprayed0', 'wrong'), 'x-forwarded-for': '203.0.113.10' },
        remoteAddress: '10.0.0.1',
      });
      expect(neighbour.statusCode).toBe(401);
    } finally {
      await t.close();
    }
  });
});

for (const dialect of DIALECTS) {
  describe(`IPv6 clients counted by their /64 (${dialect})`, () => {
    // Loopback cannot play several IPv6 clients, so a trusted proxy on loopback names them in X-Forwarded-For.
    const settings = { MIXTAPE_TRUST_PROXY: 'loopback', MIXTAPE_AUTH_MAX_FAILURES: '3' };
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
    });
    afterAll(async () => {
      await killAllServers();
      await database.drop();
    });

    const signIn = (url: string, client: string, password: string) =>
      getFrom(`${url}/v3/playlist`, '127.0.0.2', {
        security: basic('bob', password),
        'x-forwarded-for': client,
      });

    it('spends one budget for every address of a /64, and IPv4-mapped addresses as IPv4', async () => {
      const server = await startServer({ databaseUrl: database.url, bootstrapUser: 'bob:right horse', env: settings });
      try {
        for (const client of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3']) {
          expect((await signIn(server.url, client, `guess from ${client}`)).status, client).toBe(401);
        }
        const sameNetwork = await signIn(server.url, '2001:db8:1:2:abcd::9', 'one more guess');
        expect(sameNetwork.status, sameNetwork.body).toBe(429);
        expect(isErrorBody(sameNetwork.body)).toBe(true);
        expect((await signIn(server.url, '2001:db8:1:3::1', 'one more guess')).status).toBe(401);

        for (let i = 0; i < 3; i++)
          expect((await signIn(server.url, '::ffff:192.0.2.7', `guess ${i}`)).status).toBe(401);
        expect((await signIn(server.url, '192.0.2.7', 'one more guess')).status).toBe(429);
        expect((await signIn(server.url, '192.0.2.8', 'one more guess')).status).toBe(401);

        // bob signs in from another network meanwhile.
        expect((await signIn(server.url, '2001:db8:1:3::1', 'right horse')).status).toBe(200);
      } finally {
        await server.stop();
      }
    });

    it('with MIXTAPE_IPV6_PREFIX=128, counts each IPv6 address apart', async () => {
      const server = await startServer({
        databaseUrl: database.url,
        env: { ...settings, MIXTAPE_IPV6_PREFIX: '128' },
      });
      try {
        for (let i = 0; i < 3; i++)
          expect((await signIn(server.url, '2001:db8:5:6::1', `guess ${i}`)).status).toBe(401);
        expect((await signIn(server.url, '2001:db8:5:6::1', 'one more guess')).status).toBe(429);
        expect((await signIn(server.url, '2001:db8:5:6::2', 'one more guess')).status).toBe(401);
      } finally {
        await server.stop();
      }
    });
  });
}
