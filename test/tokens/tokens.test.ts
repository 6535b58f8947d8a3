import { createHash } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import { verifyPassword } from '../../src/credentials/password.js';
import { tokenService } from '../../src/tokens/tokens.service.js';
import { userService } from '../../src/users/user.service.js';
import { openTestApp, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli-process.js';
import { describeEachDatabase, describeEachEmptyDatabase, describeTwoInstances } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

// Every password check is counted, so that a test can tell that a token never costs one.
vi.mock(import('../../src/credentials/password.js'), async (importOriginal) => {
  const real = await importOriginal();
  return { ...real, verifyPassword: vi.fn(real.verifyPassword) };
});

interface NewToken {
  readonly id: number;
  readonly name: string;
  readonly scope: 'read' | 'write';
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly token: string;
}
interface ListedToken extends Omit<NewToken, 'token'> {
  readonly lastUsedAt: string | null;
}

const INVALID = 'Bearer error="invalid_token"';
const SCOPE = 'Bearer error="insufficient_scope"';
const YEAR_MS = 365 * 86_400_000;
const TOKEN = /^mixtape_[A-Za-z0-9_-]{43}$/;
const bearer = (token: string) => `Bearer ${token}`;

/** Helpers on one app: tokens made and listed with a password, requests made with a token. */
function tokensOf(app: () => TestApp) {
  const make = async (security: string, body: object, plural = '') => {
    const response = await sendAs(app().app, 'POST', `/v3/token${plural}`, security, body);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    return response.json<NewToken>();
  };
  const list = async (security: string, plural = '') => {
    const response = await sendAs(app().app, 'GET', `/v3/token${plural}`, security);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<ListedToken[]>();
  };
  /** A request with the token in `Authorization` (or `security`, as `header` says). */
  const withToken = (
    token: string,
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    header: 'authorization' | 'security' = 'authorization',
  ) =>
    app().app.inject({
      method,
      url,
      headers: { [header]: bearer(token), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });
  const rows = async (userId?: number) =>
    app()
      .db.kysely.selectFrom('app_tokens')
      .selectAll()
      .$if(userId !== undefined, (q) => q.where('user_id', '=', userId!))
      .execute();
  return { make, list, withToken, rows };
}

const userIdOf = async (t: TestApp, name: string) =>
  (await t.db.kysely.selectFrom('users').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;

describeEachDatabase(
  'app tokens on %s',
  {
    MIXTAPE_AUTH_MAX_FAILURES: '1000',
    MIXTAPE_AUTH_MAX_FAILURES_PER_ADDRESS: '1000',
    MIXTAPE_AUTH_MAX_FAILURES_PER_NAME: '1000',
  },
  (t) => {
    const { make, list, withToken, rows } = tokensOf(() => t);

    it('makes a token shown once, lists it without its secret, and revokes it at the singular and plural paths', async () => {
      const alice = await t.addUser('tok-alice');
      const before = Date.now();
      const made = await make(alice, { name: 'Phone', scope: 'read' });
      expect(made).toEqual({
        id: expect.any(Number) as number,
        name: 'Phone',
        scope: 'read',
        createdAt: expect.any(String) as string,
        expiresAt: expect.any(String) as string,
        token: expect.stringMatching(TOKEN) as string,
      });
      // A year ahead by default.
      const expires = Date.parse(made.expiresAt);
      expect(expires - Date.parse(made.createdAt)).toBe(YEAR_MS);
      expect(Date.parse(made.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      // In a month, written with an offset: answered in UTC.
      const month = Math.floor((Date.now() + 30 * 86_400_000) / 1000) * 1000;
      const offset = new Date(month + 3_600_000).toISOString().replace('.000Z', '+01:00');
      const other = await make(alice, { name: 'Laptop', scope: 'write', expiresAt: offset }, 's');
      expect(other.expiresAt).toBe(new Date(month).toISOString());
      expect(other.token).not.toBe(made.token);

      const listed = await list(alice);
      expect(listed).toEqual([
        {
          id: made.id,
          name: 'Phone',
          scope: 'read',
          createdAt: made.createdAt,
          expiresAt: made.expiresAt,
          lastUsedAt: null,
        },
        {
          id: other.id,
          name: 'Laptop',
          scope: 'write',
          createdAt: other.createdAt,
          expiresAt: other.expiresAt,
          lastUsedAt: null,
        },
      ]);
      expect(await list(alice, 's')).toEqual(listed);
      expect(JSON.stringify(listed)).not.toContain('mixtape_');
      // Only the digest is stored.
      const stored = await rows(await userIdOf(t, 'tok-alice'));
      expect(stored.map((row) => row.digest).sort()).toEqual(
        [made.token, other.token].map((token) => createHash('sha256').update(token).digest('hex')).sort(),
      );
      expect(JSON.stringify(stored)).not.toContain('mixtape_');

      const revoked = await sendAs(t.app, 'DELETE', `/v3/token/${made.id}`, alice);
      expect(revoked.statusCode, revoked.body).toBe(200);
      expect(revoked.body).toBe('');
      expect((await list(alice)).map((token) => token.id)).toEqual([other.id]);
      expectError(await sendAs(t.app, 'DELETE', `/v3/token/${made.id}`, alice), 404);
      expect((await sendAs(t.app, 'DELETE', `/v3/tokens/${other.id}`, alice)).statusCode).toBe(200);
      expect(await list(alice)).toEqual([]);
      // Another user's token is no token of yours.
      const bob = await t.addUser('tok-bob');
      const bobs = await make(bob, { name: 'Bob', scope: 'read' });
      expectError(await sendAs(t.app, 'DELETE', `/v3/token/${bobs.id}`, alice), 404);
      expectError(await sendAs(t.app, 'DELETE', '/v3/token/0', alice), 400);
    });

    it('acts as its user, in Authorization or in the security header', async () => {
      const carol = await t.addUser('tok-carol');
      const playlist = await createPlaylist(t.app, carol, 'Carol’s', [1, 2]);
      const { token } = await make(carol, { name: 'Reader', scope: 'read' });
      for (const header of ['authorization', 'security'] as const) {
        const one = await withToken(token, 'GET', `/v3/playlist/${playlist.id}`, undefined, header);
        expect(one.statusCode, one.body).toBe(200);
        expect(one.json()).toEqual(playlist);
        const all = await withToken(token, 'GET', '/v3/playlists', undefined, header);
        expect(all.json<{ id: number }[]>().map((p) => p.id)).toEqual([playlist.id]);
      }
      // `bearer` in any case, as RFC 6750's scheme name is.
      const lower = await t.app.inject({ url: '/v3/playlist', headers: { authorization: `bearer ${token}` } });
      expect(lower.statusCode).toBe(200);
    });

    it('a read token reads, opens the feed and its stream ticket, and revokes itself; it changes nothing', async () => {
      const dora = await t.addUser('tok-dora');
      const playlist = await createPlaylist(t.app, dora, 'Dora’s', [1, 2]);
      const reader = await make(dora, { name: 'Reader', scope: 'read' });
      const sibling = await make(dora, { name: 'Sibling', scope: 'read' });
      const read = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT', url: string, payload?: unknown) =>
        withToken(reader.token, method, url, payload);

      for (const url of [
        `/v3/playlist/${playlist.id}`,
        '/v3/song/1',
        '/v3/library',
        `/v3/playlist/${playlist.id}/entries`,
      ]) {
        expect((await read('GET', url)).statusCode, url).toBe(200);
      }
      const feed = await read('GET', '/v3/changes');
      expect(feed.statusCode, feed.body).toBe(200);
      const ticket = await read('POST', '/v3/changes/tickets');
      expect(ticket.statusCode, ticket.body).toBe(200);
      expect(ticket.json<{ ticket: string }>().ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);

      const refused = [
        await read('POST', '/v3/playlist', { name: 'No', songIds: [] }),
        await read('PATCH', `/v3/playlist/${playlist.id}`, { name: 'No' }),
        await read('PUT', `/v3/playlist/${playlist.id}`, { name: 'No', songIds: [] }),
        await read('DELETE', `/v3/playlist/${playlist.id}`),
        await read('POST', '/v3/folder', { name: 'No' }),
        await read('POST', '/v3/token', { name: 'No', scope: 'read' }),
        await read('GET', '/v3/token'),
      ];
      for (const response of refused) {
        const body = expectError(response, 403);
        expect(body.errormsg).toMatch(/scope is "read"|password only/);
        expect(response.headers['www-authenticate']).toBe(SCOPE);
      }
      expect(expectError(refused[0]!, 403).errormsg).toMatch(/"read"/);
      // Nothing changed.
      const after = await sendAs(t.app, 'GET', `/v3/playlist/${playlist.id}`, dora);
      expect(after.json()).toEqual(playlist);

      // Another token of the user's is not its to revoke.
      const other = await read('DELETE', `/v3/token/${sibling.id}`);
      expect(expectError(other, 403).errormsg).toMatch(/only itself/);
      expect(other.headers['www-authenticate']).toBe(SCOPE);
      const itself = await read('DELETE', `/v3/token/${reader.id}`);
      expect(itself.statusCode, itself.body).toBe(200);
      const gone = await read('GET', '/v3/playlist');
      expectError(gone, 401);
      expect(gone.headers['www-authenticate']).toBe(INVALID);
      expect((await withToken(sibling.token, 'GET', '/v3/playlist')).statusCode).toBe(200);
    });

    it('a write token changes what its user may, but never makes or lists tokens', async () => {
      const erin = await t.addUser('tok-erin');
      const writer = await make(erin, { name: 'Writer', scope: 'write' });
      const write = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
        withToken(writer.token, method, url, payload);
      const created = await write('POST', '/v3/playlist', { name: 'Made by an app', songIds: [1] });
      expect(created.statusCode, created.body).toBe(200);
      const id = created.json<{ id: number }>().id;
      expect((await write('PATCH', `/v3/playlist/${id}`, { name: 'Renamed' })).statusCode).toBe(200);
      expect((await write('POST', '/v3/folder', { name: 'Box' })).statusCode).toBe(200);
      expect((await write('DELETE', `/v3/playlist/${id}`)).statusCode).toBe(200);
      // Its own history says who: the user.
      const versions = await sendAs(t.app, 'GET', `/v3/playlist/${id}/versions`, erin);
      expect(versions.json<{ by: string }[]>()[0]?.by).toBe('tok-erin');

      const count = (await rows(await userIdOf(t, 'tok-erin'))).length;
      for (const response of [
        await write('POST', '/v3/token', { name: 'More', scope: 'write' }),
        await write('GET', '/v3/token'),
        await write('GET', '/v3/tokens'),
      ]) {
        expect(expectError(response, 403).errormsg).toMatch(/password only/);
        expect(response.headers['www-authenticate']).toBe(SCOPE);
      }
      expect(await rows(await userIdOf(t, 'tok-erin'))).toHaveLength(count);
      expect((await write('DELETE', `/v3/token/${writer.id}`)).statusCode).toBe(200);
    });

    it('refuses a revoked, expired, unknown or malformed token with 401 invalid_token, and never hashes a password', async () => {
      const fay = await t.addUser('tok-fay');
      const revoked = await make(fay, { name: 'Revoked', scope: 'write' });
      await sendAs(t.app, 'DELETE', `/v3/token/${revoked.id}`, fay);
      const expired = await make(fay, { name: 'Expired', scope: 'write' });
      await t.db.kysely
        .updateTable('app_tokens')
        .set({ expires_at: Date.now() - 1 } as never)
        .where('id', '=', expired.id)
        .execute();
      const unknown = `mixtape_${'A'.repeat(43)}`;
      vi.mocked(verifyPassword).mockClear();
      for (const value of [
        bearer(revoked.token),
        bearer(expired.token),
        bearer(unknown),
        bearer(revoked.token.slice(0, -1)),
        bearer(revoked.token.replace('mixtape_', 'mixtapes')),
        bearer(`${revoked.token} more`),
        'Bearer',
        'Bearer ',
      ]) {
        for (const header of ['authorization', 'security']) {
          const response = await t.app.inject({ url: '/v3/playlist', headers: { [header]: value } });
          expect(expectError(response, 401).errormsg, `${header}: ${value}`).toMatch(
            /malformed, unknown, revoked or expired/,
          );
          expect(response.headers['www-authenticate']).toBe(INVALID);
        }
      }
      expect(vi.mocked(verifyPassword)).not.toHaveBeenCalled();
      // The expired token is no longer listed, and the next token made forgets it.
      expect((await list(fay)).map((token) => token.name)).toEqual([]);
      await make(fay, { name: 'Fresh', scope: 'read' });
      expect((await rows(await userIdOf(t, 'tok-fay'))).map((row) => row.name)).toEqual(['Fresh']);
    });

    it('refuses bad input with 400 naming the field, past 50 live tokens with 409, and stores nothing then', async () => {
      const gus = await t.addUser('tok-gus');
      const userId = await userIdOf(t, 'tok-gus');
      const now = Date.now();
      const cases: [object, RegExp][] = [
        [{ scope: 'read' }, /name/],
        [{ name: '', scope: 'read' }, /name/],
        [{ name: '   ', scope: 'read' }, /name/],
        [{ name: 'x'.repeat(101), scope: 'read' }, /name/],
        [{ name: 'a\u0000b', scope: 'read' }, /name/],
        [{ name: 'App' }, /scope/],
        [{ name: 'App', scope: 'admin' }, /scope/],
        [{ name: 'App', scope: 'all' }, /scope/],
        [{ name: 'App', scope: 'read', expiresAt: '2020-01-01T00:00:00Z' }, /expiresAt.*future/],
        [
          { name: 'App', scope: 'read', expiresAt: new Date(now + YEAR_MS + 120_000).toISOString() },
          /expiresAt.*a year/,
        ],
        [{ name: 'App', scope: 'read', expiresAt: 'tomorrow' }, /expiresAt/],
        [{ name: 'App', scope: 'read', expiresAt: `${new Date().getUTCFullYear() + 1}-02-30T00:00:00Z` }, /expiresAt/],
        [{ name: 'App', scope: 'read', extra: 1 }, /extra|additional/],
      ];
      for (const [body, message] of cases) {
        const response = await sendAs(t.app, 'POST', '/v3/token', gus, body);
        expect(expectError(response, 400).errormsg, JSON.stringify(body)).toMatch(message);
      }
      expect(await rows(userId)).toEqual([]);
      // Just under a year is fine.
      const longest = await make(gus, {
        name: 'Longest',
        scope: 'read',
        expiresAt: new Date(Date.now() + YEAR_MS - 60_000).toISOString(),
      });
      expect(Date.parse(longest.expiresAt)).toBeGreaterThan(now + YEAR_MS - 120_000);

      for (let i = 1; i < 50; i++) await make(gus, { name: `App ${i}`, scope: i % 2 === 0 ? 'read' : 'write' });
      const refused = await sendAs(t.app, 'POST', '/v3/token', gus, { name: 'App 51', scope: 'read' });
      expect(expectError(refused, 409).errormsg).toMatch(/50 live tokens/);
      expect(await rows(userId)).toHaveLength(50);
      expect((await list(gus)).map((token) => token.name)).not.toContain('App 51');
      // An expired one does not count.
      await t.db.kysely
        .updateTable('app_tokens')
        .set({ expires_at: Date.now() - 1 } as never)
        .where('id', '=', longest.id)
        .execute();
      await make(gus, { name: 'App 51', scope: 'read' });
      expect(await list(gus)).toHaveLength(50);
    });

    it('notes when a token was last used, after the answer and at most once a minute', async () => {
      const hal = await t.addUser('tok-hal');
      const { id, token } = await make(hal, { name: 'Used', scope: 'read' });
      const before = Date.now();
      expect((await withToken(token, 'GET', '/v3/playlist')).statusCode).toBe(200);
      const lastUsed = async () => (await list(hal)).find((listed) => listed.id === id)?.lastUsedAt ?? null;
      await expect.poll(lastUsed).not.toBeNull();
      const first = (await lastUsed())!;
      expect(Date.parse(first)).toBeGreaterThanOrEqual(before - 1000);
      expect((await withToken(token, 'GET', '/v3/playlist')).statusCode).toBe(200);
      // A moment for a write that should not happen.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await lastUsed()).toBe(first);
    });

    it('keeps a token found live on SQLite only while nothing is committed and it has not expired', async () => {
      await t.addUser('tok-kept');
      await t.addUser('tok-kept-2');
      const [userId, otherId] = [await userIdOf(t, 'tok-kept'), await userIdOf(t, 'tok-kept-2')];
      let clock = Date.now();
      const service = tokenService(t.db, () => clock);
      const kept = () => service.cached(first.token, 'authorization');
      const first = await service.create(userId, 'Kept', 'read', new Date(clock + 3_600_000).toISOString());
      expect(kept()).toBeUndefined();
      expect(await service.caller(first.token, 'authorization')).toMatchObject({ userId, tokenId: first.id });
      if (t.db.dialect === 'postgres') {
        // No way to tell without a statement that nothing changed: every request looks the token up.
        expect(kept()).toBeUndefined();
        return;
      }
      expect(kept()).toMatchObject({ userId, name: 'tok-kept', via: 'token', scope: 'read', tokenId: first.id });
      expect(service.cached(first.token, 'security')).toMatchObject({ source: 'security' });
      // Any commit, here a token made for someone else, sends it to the lookup again.
      await service.create(otherId, 'Other', 'read', undefined);
      expect(kept()).toBeUndefined();
      await service.caller(first.token, 'authorization');
      expect(kept()).toBeDefined();
      // Its expiry, with nothing committed.
      clock += 3_600_000;
      expect(kept()).toBeUndefined();
      clock -= 3_600_000;
      await service.caller(first.token, 'authorization');
      expect(kept()).toBeDefined();
      // Its revocation, here or by another instance: a commit either way.
      await service.revoke(userId, first.id);
      expect(kept()).toBeUndefined();
      expect(await service.caller(first.token, 'authorization')).toBeUndefined();
    });

    it('removes a user’s tokens with the user', async () => {
      const ivy = await t.addUser('tok-ivy');
      const userId = await userIdOf(t, 'tok-ivy');
      const { token } = await make(ivy, { name: 'Gone with her', scope: 'write' });
      expect(await rows(userId)).toHaveLength(1);
      expect(await userService(t.db).remove('tok-ivy')).toBe(true);
      expect(await rows(userId)).toEqual([]);
      expectError(await withToken(token, 'GET', '/v3/playlist'), 401);
    });
  },
);

describeEachDatabase('a flood of unknown tokens on %s', { MIXTAPE_AUTH_MAX_FAILURES: '5' }, (t) => {
  it('is throttled like wrong passwords, from its own address, and costs no password hash', async () => {
    const security = await t.addUser('flood-owner');
    const { token } = (
      await sendAs(t.app, 'POST', '/v3/token', security, { name: 'Kept', scope: 'read' })
    ).json<NewToken>();
    vi.mocked(verifyPassword).mockClear();
    const from = (remoteAddress: string, value: string) =>
      t.app.inject({ url: '/v3/playlist', remoteAddress, headers: { authorization: bearer(value) } });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await from('10.7.0.1', `mixtape_${String(i).padStart(43, 'x')}`)).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    const throttled = await from('10.7.0.1', `mixtape_${'y'.repeat(43)}`);
    expectError(throttled, 429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    expect(vi.mocked(verifyPassword)).not.toHaveBeenCalled();
    // A token that works is never throttled, and other addresses are not either.
    expect((await from('10.7.0.1', token)).statusCode).toBe(200);
    expect((await from('10.7.0.2', `mixtape_${'z'.repeat(43)}`)).statusCode).toBe(401);
  });
});

describeTwoInstances('revoking a token on one instance (%s)', (apps) => {
  it('is refused at its next request on the other', async () => {
    const { one, two } = apps;
    const security = await one.addUser('two-jo');
    const { id, token } = (
      await sendAs(one.app, 'POST', '/v3/token', security, { name: 'Both', scope: 'write' })
    ).json<NewToken>();
    const onTwo = () => two.app.inject({ url: '/v3/playlist', headers: { authorization: bearer(token) } });
    expect((await onTwo()).statusCode).toBe(200);
    expect((await onTwo()).statusCode).toBe(200);
    expect((await sendAs(one.app, 'DELETE', `/v3/token/${id}`, security)).statusCode).toBe(200);
    const refused = await onTwo();
    expectError(refused, 401);
    expect(refused.headers['www-authenticate']).toBe(INVALID);
  });
});

describeEachEmptyDatabase('the user tokens and user revoke-token commands on %s', (database) => {
  it('list a user’s tokens and revoke one', async () => {
    const t = await openTestApp(database.url);
    try {
      const security = await t.addUser('cli-kim');
      const made = (name: string, scope: string) =>
        sendAs(t.app, 'POST', '/v3/token', security, { name, scope }).then((r) => r.json<NewToken>());
      const phone = await made('Phone', 'read');
      const laptop = await made('Laptop', 'write');
      const listed = await runCli(database.url, ['user', 'tokens', 'cli-kim']);
      expect(listed, listed.stderr).toMatchObject({ code: 0, stderr: '' });
      const lines = listed.stdout.trim().split('\n');
      expect(lines.map((line) => line.split('\t').slice(0, 3))).toEqual([
        [String(phone.id), 'Phone', 'read'],
        [String(laptop.id), 'Laptop', 'write'],
      ]);
      expect(lines[0]).toContain(`expires ${phone.expiresAt}`);
      expect(lines[0]).toContain('never used');
      expect(listed.stdout).not.toContain('mixtape_');

      const revoked = await runCli(database.url, ['user', 'revoke-token', 'cli-kim', String(phone.id)]);
      expect(revoked, revoked.stderr).toMatchObject({ code: 0 });
      expect(revoked.stdout).toMatch(/revoked/);
      expectError(await t.app.inject({ url: '/v3/playlist', headers: { authorization: bearer(phone.token) } }), 401);
      const again = await runCli(database.url, ['user', 'revoke-token', 'cli-kim', String(phone.id)]);
      expect(again).toMatchObject({ code: 1, stdout: '' });
      expect(again.stderr).toMatch(/no live app token/);
      const nobody = await runCli(database.url, ['user', 'tokens', 'cli-nobody']);
      expect(nobody).toMatchObject({ code: 1, stderr: 'mixtape: No user named "cli-nobody".\n' });
    } finally {
      await t.close();
    }
  }, 60_000);
});
