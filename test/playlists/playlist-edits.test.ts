import { generateKeyBetween } from 'fractional-indexing';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/databases.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

const ids = (body: PlaylistBody) => body.songs.map((s) => s.id);

for (const dialect of DIALECTS) {
  describe(`editing playlists on ${dialect}`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(dialect);
    });
    afterAll(async () => {
      await t.close();
    });

    const edit = (
      method: 'PATCH' | 'PUT' | 'POST',
      url: string,
      security: string,
      payload: unknown,
      headers: Record<string, string> = {},
    ) =>
      t.app.inject({
        method,
        url,
        headers: { security, 'content-type': 'application/json', ...headers },
        payload: JSON.stringify(payload),
      });
    const get = (id: number, security: string) =>
      t.app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security } });

    it('a create answers the ETag GET gives, so that the first edit can be conditional', async () => {
      const security = await t.addUser();
      const created = await t.app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'Fresh', songIds: [1, 2] }),
      });
      expect(created.statusCode).toBe(200);
      const { id } = created.json<PlaylistBody>();
      const read = await get(id, security);
      expect(created.headers.etag).toMatch(/^"[^"]+"$/);
      expect(created.headers.etag).toBe(read.headers.etag);
      const appended = await edit(
        'POST',
        `/v3/playlist/${id}/songs`,
        security,
        { songIds: [3] },
        {
          'if-match': String(created.headers.etag),
        },
      );
      expect(appended.statusCode, appended.body).toBe(200);
      expect(ids(appended.json())).toEqual([1, 2, 3]);
    });

    it('reads the songs before and after a conditional edit in one statement; on PostgreSQL writes it in one', async () => {
      const security = await t.addUser();
      const playlist = await createPlaylist(t.app, security, 'Counted', [1, 2, 3]);
      const etag = String((await get(playlist.id, security)).headers.etag);
      const before = t.queries.length;
      // Songs 2 and 3 replaced by 4: the entries from the first difference on are written over, one deleted.
      const replaced = await edit(
        'PUT',
        `/v3/playlist/${playlist.id}`,
        security,
        { name: 'Counted', songIds: [1, 4] },
        {
          'if-match': etag,
        },
      );
      expect(replaced.statusCode, replaced.body).toBe(200);
      // The live notifier's NOTIFY of a write (this one's, or the create's before it) goes after its commit, on a
      // connection of its own, whenever its turn comes: not a round trip of the edit.
      const sent = t.queries
        .slice(before)
        .map((q) => q.sql)
        .filter((statement) => !statement.startsWith('SELECT pg_notify('));
      const catalogReads = sent.filter((statement) => /from "songs"/i.test(statement));
      expect(catalogReads, sent.join('\n')).toHaveLength(1);
      if (dialect === 'postgres') {
        const writes = sent.filter((statement) =>
          /^(\/\* prepared: [a-z-]+ \*\/)?\s*(with|insert|update|delete)\b/i.test(statement),
        );
        expect(writes, sent.join('\n')).toHaveLength(1);
        expect(writes[0]).toMatch(/^\/\* prepared: playlist-edit \*\/\s*with locked as materialized/i);
        // Four round trips in all, with no transaction: the access read, which reads the song count too (its current
        // revision's; a long playlist's edit waits among the large requests), the row with its entries, the songs,
        // and the write, which
        // writes only if the playlist is still at the version read.
        expect(sent, sent.join('\n')).toHaveLength(4);
        expect(sent[0]).toMatch(/^\/\* prepared: playlist-access-counted \*\/[^]*"song_count"/);
        expect(sent[1]).toMatch(/^\/\* prepared: row-with-entries \*\//);
        expect(sent[1]).not.toMatch(/FOR UPDATE/);
        expect(sent[3]).toBe(writes[0]);
      }
      expect(ids(replaced.json())).toEqual([1, 4]);
      expect(ids((await get(playlist.id, security)).json())).toEqual([1, 4]);
      const versions = await t.app.inject({ url: `/v3/playlist/${playlist.id}/versions/1`, headers: { security } });
      expect(ids(versions.json())).toEqual([1, 2, 3]);
    });

    if (dialect === 'postgres') {
      it("waits a second at most for another instance's edit of the playlist, then answers 503", async () => {
        const security = await t.addUser();
        const playlist = await createPlaylist(t.app, security, 'Locked', [1, 2]);
        const url = `/v3/playlist/${playlist.id}`;
        // Another instance's edit, as the database sees it: a transaction that holds the playlist's row.
        await t.db.kysely.connection().execute(async (other) => {
          await sql`BEGIN`.execute(other);
          try {
            await sql`SELECT id FROM playlists WHERE id = ${playlist.id} FOR UPDATE`.execute(other);
            const started = performance.now();
            const waited = await edit('PATCH', url, security, { name: 'Later' });
            const ms = performance.now() - started;
            expectError(waited, 503);
            expect(waited.headers['retry-after']).toBeDefined();
            expect(ms).toBeGreaterThanOrEqual(900);
            expect(ms).toBeLessThan(5000);
          } finally {
            await sql`ROLLBACK`.execute(other);
          }
        });
        const after = await edit('PATCH', url, security, { name: 'Later' });
        expect(after.statusCode, after.body).toBe(200);
        expect(after.json<PlaylistBody>().name).toBe('Later');
      });
    }

    if (dialect === 'postgres') {
      it("counts an edited playlist's songs in a read of its own, never in another request's batch", async () => {
        const alice = await t.addUser();
        const bob = await t.addUser();
        const mine = await createPlaylist(t.app, alice, 'Edited meanwhile', [1, 2, 3]);
        const theirs = await createPlaylist(t.app, bob, 'Read meanwhile', [4]);
        const before = t.queries.length;
        const [edited, read] = await Promise.all([
          edit('PATCH', `/v3/playlist/${mine.id}`, alice, { name: 'Edited' }),
          get(theirs.id, bob),
        ]);
        expect(edited.statusCode, edited.body).toBe(200);
        expect(read.statusCode, read.body).toBe(200);
        const sent = t.queries.slice(before).map((q) => q.sql);
        const batched = sent.filter((statement) => /prepared: playlist-access \*\//.test(statement));
        expect(batched.length, sent.join('\n')).toBeGreaterThan(0);
        for (const statement of batched) expect(statement).not.toMatch(/playlist_songs/);
        expect(sent.filter((statement) => /prepared: playlist-access-counted/.test(statement))).toHaveLength(1);
      });

      /**
       * Another instance's edit of the playlist, held open in a transaction on `other`: song 3 appended, a new
       * version; with `songsLocked`, the catalog's table locked too, so that an edit's read of its songs waits.
       */
      async function appendHeld(other: Kysely<Database>, playlistId: number, songsLocked = false) {
        await sql`SELECT id FROM playlists WHERE id = ${playlistId} FOR UPDATE`.execute(other);
        const last = await sql<{ ord: string }>`SELECT max(ord) AS ord FROM playlist_songs
          WHERE playlist_id = ${playlistId}`.execute(other);
        const ord = generateKeyBetween(last.rows[0]!.ord, null);
        await sql`INSERT INTO playlist_songs (playlist_id, entry, ord, song_id)
          VALUES (${playlistId}, 100, ${ord}, 3)`.execute(other);
        await sql`UPDATE playlists SET version = version + 1, next_entry = 101 WHERE id = ${playlistId}`.execute(other);
        if (songsLocked) await sql`LOCK TABLE songs IN ACCESS EXCLUSIVE MODE`.execute(other);
      }

      /**
       * Once the statement `logged` has been answered since `from` (in the test app's log) and a statement of this
       * database's waits for a lock (10 s at most): what the waiting ones wait for, `transactionid` for a row another
       * transaction holds, `relation` for a table. (Their text is no help: a prepared statement can wait while it is
       * bound, before the server shows it as running.)
       */
      async function lockWaited(other: Kysely<Database>, from: number, logged: RegExp): Promise<string[]> {
        for (let i = 0; i < 200; i++) {
          if (t.queries.slice(from).some((q) => logged.test(q.sql))) {
            const waiting = await sql<{ wait_event: string }>`SELECT wait_event FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(other);
            if (waiting.rows.length > 0) return waiting.rows.map((row) => row.wait_event);
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return [];
      }

      /**
       * An append of song 4 sent while `appendHeld` holds another instance's edit, committed once the append waits:
       * what it waited for, and the statements logged meanwhile, each once answered, among the test's own (its polls,
       * its `COMMIT`) and any the app runs of its own accord.
       */
      async function appendBeside(security: string, playlistId: number, songsLocked: boolean, song = 4) {
        const before = t.queries.length;
        let waited: string[] = [];
        const othersCommit = sql`COMMIT`.compile(t.db.kysely);
        const answer = await t.db.kysely.connection().execute(async (other) => {
          await sql`BEGIN`.execute(other);
          try {
            await appendHeld(other, playlistId, songsLocked);
            const appending = edit('POST', `/v3/playlist/${playlistId}/songs`, security, { songIds: [song] });
            // Held, the row makes the edit start again in a transaction, which waits for it; the catalog's table
            // makes it wait for its songs, once it has read the playlist.
            waited = await lockWaited(
              other,
              before,
              songsLocked ? /^\/\* prepared: row-with-entries \*\// : /^BEGIN; SET LOCAL lock_timeout/,
            );
            await other.executeQuery(othersCommit);
            return await appending;
          } catch (error) {
            await sql`ROLLBACK`.execute(other);
            throw error;
          }
        });
        const logged = t.queries.slice(before);
        const sent = logged.map((q) => q.sql);
        const committed = logged.indexOf(othersCommit);
        expect(committed, sent.join('\n')).toBeGreaterThan(0);
        expect(answer.statusCode, answer.body).toBe(200);
        expect(ids(answer.json())).toEqual([1, 2, 3, song]);
        expect(ids((await get(playlistId, security)).json())).toEqual([1, 2, 3, song]);
        // The write made on the version read first wrote nothing; the edit was worked out again in a transaction,
        // which locked the row and read it after the other's commit.
        const written = sent.filter((statement) => /^\/\* prepared: playlist-edit \*\//.test(statement));
        expect(written, sent.join('\n')).toHaveLength(2);
        const restarted = sent.indexOf('BEGIN; SET LOCAL lock_timeout = 1000');
        expect(restarted, sent.join('\n')).toBeGreaterThan(sent.indexOf(written[0]!));
        const locked = sent.findIndex((statement) => /^\/\* prepared: row-for-write-with-entries \*\//.test(statement));
        expect(locked, sent.join('\n')).toBeGreaterThan(restarted);
        const secondWrite = sent.indexOf(written[1]!, locked);
        expect(secondWrite, sent.join('\n')).toBeGreaterThan(locked);
        expect(sent.indexOf('COMMIT', secondWrite), sent.join('\n')).toBeGreaterThan(secondWrite);
        const read = sent.findIndex((statement) => /^\/\* prepared: row-with-entries \*\//.test(statement));
        return { waited, sent, read, firstWrite: sent.indexOf(written[0]!), othersCommit: committed };
      }

      it("builds on another instance's edit that holds the playlist, waiting for it only in a transaction", async () => {
        const security = await t.addUser();
        const playlist = await createPlaylist(t.app, security, 'Raced', [1, 2]);
        const { waited, sent, firstWrite, othersCommit } = await appendBeside(security, playlist.id, false);
        // The write on the version read first found the row held and went on at once, before the other's commit:
        // what waited for the row was the transaction it started again in.
        expect(waited, sent.join('\n')).toContain('transactionid');
        expect(firstWrite, sent.join('\n')).toBeLessThan(othersCommit);
      });

      it("builds on another instance's edit committed after it read the playlist", async () => {
        const security = await t.addUser();
        const playlist = await createPlaylist(t.app, security, 'Raced after', [1, 2]);
        // The append reads the playlist as it was (its read answered before the other's COMMIT was sent), then waits
        // for the catalog's table, which the other holds until it commits: so its write comes after the commit, and
        // finds the playlist at another version, held by nobody. (The log's order after the COMMIT is sent is only
        // the order in which answers were read here, not the server's.)
        // A song no other test here adds: the service reads a song of the catalog once for each catalog version.
        const { waited, sent, read, othersCommit } = await appendBeside(security, playlist.id, true, 240);
        expect(waited, sent.join('\n')).toContain('relation');
        expect(read, sent.join('\n')).toBeGreaterThanOrEqual(0);
        expect(read, sent.join('\n')).toBeLessThan(othersCommit);
      });
    }

    it('renames and replaces songs with a merge patch; the answer is what GET then answers, with its ETag', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Before', [1, 2, 3]);
      const before = await get(created.id, security);
      const response = await edit(
        'PATCH',
        `/v3/playlist/${created.id}`,
        security,
        { name: 'After' },
        {
          'content-type': 'application/merge-patch+json',
        },
      );
      expect(response.statusCode).toBe(200);
      expect(response.json<PlaylistBody>()).toMatchObject({ id: created.id, name: 'After' });
      expect(ids(response.json())).toEqual([1, 2, 3]);
      const after = await get(created.id, security);
      expect(after.body).toBe(response.body);
      expect(after.headers.etag).toBe(response.headers.etag);
      expect(after.headers.etag).not.toBe(before.headers.etag);

      const songs = await edit('PATCH', `/v3/playlists/${created.id}`, security, { songIds: [5, 5, 4] });
      expect(songs.statusCode).toBe(200);
      expect(songs.json<PlaylistBody>().name).toBe('After');
      expect(ids(songs.json())).toEqual([5, 5, 4]);
    });

    it('applies a JSON Patch all or nothing: add, move, remove, test; 409 for a failed test, 400 for another path', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Patched', [1, 2, 3]);
      const url = `/v3/playlist/${created.id}`;
      const type = { 'content-type': 'application/json-patch+json' };
      const ok = await edit(
        'PATCH',
        url,
        security,
        [
          { op: 'test', path: '/name', value: 'Patched' },
          { op: 'add', path: '/songs/-', value: { id: 7 } },
          { op: 'move', from: '/songs/0', path: '/songs/3' },
          { op: 'remove', path: '/songs/0' },
        ],
        type,
      );
      expect(ok.statusCode).toBe(200);
      expect(ids(ok.json())).toEqual([3, 7, 1]);

      const failed = await edit(
        'PATCH',
        url,
        security,
        [
          { op: 'remove', path: '/songs/0' },
          { op: 'test', path: '/name', value: 'Something else' },
        ],
        type,
      );
      expectError(failed, 409);
      const bad = await edit('PATCH', url, security, [{ op: 'replace', path: '/owner', value: 1 }], type);
      expectError(bad, 400);
      const past = await edit('PATCH', url, security, [{ op: 'remove', path: '/songs/9' }], type);
      expectError(past, 409);
      expect(ids((await get(created.id, security)).json())).toEqual([3, 7, 1]);
    });

    it('replaces a whole playlist with PUT, and inserts songs with POST …/songs', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Old', [1]);
      const put = await edit('PUT', `/v3/playlist/${created.id}`, security, { name: 'New', songIds: [2, 3] });
      expect(put.statusCode).toBe(200);
      expect(put.json<PlaylistBody>().name).toBe('New');
      expect(ids(put.json())).toEqual([2, 3]);
      expectError(await edit('PUT', `/v3/playlist/${created.id}`, security, { name: 'Only a name' }), 400);

      const appended = await edit('POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [9, 8] });
      expect(appended.statusCode).toBe(200);
      expect(ids(appended.json())).toEqual([2, 3, 9, 8]);
      const inserted = await edit('POST', `/v3/playlists/${created.id}/songs`, security, {
        songIds: [4],
        position: 1,
      });
      expect(ids(inserted.json())).toEqual([2, 4, 3, 9, 8]);
      expectError(
        await edit('POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [4], position: 99 }),
        409,
      );
      expectError(await edit('POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [999_999] }), 422);
    });

    it("refuses a merge patch create would refuse, with create's sentence, whatever type it is sent as", async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Kept', [1]);
      const cases: [string, RegExp][] = [
        ['[]', /^The request body must be a JSON object\.$/],
        ['"x"', /must be a JSON object/],
        ['{"name": null}', /^"name" must be a string\.$/],
        ['{"songIds": null}', /^"songIds" must be an array\.$/],
        ['{"name": ["x"]}', /"name" must be a string/],
        ['{"name": "   "}', /"name" must not be blank/],
        [`{"name": "${'x'.repeat(201)}"}`, /"name" must be at most 200 characters long/],
        ['{"songIds": "1,2"}', /"songIds" must be an array/],
        ['{"songIds": [1, "2"]}', /"songIds\[1\]" must be an integer/],
        ['{"songIds": [1, 0]}', /"songIds\[1\]" must be at least 1/],
      ];
      const types = [
        'application/merge-patch+json',
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
      ];
      for (const type of types) {
        for (const [payload, message] of cases) {
          const response = await t.app.inject({
            method: 'PATCH',
            url: `/v3/playlist/${created.id}`,
            headers: { security, 'content-type': type },
            payload,
          });
          expect(expectError(response, 400).errormsg, `${type} ${payload}`).toMatch(message);
        }
      }
      const url = `/v3/playlist/${created.id}/songs`;
      const insert = (body: unknown) => edit('POST', url, security, body);
      expect(expectError(await insert({ songIds: [1], position: -1 }), 400).errormsg).toMatch(
        /"position" must be at least 0/,
      );
      expect(expectError(await insert({ songIds: [1], position: 1.5 }), 400).errormsg).toMatch(
        /"position" must be an integer/,
      );
      expect(expectError(await insert({ songIds: [0] }), 400).errormsg).toMatch(/"songIds\[0\]" must be at least 1/);
      expect((await get(created.id, security)).json<PlaylistBody>()).toMatchObject({
        name: 'Kept',
        songs: [{ id: 1 }],
      });
    });

    it('honours If-Match: the current ETag or * applies, another answers 412 with the current ETag and changes nothing', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Guarded', [1, 2]);
      const url = `/v3/playlist/${created.id}/songs`;
      const current = (await get(created.id, security)).headers.etag as string;
      const first = await edit('POST', url, security, { songIds: [3] }, { 'if-match': current });
      expect(first.statusCode).toBe(200);
      const stale = await edit('POST', url, security, { songIds: [4] }, { 'if-match': current });
      const error = expectError(stale, 412);
      expect(error.errormsg).toMatch(/If-Match/);
      expect(stale.headers.etag).toBe(first.headers.etag);
      expect(
        await edit('POST', url, security, { songIds: [4] }, { 'if-match': `W/${first.headers.etag as string}` }),
      ).toMatchObject({ statusCode: 412 });
      const any = await edit('POST', url, security, { songIds: [5] }, { 'if-match': '*' });
      expect(ids(any.json())).toEqual([1, 2, 3, 5]);
    });

    it('lets exactly one of twelve edits racing with the same If-Match through', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Raced', [1]);
      const etag = (await get(created.id, security)).headers.etag as string;
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_v, i) =>
          edit('POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [10 + i] }, { 'if-match': etag }),
        ),
      );
      const statuses = answers.map((a) => a.statusCode).sort();
      expect(statuses).toEqual([200, ...Array<number>(11).fill(412)]);
    });

    it('keeps every one of many appends sent at once, without a precondition', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Crowded', []);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_v, i) =>
          edit('POST', `/v3/playlist/${created.id}/songs`, security, { songIds: [i + 1] }),
        ),
      );
      expect(answers.every((a) => a.statusCode === 200)).toBe(true);
      expect(ids((await get(created.id, security)).json()).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_v, i) => i + 1),
      );
    });

    it('answers 404 to a stranger and 410 to the owner of a deleted playlist before any precondition', async () => {
      const owner = await t.addUser();
      const stranger = await t.addUser();
      const created = await createPlaylist(t.app, owner, 'Mine', [1]);
      const url = `/v3/playlist/${created.id}`;
      expectError(await edit('PATCH', url, stranger, { name: 'Theirs' }, { 'if-match': '"nope"' }), 404);
      expectError(await edit('PUT', url, stranger, { name: 'Theirs', songIds: [] }), 404);
      expectError(await edit('POST', `${url}/songs`, stranger, { songIds: [1] }), 404);
      await t.app.inject({ method: 'DELETE', url, headers: { security: owner } });
      expectError(await edit('PATCH', url, owner, { name: 'Back' }, { 'if-match': '"nope"' }), 410);
      expectError(await edit('PATCH', '/v3/playlist/999999999', owner, { name: 'None' }), 404);
    });

    it('answers 415 with Accept-Patch for another PATCH body type, and 409 over the songs limit', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Typed', [1]);
      const url = `/v3/playlist/${created.id}`;
      const xml = await t.app.inject({
        method: 'PATCH',
        url,
        headers: { security, 'content-type': 'application/xml' },
        payload: '<name>x</name>',
      });
      expectError(xml, 415);
      expect(xml.headers['accept-patch']).toBe('application/merge-patch+json, application/json-patch+json');
      expect(xml.json<{ errormsg: string }>().errormsg).toMatch(/^A PATCH takes application\/merge-patch\+json/);
      const untyped = await t.app.inject({ method: 'PATCH', url, headers: { security }, payload: 'name=x' });
      expectError(untyped, 415);
      expect(untyped.headers['accept-patch']).toBe(xml.headers['accept-patch']);
      expect((await get(created.id, security)).json<PlaylistBody>().name).toBe('Typed');
      const tooMany = Array.from({ length: t.config.limits.songsMax + 1 }, () => 1);
      expectError(await edit('PATCH', url, security, { songIds: tooMany }), 409);
    });

    it('shows an edit in pages, searches and the cover at once, after they were read', async () => {
      const security = await t.addUser();
      const created = await createPlaylist(t.app, security, 'Morning Tunes', [1, 2]);
      const list = () => t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security } });
      const search = (words: string) =>
        t.app.inject({ method: 'GET', url: `/v3/playlist?search=${words}`, headers: { security } });
      const cover = () =>
        t.app.inject({ method: 'GET', url: `/v3/playlist/${created.id}/image?size=64`, headers: { security } });
      const warmList = await list();
      expect((await search('morning')).json()).toHaveLength(1);
      const warmCover = await cover();

      const renamed = await edit('PATCH', `/v3/playlist/${created.id}`, security, { name: 'Evening Tunes' });
      expect(renamed.statusCode).toBe(200);
      const listed = await list();
      expect(listed.json<PlaylistBody[]>()[0]!.name).toBe('Evening Tunes');
      expect(listed.headers.etag).not.toBe(warmList.headers.etag);
      expect((await search('morning')).json()).toEqual([]);
      expect((await search('evening')).json<PlaylistBody[]>().map((p) => p.id)).toEqual([created.id]);
      const redrawn = await cover();
      expect(redrawn.statusCode).toBe(200);
      expect(redrawn.headers.etag).not.toBe(warmCover.headers.etag);
    });
  });
}
