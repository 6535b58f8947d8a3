import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type ThrottlePolicy } from '../../src/config.js';
import { SignInThrottle, type Attempt } from '../../src/credentials/throttle.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { eventually } from '../helpers/traffic.js';

/**
 * The sign-in throttle's budgets as the database keeps them, on each dialect, with a clock of the test's own: two
 * throttles stand for two instances, each with a connection of its own to one database.
 */

const POLICY: ThrottlePolicy = {
  perAddressAndName: 2,
  perAddress: 3,
  perName: 4,
  windowMs: 60_000,
  knownMs: 60_000,
  attemptsPerSecond: 1000,
  ipv6PrefixBits: 64,
};

type Outcome = Attempt | { readonly retryAfterSeconds: number };
const counted = (outcome: Outcome): outcome is Attempt => 'keys' in outcome;

for (const dialect of DIALECTS) {
  describe(`sign-in budgets in the ${dialect} database`, () => {
    let database: TestDatabase;
    let one: Db;
    let two: Db;
    let clock = 1_000_000_000;
    const now = () => clock;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const config = loadConfig({ DATABASE_URL: database.url }).database;
      one = openDatabase(config);
      await migrateToLatest(one);
      two = openDatabase(config);
    });
    afterAll(async () => {
      await one.close();
      await two.close();
      await database.drop();
    });

    const rows = () => one.kysely.selectFrom('sign_in_budgets').selectAll().execute();

    /** Begins an attempt and, when it was counted, finishes it as a failure. */
    async function fail(throttle: SignInThrottle, name: string, address: string): Promise<Outcome> {
      const outcome = await throttle.begin(name, address);
      if (counted(outcome)) throttle.finished(outcome);
      return outcome;
    }

    it('counts an attempt in each budget, undoes the count of a refused one, and gives a success back', async () => {
      const a = new SignInThrottle(one, POLICY, now);
      const b = new SignInThrottle(two, POLICY, now);
      expect(counted(await fail(a, 'ada', '10.0.0.1'))).toBe(true);
      expect(counted(await fail(b, 'ada', '10.0.0.1'))).toBe(true);
      clock += 20_000;
      // Spent on either instance, whatever the other counted: wait for the window's end, 40 s from now.
      expect(await fail(a, 'ada', '10.0.0.1')).toEqual({ retryAfterSeconds: 40, why: 'spent' });
      expect(await fail(b, 'ada', '10.0.0.1')).toEqual({ retryAfterSeconds: 40, why: 'spent' });
      // The refused attempts counted nowhere: the address has one failure left, the name two.
      const failures = (await rows()).map((row) => row.failures).sort();
      expect(failures).toEqual([2, 2, 2]);

      const attempt = await b.begin('ada', '10.0.0.2');
      if (!counted(attempt)) throw new Error('not counted');
      await b.succeeded(attempt);
      b.finished(attempt);
      // Its failure given back; the address known for the name (failures 0), on every instance.
      expect((await rows()).map((row) => row.failures).sort()).toEqual([0, 0, 0, 2, 2, 2]);
      // The name's budget (4) has two failures left.
      expect(counted(await fail(a, 'ada', '10.0.0.3'))).toBe(true);
      expect(counted(await fail(b, 'ada', '10.0.0.4'))).toBe(true);
      expect(await fail(a, 'ada', '10.0.0.5')).toEqual({ retryAfterSeconds: 40, why: 'spent' });
      // The known address is not held to the spent per-name budget.
      expect(counted(await fail(b, 'ada', '10.0.0.2'))).toBe(true);
    });

    it('counts attempts made at the same moment on two instances exactly once each', async () => {
      const a = new SignInThrottle(one, POLICY, now);
      const b = new SignInThrottle(two, POLICY, now);
      // Three at once on each (within the per-address cap of 4 sign-ins at once), six in all: two are counted.
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, (_v, i) => fail(i % 2 === 0 ? a : b, 'bea', '10.0.1.1')),
      );
      expect(outcomes.filter(counted)).toHaveLength(2);
      expect(outcomes.filter((outcome) => !counted(outcome))).toHaveLength(4);
    });

    it('starts a new window once the old one has ended, and removes ended windows', async () => {
      const a = new SignInThrottle(one, POLICY, now);
      expect(counted(await fail(a, 'cy', '10.0.2.1'))).toBe(true);
      expect(counted(await fail(a, 'cy', '10.0.2.1'))).toBe(true);
      expect(await fail(a, 'cy', '10.0.2.1')).toHaveProperty('retryAfterSeconds');
      const before = (await rows()).length;
      clock += POLICY.windowMs + 1;
      // Counted again from one; every other row has ended, and goes (the cleanup follows the count).
      expect(counted(await fail(a, 'cy', '10.0.2.1'))).toBe(true);
      const gone = await eventually(async () => (await rows()).length === 3, 5000);
      expect(gone, `${before} rows before, ${(await rows()).length} after`).toBe(true);
      expect((await rows()).map((row) => row.failures)).toEqual([1, 1, 1]);
    });
  });
}
