import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

/**
 * Every time the API takes (a link's `expiresAt`, a smart playlist's `added` `before` and `after`) is read by one
 * rule: RFC 3339, an instant from year 0000 to 9999 in UTC, a real calendar date, no leap second. Every time it
 * answers is RFC 3339 in UTC with a four-digit year.
 */

/** RFC 3339 as the service answers it: UTC, milliseconds, a four-digit year. */
const ANSWERED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Not times the API takes: a leap second, a year past 9999 or before 0000 once in UTC, no such day, no RFC 3339. */
const REFUSED = [
  '2030-06-30T23:59:60Z',
  '2030-06-30T23:59:60.500Z',
  '2030-07-01T01:59:60+02:00',
  '9999-12-31T23:00:00-01:00',
  '9999-12-31T23:59:60Z',
  '0000-01-01T00:00:00+00:01',
  '+010000-01-01T00:00:00.000Z',
  '10000-01-01T00:00:00Z',
  '-000001-12-31T00:00:00Z',
  '2031-02-29T00:00:00Z',
  '2030-04-31T00:00:00Z',
  '2030-01-01T00:00:00+0100',
  '2030-01-01T00:00:00+01',
  '2030-01-01T00:00:00',
];

interface Link {
  id: number;
  createdAt: string;
  expiresAt: string | null;
}

describeEachDatabase('times the API takes and answers on %s', (t) => {
  let ivy: string;
  beforeAll(async () => {
    ivy = await t.addUser();
  });

  const listLinks = async (id: number): Promise<Link[]> => {
    const response = await sendAs(t.app, 'GET', `/v3/playlist/${id}/links`, ivy);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Link[]>();
  };
  const storedLinks = async (id: number) =>
    t.db.kysely.selectFrom('playlist_links').select(['id', 'expires_at']).where('playlist_id', '=', id).execute();
  const countPlaylists = async () => Number((await sendAs(t.app, 'GET', '/v3/playlist', ivy)).headers['x-total-count']);
  const added = (op: 'before' | 'after', value: string) => ({
    match: 'all',
    conditions: [{ field: 'added', op, value }],
  });

  it("refuses a link's expiresAt that is no such time with 400 naming it, and stores no link", async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Leap', [1, 2]);
    const url = `/v3/playlist/${playlist.id}/links`;
    for (const expiresAt of REFUSED) {
      const response = await sendAs(t.app, 'POST', url, ivy, { expiresAt });
      // Nothing is stored by a request that fails, whatever it answered.
      expect(await storedLinks(playlist.id), expiresAt).toEqual([]);
      expect(await listLinks(playlist.id), expiresAt).toEqual([]);
      const refused = expectError(response, 400);
      expect(refused.errormsg, expiresAt).toMatch(/^"expiresAt" must be an RFC 3339 /);
    }
  });

  it('takes expiresAt up to the last instant of year 9999 in UTC, and answers every time with a four-digit year', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Far', [3]);
    const url = `/v3/playlist/${playlist.id}/links`;
    const made: [string, string][] = [
      ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
      ['9999-12-31T22:59:59-01:00', '9999-12-31T23:59:59.000Z'],
      ['2032-02-29t12:00:00.123456789z', '2032-02-29T12:00:00.123Z'],
    ];
    for (const [expiresAt, answered] of made) {
      const response = await sendAs(t.app, 'POST', url, ivy, { expiresAt });
      expect(response.statusCode, response.body).toBe(200);
      const link = response.json<Link>();
      expect(link.expiresAt, expiresAt).toBe(answered);
      expect(link.createdAt).toMatch(ANSWERED);
    }
    const listed = await listLinks(playlist.id);
    expect(listed.map((link) => link.expiresAt)).toEqual(made.map(([, answered]) => answered));
    for (const link of listed) expect(link.createdAt).toMatch(ANSWERED);
  });

  it('answers a stored expiry past year 9999 as the last instant RFC 3339 can write, not as +010000', async () => {
    const playlist = await createPlaylist(t.app, ivy, 'Stored', [4]);
    const { owner_id } = await t.db.kysely
      .selectFrom('playlists')
      .select('owner_id')
      .where('id', '=', playlist.id)
      .executeTakeFirstOrThrow();
    await t.db.kysely
      .insertInto('playlist_links')
      .values({
        playlist_id: playlist.id,
        owner_id,
        digest: 'f'.repeat(64),
        created_at: Date.now(),
        expires_at: Date.UTC(10000, 0, 1),
      })
      .execute();
    const [link] = await listLinks(playlist.id);
    expect(link?.expiresAt).toBe('9999-12-31T23:59:59.999Z');
  });

  it('refuses such a time in smart rules with 400 naming its path, on create, PATCH and PUT, storing nothing', async () => {
    const before = await countPlaylists();
    for (const value of REFUSED) {
      for (const op of ['before', 'after'] as const) {
        const refused = expectError(
          await sendAs(t.app, 'POST', '/v3/playlist', ivy, { name: 'Leap', rules: added(op, value) }),
          400,
        );
        expect(refused.errormsg, value).toMatch(
          new RegExp(`^rules/conditions/0/value: "${op}" takes an RFC 3339 date-time from year 0000 to 9999`),
        );
      }
    }
    expect(await countPlaylists()).toBe(before);

    const made = await sendAs(t.app, 'POST', '/v3/playlist', ivy, {
      name: 'Old songs',
      rules: added('after', '2001-01-01T00:00:00Z'),
    });
    expect(made.statusCode, made.body).toBe(200);
    const smart = made.json<PlaylistBody & { rules: unknown }>();
    for (const value of REFUSED) {
      const url = `/v3/playlist/${smart.id}`;
      expectError(await sendAs(t.app, 'PATCH', url, ivy, { rules: added('before', value) }), 400);
      expectError(await sendAs(t.app, 'PUT', url, ivy, { name: 'Old songs', rules: added('before', value) }), 400);
    }
    const read = await sendAs(t.app, 'GET', `/v3/playlist/${smart.id}`, ivy);
    expect(read.json<{ rules: unknown }>().rules).toEqual(added('after', '2001-01-01T00:00:00Z'));
    const versions = await sendAs(t.app, 'GET', `/v3/playlist/${smart.id}/versions`, ivy);
    expect(versions.json<unknown[]>()).toHaveLength(1);
  });

  it('takes the first and last instants of years 0000 to 9999 in smart rules, read as those instants', async () => {
    const every = await sendAs(t.app, 'POST', '/v3/playlist', ivy, {
      name: 'Everything',
      rules: { match: 'all', conditions: [] },
    });
    expect(every.statusCode, every.body).toBe(200);
    const all = every.json<PlaylistBody>().songs.map((song) => song.id);
    expect(all.length).toBeGreaterThan(0);
    const songsOf = async (rules: unknown) => {
      const response = await sendAs(t.app, 'POST', '/v3/playlist', ivy, { name: 'Bounds', rules });
      expect(response.statusCode, response.body).toBe(200);
      return response.json<PlaylistBody>().songs.map((song) => song.id);
    };
    expect(await songsOf(added('before', '9999-12-31T23:59:59.999Z'))).toEqual(all);
    expect(await songsOf(added('before', '9999-12-31T22:59:59-01:00'))).toEqual(all);
    expect(await songsOf(added('after', '0000-01-01T00:00:00Z'))).toEqual(all);
    expect(await songsOf(added('after', '0000-01-01T00:01:00+00:01'))).toEqual(all);
    expect(await songsOf(added('before', '2000-01-01T00:00:00Z'))).toEqual([]);
  });
});
