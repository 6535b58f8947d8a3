import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/service.js';
import { basic } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js';
import { privateHaproxy, type PrivateHaproxy } from './helpers/private-haproxy.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { send, sleep } from '../helpers/traffic.js';

/**
 * Two instances on one PostgreSQL behind HAProxy, run with the configuration the repository ships
 * (deploy/haproxy/haproxy.cfg) and the settings docs/operations.md gives for it: the throttle sees each client's own address,
 * exported files link to the scheme and host the client used, the proxy's health checks follow /readyz, and a
 * rolling restart of both instances under load fails no request and loses no acknowledged write.
 */

const OWNER = basic('gina', 'right horse');
const INSTANCE_ENV = {
  MIXTAPE_TRUST_PROXY: '1',
  // Above what the proxy needs to notice (2 checks at 250 ms here; 2 at 1 s with the shipped default).
  MIXTAPE_DRAIN_DELAY_SECONDS: '2',
};

describe('two instances behind HAProxy (deploy/haproxy/haproxy.cfg)', () => {
  let database: TestDatabase;
  const ports = { a: 0, b: 0 };
  const instances: Record<'a' | 'b', ServerProcess | undefined> = { a: undefined, b: undefined };
  let proxy: PrivateHaproxy | undefined;

  const startInstance = async (name: 'a' | 'b') => {
    instances[name] = await startServer({
      databaseUrl: database.url,
      bootstrapUser: 'gina:right horse',
      env: { ...INSTANCE_ENV, PORT: String(ports[name]) },
    });
  };
  const theProxy = (): PrivateHaproxy => {
    if (proxy === undefined) throw new Error('the proxy did not start');
    return proxy;
  };

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    ports.a = await freePort();
    ports.b = await freePort();
    await startInstance('a');
    await startInstance('b');
    proxy = await privateHaproxy({
      servers: { a: `127.0.0.1:${ports.a}`, b: `127.0.0.1:${ports.b}` },
      checkInterval: '250ms',
    });
    await proxy.waitFor({ a: 'UP', b: 'UP' });
  }, 90_000);

  afterAll(async () => {
    await proxy?.stop();
    await killAllServers();
    await database.drop();
  });

  it('the throttle counts wrong passwords by the client’s address, not the proxy’s', async () => {
    const url = `${theProxy().httpUrl}/v3/playlist?limit=1`;
    const guesses: number[] = [];
    for (let i = 0; i < 11; i++) {
      guesses.push((await send(url, { from: '127.0.0.2', headers: { security: basic('gina', `guess ${i}`) } })).status);
    }
    expect(guesses).toEqual([...Array<number>(10).fill(401), 429]);
    // A client cannot pose as another address: what it writes in X-Forwarded-For is left of the proxy's entry.
    const posing = await send(url, {
      from: '127.0.0.2',
      headers: { security: OWNER, 'x-forwarded-for': '127.0.0.77' },
    });
    expect(posing.status).toBe(429);
    // The owner, from her own address, is not locked out by the guesses from 127.0.0.2.
    expect((await send(url, { from: '127.0.0.3', headers: { security: OWNER } })).status).toBe(200);
  });

  it('exported files link to the scheme and host the client used', async () => {
    const created = await send(`${theProxy().httpUrl}/v3/playlist`, {
      method: 'POST',
      headers: { security: OWNER },
      body: { name: 'Through the proxy', songIds: [1, 2] },
    });
    expect(created.status, created.body).toBe(200);
    const { id } = JSON.parse(created.body) as { id: number };
    const xspf = { security: OWNER, accept: 'application/xspf+xml' };

    const secure = await send(`${theProxy().httpsUrl}/v3/playlist/${id}`, {
      headers: { ...xspf, host: 'music.example.test', 'x-forwarded-host': 'evil.example.test' },
    });
    expect(secure.status, secure.body).toBe(200);
    expect(secure.body).toContain(`https://music.example.test/v3/playlist/${id}`);
    expect(secure.body).toContain('https://music.example.test/v3/song/1');
    expect(secure.body).not.toContain('evil.example.test');

    const plain = await send(`${theProxy().httpUrl}/v3/playlist/${id}`, {
      headers: { ...xspf, host: 'music.example.test:8080', 'x-forwarded-proto': 'https' },
    });
    expect(plain.status, plain.body).toBe(200);
    expect(plain.body).toContain(`http://music.example.test:8080/v3/playlist/${id}`);
    expect(plain.body).not.toContain('https://');
  });

  it('the proxy takes a stopping instance out of the pool through /readyz before it stops serving', async () => {
    const a = instances.a;
    if (a === undefined) throw new Error('instance a did not start');
    a.process.kill('SIGTERM');
    await a.waitForLog((line) => /^leaving the pool/.test(String(line.msg)), 5000);
    // Within the 2 s drain: the proxy has seen /readyz answer 503 while the instance still runs.
    await theProxy().waitFor({ a: 'DOWN', b: 'UP' }, 1800);
    expect(a.logLines().some((line) => line.msg === 'draining in-flight requests')).toBe(false);
    expect((await a.exited).code, a.output()).toBe(0);
    await startInstance('a');
    await theProxy().waitFor({ a: 'UP', b: 'UP' });
  }, 60_000);

  it('a rolling restart of both instances under load fails no request and keeps every acknowledged create', async () => {
    const url = theProxy().httpUrl;
    const seed = await send(`${url}/v3/playlist`, {
      method: 'POST',
      headers: { security: OWNER },
      body: { name: 'Seed', songIds: [3, 4, 5] },
    });
    expect(seed.status, seed.body).toBe(200);
    const seedId = (JSON.parse(seed.body) as { id: number }).id;

    const counts = { get: 0, list: 0, create: 0 };
    const failures: string[] = [];
    const created: { id: number; name: string }[] = [];
    let running = true;
    const deadline = Date.now() + 60_000;
    const worker = async (n: number) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let i = 0; running && Date.now() < deadline; i++) {
          const kind = (['get', 'list', 'create'] as const)[(n + i) % 3] ?? 'get';
          const name = `Rolling ${n}.${i}`;
          try {
            const answer =
              kind === 'get'
                ? await send(`${url}/v3/playlist/${seedId}`, { headers: { security: OWNER }, agent })
                : kind === 'list'
                  ? await send(`${url}/v3/playlist?limit=5`, { headers: { security: OWNER }, agent })
                  : await send(`${url}/v3/playlist`, {
                      method: 'POST',
                      headers: { security: OWNER },
                      body: { name, songIds: [1, 2, 3] },
                      agent,
                    });
            counts[kind]++;
            if (answer.status !== 200) failures.push(`${kind} ${answer.status} ${answer.body.slice(0, 200)}`);
            else if (kind === 'create') created.push({ id: (JSON.parse(answer.body) as { id: number }).id, name });
          } catch (error) {
            counts[kind]++;
            failures.push(`${kind}: ${error instanceof Error ? error.message : String(error)}`);
          }
          await sleep(5);
        }
      } finally {
        agent.destroy();
      }
    };
    const load = Promise.all(Array.from({ length: 6 }, (_, n) => worker(n)));
    try {
      await sleep(500);
      for (const name of ['a', 'b'] as const) {
        const instance = instances[name];
        if (instance === undefined) throw new Error(`instance ${name} did not start`);
        instance.process.kill('SIGTERM');
        expect((await instance.exited).code, instance.output()).toBe(0);
        await startInstance(name);
        await theProxy().waitFor({ a: 'UP', b: 'UP' });
      }
      await sleep(500);
    } finally {
      running = false;
      await load;
    }

    const total = counts.get + counts.list + counts.create;
    console.info(`rolling restart through HAProxy: ${JSON.stringify(counts)}, ${failures.length} failed`);
    expect(failures).toEqual([]);
    expect(counts.create).toBeGreaterThan(10);
    expect(total).toBeGreaterThan(100);
    for (const { id, name } of created) {
      const read = await send(`${url}/v3/playlist/${id}`, { headers: { security: OWNER } });
      expect(read.status, `create ${id} acknowledged, then ${read.status}`).toBe(200);
      expect((JSON.parse(read.body) as { name: string }).name).toBe(name);
    }
  }, 120_000);
});
