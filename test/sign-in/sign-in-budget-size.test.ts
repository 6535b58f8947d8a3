import { describe, expect, it } from 'vitest';
import { basic, createTestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';

/**
 * The sign-in budget table stays within a bound that does not grow with the number of attempts: failed sign-ins
 * from ever new addresses (forwarded by a trusted proxy, as a botnet's or an IPv6 range's would be) are counted at
 * most MIXTAPE_AUTH_ATTEMPTS_PER_SECOND a second per instance, and ended windows are removed as fast as they come.
 */

const WINDOW_SECONDS = 2;
const PER_SECOND = 50;
const FLOOD_MS = 6000;
const BATCH = 50;

for (const dialect of DIALECTS) {
  describe(`the sign-in budget table under a flood from many addresses (${dialect})`, () => {
    it('holds at most three rows per attempt the instance admits over a window and a cleanup', async () => {
      const t = await createTestApp(dialect, {
        MIXTAPE_TRUST_PROXY: 'loopback',
        MIXTAPE_AUTH_FAILURE_WINDOW_SECONDS: String(WINDOW_SECONDS),
        MIXTAPE_AUTH_ATTEMPTS_PER_SECOND: String(PER_SECOND),
      });
      const rows = async () =>
        Number(
          (
            await t.db.kysely
              .selectFrom('sign_in_budgets')
              .select((eb) => eb.fn.countAll<number | string>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      try {
        const before = await rows();
        let attempts = 0;
        let most = 0;
        const statuses = new Map<number, number>();
        const until = Date.now() + FLOOD_MS;
        while (Date.now() < until && attempts < 200_000) {
          const replies = await Promise.all(
            Array.from({ length: BATCH }, () => {
              const n = attempts++;
              return t.app.inject({
                method: 'GET',
                url: '/v3/playlist',
                headers: {
                  security: basic(`bad name ${n}`, 'x'),
                  'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
                },
              });
            }),
          );
          for (const reply of replies) statuses.set(reply.statusCode, (statuses.get(reply.statusCode) ?? 0) + 1);
          most = Math.max(most, await rows());
        }
        // Three budgets per admitted attempt, over a window and the cleanup's second, with a burst's worth more.
        const bound = 3 * PER_SECOND * (WINDOW_SECONDS + 1 + 2);
        const summary = `${attempts} attempts in ${FLOOD_MS} ms (${JSON.stringify([...statuses])}), rows ${before} before, at most ${most}`;
        expect(most, summary).toBeLessThanOrEqual(bound);
        // Every attempt is answered: counted and refused (401), or not admitted (503), never left hanging.
        expect((statuses.get(401) ?? 0) + (statuses.get(503) ?? 0), summary).toBe(attempts);
        expect(statuses.get(401) ?? 0, summary).toBeGreaterThan(0);
      } finally {
        await t.close();
      }
    });
  });
}
