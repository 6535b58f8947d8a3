import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { userService } from '../../src/users/user.service.js';
import { basic } from '../helpers/app.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { getFrom, isErrorBody, type Reply } from '../helpers/traffic.js';

/**
 * The failed sign-in budgets are kept in the database, so that two instances on it (two processes here, on one
 * PostgreSQL database or one SQLite file) refuse after as many failures as one instance does, whichever of them the
 * attempts reach, and one at a time or at the same moment. Clients are distinct loopback addresses.
 */

const PER_NAME = 15;

for (const dialect of DIALECTS) {
  describe(`failed sign-in budgets shared by two instances on one ${dialect} database`, () => {
    let database: TestDatabase;
    let one: ServerProcess;
    let two: ServerProcess;
    // The per-name budget above the per-address-and-name one (10), so that each is reached on its own below.
    const env = { MIXTAPE_AUTH_MAX_FAILURES_PER_NAME: String(PER_NAME) };

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      one = await startServer({ databaseUrl: database.url, bootstrapUser: 'gina:right horse', env });
      const db = openDatabase(loadConfig({ DATABASE_URL: database.url }).database);
      try {
        for (const name of ['hugo', 'ida']) await userService(db).add(name, 'right horse');
      } finally {
        await db.close();
      }
      two = await startServer({ databaseUrl: database.url, env });
    });
    afterAll(async () => {
      await killAllServers();
      await database.drop();
    });

    const signIn = (server: ServerProcess, from: string, name: string, password: string): Promise<Reply> =>
      getFrom(`${server.url}/v3/playlist`, from, { security: basic(name, password) });

    it('refuses the 11th wrong password of one name from one address, whichever instance it reaches', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        statuses.push((await signIn(i % 2 === 0 ? one : two, '127.0.0.2', 'gina', `guess ${i}`)).status);
      }
      expect(statuses).toEqual(Array<number>(10).fill(401));
      for (const server of [one, two]) {
        const refused = await signIn(server, '127.0.0.2', 'gina', 'right horse');
        expect(refused.status, refused.body).toBe(429);
        expect(Number(refused.retryAfter)).toBeGreaterThan(0);
        expect(isErrorBody(refused.body)).toBe(true);
      }
      // The owner, from another address, signs in on either.
      expect((await signIn(one, '127.0.0.3', 'gina', 'right horse')).status).toBe(200);
      expect((await signIn(two, '127.0.0.3', 'gina', 'right horse')).status).toBe(200);
    });

    it('counts guesses made at the same moment on both instances once each', async () => {
      const statuses: number[] = [];
      for (let round = 0; round < 8; round++) {
        const replies = await Promise.all([
          signIn(one, '127.0.0.4', 'ida', `together ${round}`),
          signIn(two, '127.0.0.4', 'ida', `together ${round}`),
        ]);
        statuses.push(...replies.map((reply) => reply.status));
      }
      expect(statuses.filter((status) => status === 401).length, statuses.join(' ')).toBe(10);
      expect(statuses.filter((status) => status === 429).length, statuses.join(' ')).toBe(6);
    });

    it('spends the per-name budget over every address and instance; an address known for the name still signs in', async () => {
      // hugo signs in from his usual address on one instance: that address is then known for hugo on both.
      expect((await signIn(one, '127.0.0.9', 'hugo', 'right horse')).status).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < PER_NAME; i++) {
        const from = `127.0.1.${1 + Math.floor(i / 5)}`;
        statuses.push((await signIn(i % 2 === 0 ? one : two, from, 'hugo', `spread ${i}`)).status);
      }
      expect(statuses).toEqual(Array<number>(PER_NAME).fill(401));
      for (const server of [one, two]) {
        const refused = await signIn(server, '127.0.1.9', 'hugo', 'one more guess');
        expect(refused.status, refused.body).toBe(429);
      }
      // Another instance than the one he signed in on, and a credential it has not verified yet.
      const known = await signIn(two, '127.0.0.9', 'hugo', 'right horse');
      expect(known.status, known.body).toBe(200);
    });
  });
}
