import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers/app.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { getFrom, sleep, type Reply } from '../helpers/traffic.js';

/**
 * An address a user keeps working from stays known for her name on every instance, however long she works from
 * cached answers, so guesses at her name from elsewhere never lock her out of it: not on an instance that has never
 * seen her, nor after a restart. Three instances (processes) on one database; clients are loopback addresses.
 */

const WINDOW_SECONDS = 4;
const PER_NAME = 5;

for (const dialect of DIALECTS) {
  describe(`an address in use stays known for its name, on every instance (${dialect})`, () => {
    // The known mark lasts one window here, so that only its renewal keeps it past the first.
    const env = {
      MIXTAPE_AUTH_FAILURE_WINDOW_SECONDS: String(WINDOW_SECONDS),
      MIXTAPE_AUTH_KNOWN_ADDRESS_SECONDS: String(WINDOW_SECONDS),
      MIXTAPE_AUTH_MAX_FAILURES_PER_NAME: String(PER_NAME),
    };
    let database: TestDatabase;
    let servers: ServerProcess[];

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const first = await startServer({ databaseUrl: database.url, bootstrapUser: 'alice:right horse', env });
      servers = [first, ...(await Promise.all([1, 2].map(() => startServer({ databaseUrl: database.url, env }))))];
    });
    afterAll(async () => {
      await killAllServers();
      await database.drop();
    });

    const signIn = (server: ServerProcess, from: string, password: string): Promise<Reply> =>
      getFrom(`${server.url}/v3/playlist`, from, { security: basic('alice', password) });

    it('while guesses at her name from ten addresses keep its per-name budget spent', async () => {
      const [a, b, c] = servers as [ServerProcess, ServerProcess, ServerProcess];
      expect((await signIn(b, '127.0.0.2', 'right horse')).status).toBe(200);
      const work: number[] = [];
      const guesses: number[] = [];
      const until = Date.now() + 2.5 * WINDOW_SECONDS * 1000;
      for (let i = 0; Date.now() < until && i < 200; i++) {
        work.push((await signIn(a, '127.0.0.2', 'right horse')).status);
        // A burst of nine guesses, over every instance and from ten addresses in turn, past the name's budget of five
        // a window whatever one guess takes: a slow machine makes fewer bursts, not bursts the budget holds.
        const burst = servers.flatMap((server, s) =>
          [0, 1, 2].map((k) => signIn(server, `127.0.1.${1 + ((i * 9 + s * 3 + k) % 10)}`, `guess ${i} ${s} ${k}`)),
        );
        guesses.push(...(await Promise.all(burst)).map((reply) => reply.status));
        await sleep(150);
      }
      expect(work.every((status) => status === 200)).toBe(true);
      expect(guesses.filter((status) => status === 429).length).toBeGreaterThan(guesses.length / 2);
      // The attack is in effect: from an address she has never used, the right password is refused.
      expect((await signIn(c, '127.0.0.3', 'right horse')).status).toBe(429);

      // C has never verified her credential: a full sign-in, from her usual address.
      const fresh = await signIn(c, '127.0.0.2', 'right horse');
      expect(fresh.status, `${fresh.body} (Retry-After ${fresh.retryAfter})`).toBe(200);

      // A restarts with an empty cache, and she signs in on it.
      await a.stop();
      const restarted = await startServer({ databaseUrl: database.url, env });
      const again = await signIn(restarted, '127.0.0.2', 'right horse');
      expect(again.status, again.body).toBe(200);
    }, 120_000);

    it("lets her sign in from her address while others' guesses fill the hash queue", async () => {
      const settings = { ...env, MIXTAPE_AUTH_HASH_CONCURRENCY: '1', MIXTAPE_AUTH_HASH_QUEUE: '4' };
      const agent = new Agent({ keepAlive: true, maxSockets: 200 });
      const served: number[] = [];
      try {
        for (let round = 0; round < 3; round++) {
          // A fresh instance each round, so that her credential is checked anew; known from her sign-in on B.
          const crowded = await startServer({ databaseUrl: database.url, env: settings });
          expect((await signIn(servers[1] as ServerProcess, '127.0.0.2', 'right horse')).status).toBe(200);
          const flood = Array.from({ length: 80 }, (_v, i) =>
            getFrom(
              `${crowded.url}/v3/playlist`,
              `127.0.2.${1 + (i % 10)}`,
              { security: basic(`mallory${round}_${i}`, 'guess') },
              agent,
            ),
          );
          await sleep(20);
          served.push((await signIn(crowded, '127.0.0.2', 'right horse')).status);
          const replies = await Promise.all(flood);
          // The guesses did overflow the queue.
          expect(replies.filter((reply) => reply.status !== 401).length).toBeGreaterThan(0);
          await crowded.stop();
        }
        expect(served).toEqual([200, 200, 200]);
      } finally {
        agent.destroy();
      }
      // Three instances started and stopped under a flood: a bound for a loaded machine, not a measure.
    }, 120_000);
  });
}
