import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { appWithLogLines, openTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js';
import { expectError } from '../helpers/requests.js';

describe('request logs', () => {
  let database: TestDatabase;
  let t: TestApp;
  let app: FastifyInstance;
  let lines: string[];
  /** The lines written since `from`, parsed. */
  const linesSince = (from: number) => lines.slice(from).map((line) => JSON.parse(line) as Record<string, unknown>);

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    t = await openTestApp(database.url);
    ({ app, lines } = await appWithLogLines(t));
  });
  afterAll(async () => {
    await app.close();
    await t.close();
    await database.drop();
  });

  it('writes one line per request with its id, status and duration, and never the credential', async () => {
    const security = await t.addUser('logger', 'sekrit-password');
    const before = lines.length;
    const response = await app.inject({
      method: 'GET',
      url: '/v3/playlist',
      headers: { security, authorization: security },
    });
    expect(response.statusCode).toBe(200);
    const written = linesSince(before);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({ msg: 'request', method: 'GET', status: 200, user: 'logger' });
    expect(typeof written[0]!.reqId).toBe('string');
    expect(typeof written[0]!.ms).toBe('number');
    const text = JSON.stringify(written);
    expect(text).not.toContain(security.slice('Basic '.length));
    expect(text).not.toContain('sekrit-password');
  });

  it("puts each error's entry in the request's log line", async () => {
    const before = lines.length;
    const response = await app.inject({ method: 'GET', url: '/v3/playlist/12345', headers: { security: 'Basic !!' } });
    const body = expectError(response, 401);
    const line = linesSince(before).find((l) => l.msg === 'request');
    expect(line).toMatchObject({ status: 401, entry: body.logdata.entry, reason: body.errormsg });
  });

  it('logs an unexpected fault with its stack under the same entry', async () => {
    const security = await t.addUser('faulty', 'pw');
    await t.db.kysely.schema.dropTable('deleted_playlists').execute();
    const before = lines.length;
    const response = await app.inject({ method: 'GET', url: '/v3/playlist/424242', headers: { security } });
    const body = expectError(response, 500);
    const fault = linesSince(before).find((l) => l.msg === 'unexpected fault');
    expect(fault).toMatchObject({ entry: body.logdata.entry, level: 50 });
    expect(JSON.stringify(fault)).toContain('deleted_playlists');
  });
});
