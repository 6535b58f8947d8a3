import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/service.js';
import { basic } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js';
import { privateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { killAllServers, startServer, type LogLine, type ServerProcess } from '../helpers/server-process.js';
import { eventually, getFrom, isErrorBody, sleep } from '../helpers/traffic.js';

/**
 * With REDIS_URL, instances count the general rate limit in one Redis: two instances allow what one does. While
 * Redis does not answer, every request is still served and each instance counts on its own, with one warning; once
 * Redis is back, they share again. Two processes on one SQLite file, a redis-server of the test's own; each phase
 * from a loopback address of its own, so that its counts start at zero.
 */

const LIMIT = 6;
const security = basic('kim', 'right horse');

const isWarning = (line: LogLine) => typeof line.msg === 'string' && line.msg.includes('does not answer');
const isRecovery = (line: LogLine) => typeof line.msg === 'string' && line.msg.includes('answers again');

describe('the rate limit shared through Redis by two instances', () => {
  let database: TestDatabase;
  let redis: PrivateRedis;
  let one: ServerProcess;
  let two: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    redis = await privateRedis();
    const env = { MIXTAPE_RATE_LIMIT: String(LIMIT), REDIS_URL: redis.url };
    one = await startServer({ databaseUrl: database.url, bootstrapUser: 'kim:right horse', env });
    two = await startServer({ databaseUrl: database.url, env });
  });
  afterAll(async () => {
    await killAllServers();
    await redis.stop();
    await database.drop();
  });

  const statusFrom = async (server: ServerProcess, from: string) =>
    (await getFrom(`${server.url}/v3/playlist`, from, { security })).status;

  /** LIMIT requests spread over both instances, then one more on each. */
  async function spread(from: string): Promise<{ allowed: number[]; beyond: number[] }> {
    const allowed: number[] = [];
    for (let i = 0; i < LIMIT; i++) allowed.push(await statusFrom(i % 2 === 0 ? one : two, from));
    const beyond = [await statusFrom(one, from), await statusFrom(two, from)];
    return { allowed, beyond };
  }

  it('says at start that the rate limit is shared through Redis', () => {
    for (const server of [one, two]) {
      const line = server.logLines().find((l) => l.rateLimit === LIMIT);
      expect(line?.shared, server.output()).toBe(true);
      expect(line?.msg).toContain(`shared through Redis at 127.0.0.1:${redis.port}`);
    }
  });

  it('allows the limit once over both instances, then 429 on either', async () => {
    const { allowed, beyond } = await spread('127.0.2.1');
    expect(allowed).toEqual(Array<number>(LIMIT).fill(200));
    expect(beyond).toEqual([429, 429]);
    const refused = await getFrom(`${one.url}/v3/playlist`, '127.0.2.1', { security });
    expect(isErrorBody(refused.body)).toBe(true);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
  });

  it('serves every request while Redis is down, limited per instance, with one warning; shares again once it is back', async () => {
    await redis.stop();
    for (const server of [one, two]) {
      const statuses: number[] = [];
      for (let i = 0; i < LIMIT + 3; i++) statuses.push(await statusFrom(server, '127.0.2.2'));
      // Each instance allows the limit on its own: the first request may still have gone to Redis and failed over.
      expect(statuses, server.url).toEqual([...Array<number>(LIMIT).fill(200), 429, 429, 429]);
      expect((await server.waitForLog(isWarning, 5000)).level).toBe(40);
    }

    await redis.start();
    for (const server of [one, two]) await server.waitForLog(isRecovery, 15_000);
    const { allowed, beyond } = await spread('127.0.2.3');
    expect(allowed).toEqual(Array<number>(LIMIT).fill(200));
    expect(beyond).toEqual([429, 429]);
    // One warning for the whole outage, however many requests and reconnection attempts it saw.
    for (const server of [one, two]) {
      expect(server.logLines().filter(isWarning), server.output()).toHaveLength(1);
      expect(server.logLines().filter(isRecovery)).toHaveLength(1);
    }
  });

  it('does not hold requests up for a Redis that keeps its connections open and answers nothing', async () => {
    redis.freeze();
    try {
      for (const server of [one, two]) {
        const replies = [];
        for (let i = 0; i < 4; i++) replies.push(await getFrom(`${server.url}/v3/playlist`, '127.0.2.4', { security }));
        expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200]);
        // The first waits for Redis for at most half a second; the others do not wait for it at all.
        expect(Math.max(...replies.map((reply) => reply.ms))).toBeLessThan(2000);
        const warned = await eventually(() => Promise.resolve(server.logLines().filter(isWarning).length === 2), 5000);
        expect(warned, server.output()).toBe(true);
      }
    } finally {
      redis.resume();
    }
    for (const server of [one, two]) {
      const back = await eventually(() => Promise.resolve(server.logLines().filter(isRecovery).length === 2), 15_000);
      expect(back, server.output()).toBe(true);
    }
    const { allowed, beyond } = await spread('127.0.2.5');
    expect(allowed).toEqual(Array<number>(LIMIT).fill(200));
    expect(beyond).toEqual([429, 429]);
  });
});

describe('the shared page throttle counted through Redis by two instances', () => {
  let database: TestDatabase;
  let redis: PrivateRedis;
  let one: ServerProcess;
  let two: ServerProcess;
  let page: string;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    redis = await privateRedis();
    // The general rate limit off: the page's own throttle alone uses Redis.
    const env = { MIXTAPE_SHARE_PER_MINUTE: String(LIMIT), REDIS_URL: redis.url };
    one = await startServer({ databaseUrl: database.url, bootstrapUser: 'kim:right horse', env });
    two = await startServer({ databaseUrl: database.url, env });
    const headers = { security, 'content-type': 'application/json' };
    const created = await fetch(`${one.url}/v3/playlist`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Throttled', songIds: [1, 2] }),
    });
    const { id } = (await created.json()) as { id: number };
    const link = await fetch(`${one.url}/v3/playlist/${id}/links`, { method: 'POST', headers, body: '{}' });
    page = new URL(((await link.json()) as { url: string }).url).pathname;
  });
  afterAll(async () => {
    await killAllServers();
    await redis.stop();
    await database.drop();
  });

  it('opens the page the limit of times over both instances from one address, then 429 on either', async () => {
    const from = '127.0.3.1';
    const statuses = [];
    for (let i = 0; i < LIMIT; i++)
      statuses.push((await getFrom(`${(i % 2 === 0 ? one : two).url}${page}`, from, {})).status);
    expect(statuses).toEqual(Array<number>(LIMIT).fill(200));
    const beyond = [await getFrom(`${one.url}${page}`, from, {}), await getFrom(`${two.url}${page}/image`, from, {})];
    expect(beyond.map((reply) => reply.status)).toEqual([429, 429]);
    expect(Number(beyond[0]!.retryAfter)).toBeGreaterThan(0);
    // Another address has its own count.
    expect((await getFrom(`${two.url}${page}`, '127.0.3.2', {})).status).toBe(200);
  });
});

describe('the rate limit of an instance on its own', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });
  afterAll(async () => {
    await killAllServers();
    await database.drop();
  });

  /** LIMIT requests, then one more: the statuses. */
  async function statuses(server: ServerProcess, from: string): Promise<number[]> {
    const answers: number[] = [];
    for (let i = 0; i <= LIMIT; i++)
      answers.push((await getFrom(`${server.url}/v3/playlist`, from, { security })).status);
    return answers;
  }

  it('counts per instance without REDIS_URL, and says so at start', async () => {
    const server = await startServer({
      databaseUrl: database.url,
      bootstrapUser: 'kim:right horse',
      env: { MIXTAPE_RATE_LIMIT: String(LIMIT) },
    });
    try {
      const line = server.logLines().find((l) => l.rateLimit === LIMIT);
      expect(line?.shared, server.output()).toBe(false);
      expect(line?.msg).toContain('counts per instance');
      expect(await statuses(server, '127.0.2.6')).toEqual([...Array<number>(LIMIT).fill(200), 429]);
    } finally {
      await server.stop();
    }
  });

  it('starts and serves with a REDIS_URL where nothing answers, counting per instance, with one warning', async () => {
    const nothing = `redis://127.0.0.1:${await freePort()}`;
    const server = await startServer({
      databaseUrl: database.url,
      env: { MIXTAPE_RATE_LIMIT: String(LIMIT), REDIS_URL: nothing },
    });
    try {
      expect(await statuses(server, '127.0.2.7')).toEqual([...Array<number>(LIMIT).fill(200), 429]);
      // ioredis keeps trying to connect, about once a second, meanwhile.
      await sleep(2500);
      expect(server.logLines().filter(isWarning), server.output()).toHaveLength(1);
    } finally {
      await server.stop();
    }
  });
});
