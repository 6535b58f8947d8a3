import { describe, expect, it } from 'vitest';
import { basic, createTestApp, type TestApp } from './helpers/app.js';
import { DIALECTS } from './helpers/databases.js';

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
  });
}
