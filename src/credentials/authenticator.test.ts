import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { openDatabase, type Db } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { ApiError } from '../http/errors.js';
import { userService } from '../users/user.service.js';
import { Authenticator } from './authenticator.js';

const header = (name: string, password: string) => ({
  security: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`,
});

async function status(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.statusCode;
    throw error;
  }
}

describe('Authenticator', () => {
  let db: Db;
  let clock = 1_000_000;
  const now = () => clock;
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:' });

  beforeAll(async () => {
    db = openDatabase(config.database);
    await migrateToLatest(db);
    await userService(db).add('ada', 'first');
  });
  afterAll(async () => {
    await db.close();
  });

  it('trusts a cached credential for the recheck interval, then asks the database again', async () => {
    const auth = new Authenticator(db, config.auth, now);
    expect(await status(auth.authenticate(header('ada', 'first'), '10.0.0.1'))).toBe(200);
    // Another instance changes the password: this one still trusts its cache for up to 5 s.
    await userService(db).setPassword('ada', 'second');
    clock += config.auth.recheckMs - 1;
    expect(await status(auth.authenticate(header('ada', 'first'), '10.0.0.1'))).toBe(200);
    clock += 2;
    expect(await status(auth.authenticate(header('ada', 'first'), '10.0.0.1'))).toBe(401);
    expect(await status(auth.authenticate(header('ada', 'second'), '10.0.0.1'))).toBe(200);
  });

  it('answers a verified token from the cache, in either header, and nothing it has not verified', async () => {
    await userService(db).add('cached-cy', 'cy-password');
    const auth = new Authenticator(db, config.auth, now);
    const token = Buffer.from('cached-cy:cy-password').toString('base64');
    expect(auth.cachedCaller({ security: `Basic ${token}` }, '10.0.0.9')).toBeUndefined();
    expect(await status(auth.authenticate({ security: `Basic ${token}` }, '10.0.0.9'))).toBe(200);
    expect(auth.cachedCaller({ security: token }, '10.0.0.9')).toMatchObject({ name: 'cached-cy', source: 'security' });
    expect(auth.cachedCaller({ authorization: `basic  ${token} ` }, '10.0.0.9')).toMatchObject({
      name: 'cached-cy',
      source: 'authorization',
    });
    // A wrong password, and a security header that is not Basic at all.
    const wrong = Buffer.from('cached-cy:cy-passworc').toString('base64');
    expect(auth.cachedCaller({ security: wrong }, '10.0.0.9')).toBeUndefined();
    expect(auth.cachedCaller({ security: `Bearer ${token}` }, '10.0.0.9')).toBeUndefined();
    // security wins over Authorization, as in readCredential, even when only Authorization is verified.
    expect(auth.cachedCaller({ security: wrong, authorization: `Basic ${token}` }, '10.0.0.9')).toBeUndefined();
    clock += config.auth.recheckMs;
    expect(auth.cachedCaller({ security: token }, '10.0.0.9')).toBeUndefined();
  });

  it('counts failures per address and name, per address, and per name, over a window that expires', async () => {
    const throttle = { ...config.auth.throttle, perAddressAndName: 2, perAddress: 3, perName: 4, windowMs: 60_000 };
    const auth = new Authenticator(db, { ...config.auth, throttle }, now);
    // The budgets are the database's, shared with the test before: an hour on, every window it opened has ended.
    clock += 3_600_000;
    // One address guessing one name spends that pair's budget, not the name's owner's elsewhere.
    expect(await status(auth.authenticate(header('ada', 'x'), '10.0.0.3'))).toBe(401);
    expect(await status(auth.authenticate(header('ada', 'y'), '10.0.0.3'))).toBe(401);
    expect(await status(auth.authenticate(header('ada', 'second'), '10.0.0.3'))).toBe(429);
    expect(await status(auth.authenticate(header('ada', 'second'), '10.0.0.4'))).toBe(200);
    // The address's own budget covers every name it tries.
    expect(await status(auth.authenticate(header('bob', 'x'), '10.0.0.3'))).toBe(401);
    expect(await status(auth.authenticate(header('cy', 'x'), '10.0.0.3'))).toBe(429);
    // Guessing one name from many addresses spends the name's budget; an address that signed in as it is known.
    expect(await status(auth.authenticate(header('ada', 'z'), '10.0.0.5'))).toBe(401);
    expect(await status(auth.authenticate(header('ada', 'z'), '10.0.0.6'))).toBe(401);
    expect(await status(auth.authenticate(header('ada', 'w'), '10.0.0.7'))).toBe(429);
    expect(await status(auth.authenticate(header('ada', 'w'), '10.0.0.4'))).toBe(401);
    clock += 60_001;
    expect(await status(auth.authenticate(header('ada', 'w'), '10.0.0.7'))).toBe(401);
  });
});
