import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeAll, expect, it, vi } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface NewLink {
  id: number;
  url: string;
  createdAt: string;
  expiresAt: string | null;
}

const LINKS_MAX = 3;
const MINUTE = 60_000;

describeEachDatabase('share links on %s', { MIXTAPE_LINKS_MAX: String(LINKS_MAX) }, (t) => {
  let ivy: string;
  let jon: string;
  beforeAll(async () => {
    ivy = await t.addUser();
    jon = await t.addUser();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const makeLink = async (id: number, body?: unknown, base = '/v3/playlist'): Promise<NewLink> => {
    const response = await sendAs(t.app, 'POST', `${base}/${id}/links`, ivy, body);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<NewLink>();
  };
  const listLinks = async (id: number, base = '/v3/playlist') => {
    const response = await sendAs(t.app, 'GET', `${base}/${id}/links`, ivy);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<{ id: number; createdAt: string; expiresAt: string | null }[]>();
  };
  /** The link's page, as anyone opens it. */
  const open = (link: NewLink, suffix = ''): Promise<LightMyRequestResponse> =>
    t.app.inject({ method: 'GET', url: `${new URL(link.url).pathname}${suffix}` });
  const tokenOf = (link: NewLink) => new URL(link.url).pathname.split('/')[2]!;

  it('makes a link whose URL opens the playlist, lists it without its URL, and revokes it', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Sunday', [1, 2, 3]);
    const before = Date.now();
    const link = await makeLink(playlist.id);
    expect(link).toEqual({
      id: expect.any(Number) as number,
      url: expect.any(String) as string,
      createdAt: expect.any(String) as string,
      expiresAt: null,
    });
    expect(Math.abs(Date.parse(link.createdAt) - before)).toBeLessThan(MINUTE);
    // Absolute, from the request's origin; 32 random bytes in base64url.
    expect(link.url).toMatch(/^http:\/\/localhost:80\/s\/[A-Za-z0-9_-]{43}$/);
    expect((await open(link)).statusCode).toBe(200);

    const second = await makeLink(playlist.id, {}, '/v3/playlists');
    expect(tokenOf(second)).not.toBe(tokenOf(link));
    const listed = await listLinks(playlist.id);
    expect(listed).toEqual([
      { id: link.id, createdAt: link.createdAt, expiresAt: null },
      { id: second.id, createdAt: second.createdAt, expiresAt: null },
    ]);
    expect(JSON.stringify(listed)).not.toContain(tokenOf(link));
    expect(await listLinks(playlist.id, '/v3/playlists')).toEqual(listed);

    const revoked = await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${link.id}`, ivy);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.body).toBe('');
    expect((await open(link)).statusCode).toBe(404);
    expect((await open(link, '/image')).statusCode).toBe(404);
    expect((await open(link, '?format=xspf')).statusCode).toBe(404);
    expect((await open(second)).statusCode).toBe(200);
    expect(await listLinks(playlist.id)).toEqual([listed[1]]);
    expectError(await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${link.id}`, ivy), 404);
    const plural = await sendAs(t.app, 'DELETE', `/v3/playlists/${playlist.id}/links/${second.id}`, ivy);
    expect(plural.statusCode).toBe(200);
    expect(await listLinks(playlist.id)).toEqual([]);
  });

  it('makes a link from a POST with a JSON Content-Type and an empty body, as from one with no body', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Empty body', [1]);
    const response = await t.app.inject({
      method: 'POST',
      url: `/v3/playlist/${playlist.id}/links`,
      headers: { security: ivy, 'content-type': 'application/json' },
      payload: '',
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json<NewLink>().expiresAt).toBeNull();
    // A route whose body is required still says the body is empty.
    const edit = await t.app.inject({
      method: 'PATCH',
      url: `/v3/playlist/${playlist.id}`,
      headers: { security: ivy, 'content-type': 'application/json' },
      payload: '',
    });
    expect(expectError(edit, 400).errormsg).toMatch(/empty/i);
  });

  it('keeps only a digest of the token: the database never holds the token itself', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Digest', [4]);
    const link = await makeLink(playlist.id);
    const token = tokenOf(link);
    const rows = await t.db.kysely.selectFrom('playlist_links').selectAll().where('id', '=', link.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.digest).toBe(createHash('sha256').update(token).digest('hex'));
    const everything = await t.db.kysely.selectFrom('playlist_links').selectAll().execute();
    expect(JSON.stringify(everything)).not.toContain(token);
  });

  it('stops opening at expiresAt, and lists only live links', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Brief', [5, 6]);
    const expiresAt = new Date(Date.now() + 5 * MINUTE).toISOString();
    const link = await makeLink(playlist.id, { expiresAt });
    expect(link.expiresAt).toBe(expiresAt);
    // Any offset, read as the same instant, answered in UTC.
    const offset = await makeLink(playlist.id, { expiresAt: '2099-06-01T12:00:00+02:00' });
    expect(offset.expiresAt).toBe('2099-06-01T10:00:00.000Z');
    expect((await open(link)).statusCode).toBe(200);

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 10 * MINUTE });
    expect((await open(link)).statusCode).toBe(404);
    expect((await open(link, '/image')).statusCode).toBe(404);
    expect((await open(offset)).statusCode).toBe(200);
    expect((await listLinks(playlist.id)).map((l) => l.id)).toEqual([offset.id]);
    // An expired link is no longer there to revoke.
    expectError(await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${link.id}`, ivy), 404);
  });

  it("opens nothing while its playlist is deleted, and opens again after the owner's restore", async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Phoenix', [7, 8]);
    const link = await makeLink(playlist.id);
    expect((await open(link)).statusCode).toBe(200);
    expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}`, ivy)).statusCode).toBe(200);
    for (const suffix of ['', '/image', '?format=m3u8']) expect((await open(link, suffix)).statusCode).toBe(404);
    const json = await t.app.inject({
      method: 'GET',
      url: new URL(link.url).pathname,
      headers: { accept: 'application/json' },
    });
    expect(json.statusCode).toBe(404);
    // The owner hears 410 from the access module, a stranger 404.
    expectError(await sendAs(t.app, 'GET', `/v3/playlist/${playlist.id}/links`, ivy), 410);
    expectError(await sendAs(t.app, 'POST', `/v3/playlist/${playlist.id}/links`, ivy, {}), 410);
    expectError(await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${link.id}`, ivy), 410);
    expectError(await sendAs(t.app, 'GET', `/v3/playlist/${playlist.id}/links`, jon), 404);

    const restored = await sendAs(t.app, 'POST', `/v3/playlist/${playlist.id}/restore`, ivy, { version: 1 });
    expect(restored.statusCode, restored.body).toBe(200);
    const page = await open(link);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Phoenix');
    expect((await listLinks(playlist.id)).map((l) => l.id)).toEqual([link.id]);
  });

  it('answers the same 404 page, after the same single statement, to every token that opens nothing', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Same', [9]);
    const revoked = await makeLink(playlist.id);
    await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${revoked.id}`, ivy);
    const expiring = await makeLink(playlist.id, { expiresAt: new Date(Date.now() + MINUTE).toISOString() });
    const doomed = await createPlaylist(t.app, ivy, 'Doomed', [10]);
    const ofDeleted = await makeLink(doomed.id);
    await sendAs(t.app, 'DELETE', `/v3/playlist/${doomed.id}`, ivy);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2 * MINUTE });

    const paths = [
      '/s/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      '/s/x',
      ...[revoked, expiring, ofDeleted].map((link) => new URL(link.url).pathname),
    ];
    const bodies = new Set<string>();
    for (const path of paths) {
      const before = t.queries.length;
      const response = await t.app.inject({ method: 'GET', url: path });
      expect(response.statusCode, path).toBe(404);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(
        t.queries
          .slice(before)
          .map((q) => q.sql)
          .filter((sql) => sql.includes('playlist_links')),
      ).toHaveLength(1);
      // Besides the NOTIFY that tells other instances of an earlier write (sent after that write, it may land here).
      const own = t.queries.slice(before).filter((q) => !q.sql.includes('pg_notify'));
      expect(own, path).toHaveLength(1);
      bodies.add(response.body);
    }
    expect(bodies.size).toBe(1);
    expect([...bodies][0]).toContain('This link opens nothing');
  });

  it(`allows ${LINKS_MAX} live links per playlist, then 409; a revoked or expired one frees its place`, async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Popular', [11]);
    const soon = new Date(Date.now() + MINUTE).toISOString();
    const made = [await makeLink(playlist.id, { expiresAt: soon })];
    for (let i = 1; i < LINKS_MAX; i++) made.push(await makeLink(playlist.id));
    const refused = expectError(await sendAs(t.app, 'POST', `/v3/playlist/${playlist.id}/links`, ivy, {}), 409);
    expect(refused.errormsg).toContain(`${LINKS_MAX} live links`);
    await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${made[1]!.id}`, ivy);
    await makeLink(playlist.id);
    expectError(await sendAs(t.app, 'POST', `/v3/playlist/${playlist.id}/links`, ivy, {}), 409);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2 * MINUTE });
    await makeLink(playlist.id);
    expect(await listLinks(playlist.id)).toHaveLength(LINKS_MAX);
    // Another playlist counts its own.
    const other = await createPlaylist(t.app, ivy, 'Other', [12]);
    await makeLink(other.id);
  });

  it('refuses an expiresAt that is not an RFC 3339 date-time in the future, and any other field', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Strict', [13]);
    const url = `/v3/playlist/${playlist.id}/links`;
    for (const expiresAt of ['tomorrow', '2030-01-01', '2030-02-30T10:00:00Z', '2030-01-01T25:00:00Z', '1700000000']) {
      const body = expectError(await sendAs(t.app, 'POST', url, ivy, { expiresAt }), 400);
      expect(body.errormsg, expiresAt).toContain('RFC 3339');
    }
    const past = expectError(await sendAs(t.app, 'POST', url, ivy, { expiresAt: '2001-01-01T00:00:00Z' }), 400);
    expect(past.errormsg).toContain('in the future');
    expectError(await sendAs(t.app, 'POST', url, ivy, { expiresAt: 1_900_000_000 }), 400);
    expectError(await sendAs(t.app, 'POST', url, ivy, { expires: '2099-01-01T00:00:00Z' }), 400);
    expect(await listLinks(playlist.id)).toEqual([]);
    // No body at all is a link that never expires.
    const bare = await t.app.inject({ method: 'POST', url, headers: { security: ivy } });
    expect(bare.statusCode, bare.body).toBe(200);
    expect(bare.json<NewLink>().expiresAt).toBeNull();
  });

  it("answers 404 to anyone but the owner, and to another playlist's link id", async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Mine', [14]);
    const link = await makeLink(playlist.id);
    expectError(await sendAs(t.app, 'POST', `/v3/playlist/${playlist.id}/links`, jon, {}), 404);
    expectError(await sendAs(t.app, 'GET', `/v3/playlist/${playlist.id}/links`, jon), 404);
    expectError(await sendAs(t.app, 'DELETE', `/v3/playlist/${playlist.id}/links/${link.id}`, jon), 404);
    expectError(await sendAs(t.app, 'GET', '/v3/playlist/987654/links', ivy), 404);
    const other = await createPlaylist(t.app, ivy, 'Not it', [15]);
    expectError(await sendAs(t.app, 'DELETE', `/v3/playlist/${other.id}/links/${link.id}`, ivy), 404);
    expectError(await t.app.inject({ method: 'GET', url: `/v3/playlist/${playlist.id}/links` }), 401);
    expect((await open(link)).statusCode).toBe(200);
  });
});
