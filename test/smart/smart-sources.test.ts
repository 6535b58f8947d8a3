import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js';
import { describeEachDatabase, describeEachEmptyDatabase } from '../helpers/each-database.js';
import { createPlaylist, sendAs, type PlaylistBody } from '../helpers/requests.js';

const inPlaylist = (id: number) => ({ match: 'all', conditions: [{ field: 'playlist', op: 'in', value: id }] });

/** Every row of `smart_sources`, as [source, smart playlist], in order. */
const sourceRows = async (db: Db) =>
  (
    await db.kysely
      .selectFrom('smart_sources')
      .select(['source_id', 'playlist_id'])
      .orderBy('playlist_id')
      .orderBy('source_id')
      .execute()
  ).map((row) => [row.source_id, row.playlist_id]);

describeEachDatabase('the playlists smart playlists name (smart_sources), on %s', (t) => {
  const send = (...args: Parameters<typeof sendAs> extends [unknown, ...infer R] ? R : never) => sendAs(t.app, ...args);
  const songsOf = async (id: number, security: string) => {
    const read = await send('GET', `/v3/playlist/${id}`, security);
    expect(read.statusCode, read.body).toBe(200);
    return read.json<PlaylistBody>().songs.map((s) => s.id);
  };
  const changes = async (id: number, security: string) => {
    const listed = await send('GET', `/v3/playlist/${id}/versions`, security);
    expect(listed.statusCode, listed.body).toBe(200);
    return listed.json<{ change: string }[]>().map((r) => r.change);
  };
  const rowsOf = async (smart: number) => (await sourceRows(t.db)).filter(([, playlist]) => playlist === smart);
  const ok = async (reply: Promise<{ statusCode: number; body: string }>) => {
    const answered = await reply;
    expect(answered.statusCode, answered.body).toBe(200);
  };

  it('are written with the rules, and a write of a playlist refreshes the smart playlists found through them', async () => {
    const owner = await t.addUser();
    const a = await createPlaylist(t.app, owner, 'A', [1, 2]);
    const b = await createPlaylist(t.app, owner, 'B', [3]);
    // A named twice (once in a nested group), B once: a row for each playlist named.
    const rules = {
      match: 'any',
      conditions: [
        { field: 'playlist', op: 'in', value: a.id },
        { match: 'all', conditions: [{ field: 'playlist', op: 'in', value: a.id }] },
        { field: 'playlist', op: 'in', value: b.id },
      ],
    };
    const made = await send('POST', '/v3/playlist', owner, { name: 'Smart', rules });
    expect(made.statusCode, made.body).toBe(200);
    const smart = made.json<PlaylistBody>().id;
    expect(await rowsOf(smart)).toEqual([
      [a.id, smart],
      [b.id, smart],
    ]);
    expect(await songsOf(smart, owner)).toEqual([1, 2, 3]);

    // A write of A refreshes the smart playlist (after the write is answered, or at the next read of it).
    await ok(send('PATCH', `/v3/playlist/${a.id}`, owner, { songIds: [4, 1] }));
    expect(await songsOf(smart, owner)).toEqual([1, 3, 4]);
    expect(await changes(smart, owner)).toEqual(['refresh', 'create']);

    // The queue's dependents are those of the table: without its row for B, a write of B queues no refresh of the
    // smart playlist (its versions stay as they are); the next read of it finds its inputs changed and refreshes it.
    await t.db.kysely.deleteFrom('smart_sources').where('source_id', '=', b.id).execute();
    await ok(send('PATCH', `/v3/playlist/${b.id}`, owner, { songIds: [5] }));
    await sleep(300);
    expect(await changes(smart, owner)).toEqual(['refresh', 'create']);
    expect(await songsOf(smart, owner)).toEqual([1, 4, 5]);
    expect(await changes(smart, owner)).toEqual(['refresh', 'refresh', 'create']);

    // New rules: the rows follow them; A is no longer followed.
    await ok(send('PATCH', `/v3/playlist/${smart}`, owner, { rules: inPlaylist(b.id) }));
    expect(await rowsOf(smart)).toEqual([[b.id, smart]]);
    expect(await songsOf(smart, owner)).toEqual([5]);
    await ok(send('PATCH', `/v3/playlist/${a.id}`, owner, { songIds: [6] }));
    expect(await songsOf(smart, owner)).toEqual([5]);
    await ok(send('PATCH', `/v3/playlist/${b.id}`, owner, { songIds: [7, 5] }));
    expect(await songsOf(smart, owner)).toEqual([5, 7]);

    // Frozen ({"rules": null}): no rows; a restore of a version with rules brings its rows back.
    await ok(send('PATCH', `/v3/playlist/${smart}`, owner, { rules: null }));
    expect(await rowsOf(smart)).toEqual([]);
    await ok(send('POST', `/v3/playlist/${smart}/restore`, owner, { version: 1 }));
    expect(await rowsOf(smart)).toEqual([
      [a.id, smart],
      [b.id, smart],
    ]);
    expect(await songsOf(smart, owner)).toEqual([5, 6, 7]);

    // Deleted, its rows go with it (its rules stay with the delete); undeleted, they come back.
    await ok(send('DELETE', `/v3/playlist/${smart}`, owner));
    expect(await rowsOf(smart)).toEqual([]);
    const versions = await send('GET', `/v3/playlist/${smart}/versions`, owner);
    const latest = versions.json<{ version: number; change: string }[]>().find((v) => v.change !== 'delete')!;
    await ok(send('POST', `/v3/playlist/${smart}/restore`, owner, { version: latest.version }));
    expect(await rowsOf(smart)).toEqual([
      [a.id, smart],
      [b.id, smart],
    ]);

    // A deleted source keeps its rows: its smart playlist is refreshed when it goes, and when it comes back.
    await ok(send('DELETE', `/v3/playlist/${a.id}`, owner));
    expect(await rowsOf(smart)).toEqual([
      [a.id, smart],
      [b.id, smart],
    ]);
    expect(await songsOf(smart, owner)).toEqual([5, 7]);
    const aVersions = await send('GET', `/v3/playlist/${a.id}/versions`, owner);
    const aLatest = aVersions.json<{ version: number; change: string }[]>().find((v) => v.change !== 'delete')!;
    await ok(send('POST', `/v3/playlist/${a.id}/restore`, owner, { version: aLatest.version }));
    expect(await songsOf(smart, owner)).toEqual([5, 6, 7]);
  });
});

describeEachEmptyDatabase('smart_sources filled by its migration from the stored rules, on %s', (database) => {
  it('has a row for each playlist each smart playlist names, and none for hand-made ones', async () => {
    const db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
    try {
      await migrateTo(db, '2026-12-07-smart-playlists');
      const { id: owner } = await db.kysely
        .insertInto('users')
        .values({ name: 'before', password_hash: 'x', created_at: 0 })
        .returning('id')
        .executeTakeFirstOrThrow();
      const playlist = async (rules: unknown) =>
        (
          await db.kysely
            .insertInto('playlists')
            .values({
              owner_id: owner,
              name: 'p',
              created_at: 0,
              next_entry: 1,
              rules: rules === null ? null : JSON.stringify(rules),
            })
            .returning('id')
            .executeTakeFirstOrThrow()
        ).id;
      const hand = await playlist(null);
      const other = await playlist(null);
      // 600 smart playlists: more than one of the migration's chunks.
      const smart: number[] = [];
      for (let i = 0; i < 600; i += 1) {
        smart.push(
          await playlist({
            match: 'all',
            conditions: [
              { field: 'genre', op: 'is', value: 'jazz' },
              { match: 'any', conditions: [{ field: 'playlist', op: 'notIn', value: hand }] },
              ...(i % 2 === 0 ? [{ field: 'playlist', op: 'in', value: other }] : []),
              { field: 'playlist', op: 'in', value: hand },
            ],
          }),
        );
      }
      const none = await playlist({ match: 'all', conditions: [{ field: 'genre', op: 'is', value: 'jazz' }] });

      expect((await migrateToLatest(db))[0]).toBe('2026-12-08-smart-sources');
      const rows = await sourceRows(db);
      const expected = smart.flatMap((id, i) =>
        i % 2 === 0
          ? [
              [hand, id],
              [other, id],
            ]
          : [[hand, id]],
      );
      expect(rows).toEqual(expected.sort((x, y) => x[1]! - y[1]! || x[0]! - y[0]!));
      expect(rows.some(([, id]) => id === none || id === hand || id === other)).toBe(false);

      // And back down, and up again.
      await migrateTo(db, '2026-12-07-smart-playlists');
      await expect(db.kysely.selectFrom('smart_sources').selectAll().execute()).rejects.toThrow();
      await migrateToLatest(db);
      expect(await sourceRows(db)).toEqual(rows);
    } finally {
      await db.close();
    }
  });
});
