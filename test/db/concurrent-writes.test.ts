import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import type { PlaylistBody } from '../helpers/requests.js';

describeEachDatabase('concurrent writes (%s)', { MIXTAPE_PLAYLISTS_PER_USER: '5' }, (t, dialect) => {
  const create = (security: string, name: string) =>
    t.app.inject({ method: 'POST', url: '/v3/playlist', headers: { security }, payload: { name, songIds: [1, 2] } });

  it('keeps every acknowledged create, and one over quota fails alone', async () => {
    const users = await Promise.all([t.addUser(), t.addUser(), t.addUser(), t.addUser()]);
    // Warm the credential cache, so that the creates below reach the database together.
    await Promise.all(
      users.map((security) => t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } })),
    );
    const commitsBefore = t.queries.filter((q) => /^commit\b/i.test(q.sql)).length;
    // A PostgreSQL create: its one statement, prepared once per connection.
    const oneStatement = /^\/\* prepared: playlist-create \*\/\s*with slot as/i;
    const createsBefore = t.queries.filter((q) => oneStatement.test(q.sql)).length;

    const answers = await Promise.all(
      users.flatMap((security, u) => Array.from({ length: 7 }, (_, i) => create(security, `u${u} #${i}`))),
    );
    const commits = t.queries.filter((q) => /^commit\b/i.test(q.sql)).length - commitsBefore;
    const creates = t.queries.filter((q) => oneStatement.test(q.sql)).length - createsBefore;

    for (const [u, security] of users.entries()) {
      const mine = answers.slice(u * 7, u * 7 + 7);
      expect(
        mine.filter((a) => a.statusCode === 200),
        `user ${u}`,
      ).toHaveLength(5);
      expect(
        mine.filter((a) => a.statusCode === 409),
        `user ${u}`,
      ).toHaveLength(2);
      const listed = await t.app.inject({ method: 'GET', url: '/v3/playlist?limit=100', headers: { security } });
      expect(listed.headers['x-total-count']).toBe('5');
      const stored = listed.json<PlaylistBody[]>();
      const acknowledged = mine.filter((a) => a.statusCode === 200).map((a) => a.json<PlaylistBody>());
      expect(stored.map((p) => p.id).sort()).toEqual(acknowledged.map((p) => p.id).sort());
      for (const playlist of stored) expect(playlist.songs.map((s) => s.id)).toEqual([1, 2]);
    }
    // On SQLite, creates that arrive together share commits; on PostgreSQL each is one statement, its own
    // transaction (no BEGIN or COMMIT sent), the refused ones included.
    if (dialect === 'sqlite') expect(commits).toBeLessThan(answers.length / 2);
    else expect({ commits, creates }).toEqual({ commits: 0, creates: answers.length });
  });
});
