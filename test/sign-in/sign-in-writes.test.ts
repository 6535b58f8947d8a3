import { describe, expect, it } from 'vitest';
import { basic, createTestApp, type TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';

/**
 * What a refused request costs: with the rate limit on, every request of an address is counted before anything
 * else, signed in or not; and a sign-in refused because a budget is already spent is decided by a read, with no
 * write to the budgets. Each request comes from an address of its own choosing (`remoteAddress`).
 */

const budgetWrites = (t: TestApp, from: number): number =>
  t.queries.slice(from).filter((query) => /^(insert into|update) "sign_in_budgets"/i.test(query.sql)).length;

const get = (t: TestApp, from: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'GET', url: '/v3/playlist', headers, remoteAddress: from });

for (const dialect of DIALECTS) {
  describe(`refused requests (${dialect})`, () => {
    it('with MIXTAPE_RATE_LIMIT=10, refuses the 11th request of an address, whatever its credential', async () => {
      const t = await createTestApp(dialect, { MIXTAPE_RATE_LIMIT: '10' });
      try {
        const wrong: number[] = [];
        let counted = 0;
        for (let i = 0; i < 15; i++) {
          if (i === 10) counted = t.queries.length;
          wrong.push((await get(t, '10.1.0.1', { security: basic(`nobody${i}`, 'wrong') })).statusCode);
        }
        expect(wrong).toEqual([...Array<number>(10).fill(401), ...Array<number>(5).fill(429)]);
        // Refused before the credential was looked at: no budget counted.
        expect(budgetWrites(t, counted)).toBe(0);

        const none: number[] = [];
        for (let i = 0; i < 12; i++) none.push((await get(t, '10.1.0.2')).statusCode);
        expect(none).toEqual([...Array<number>(10).fill(401), 429, 429]);

        const security = await t.addUser('ada', 'right horse');
        const signedIn: number[] = [];
        for (let i = 0; i < 12; i++) signedIn.push((await get(t, '10.1.0.3', { security })).statusCode);
        expect(signedIn).toEqual([...Array<number>(10).fill(200), 429, 429]);
      } finally {
        await t.close();
      }
    });

    it('decides a sign-in refused for a spent budget by a read: no budget write', async () => {
      const t = await createTestApp(dialect, { MIXTAPE_AUTH_MAX_FAILURES_PER_ADDRESS: '20' });
      try {
        // Names no user can have are never hashed: the cheapest flood there is.
        const flood: number[] = [];
        let over = 0;
        for (let i = 0; i < 60; i++) {
          if (i === 20) over = t.queries.length;
          flood.push((await get(t, '10.2.0.1', { security: basic(`bad name ${i}`, 'x') })).statusCode);
        }
        expect(flood).toEqual([...Array<number>(20).fill(401), ...Array<number>(40).fill(429)]);
        expect(budgetWrites(t, over)).toBe(0);

        await t.addUser('bea', 'right horse');
        for (let i = 0; i < 10; i++) {
          expect((await get(t, '10.2.0.2', { security: basic('bea', `guess ${i}`) })).statusCode).toBe(401);
        }
        over = t.queries.length;
        for (let i = 0; i < 5; i++) {
          expect((await get(t, '10.2.0.2', { security: basic('bea', `guess ${i}`) })).statusCode).toBe(429);
        }
        expect(budgetWrites(t, over)).toBe(0);
      } finally {
        await t.close();
      }
    });
  });
}
