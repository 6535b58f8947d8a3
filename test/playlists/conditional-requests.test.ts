import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { addSongs, addUser, createThrough, renameWithCli, uniqueWord } from '../helpers/live-data.js';
import type { PlaylistBody } from '../helpers/requests.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, isErrorBody, type Answer } from '../helpers/traffic.js';

/**
 * Conditional GETs of playlists, lists and searches: a strong `ETag` on one playlist, a weak one on a page, both with
 * `Cache-Control: private, no-cache`, and 304 for a matching `If-None-Match` (RFC 9110 §13.1.2, weak comparison).
 * A tag changes whenever what the answer shows changes, and a matching tag never hides an error.
 */

/** An entity tag: a quoted string of the characters RFC 9110 allows in one. */
const STRONG = /^"[\x21\x23-\x7e]*"$/;
const WEAK = /^W\/"[\x21\x23-\x7e]*"$/;

/** The directives of a `Cache-Control` header, in order of name. */
const directives = (answer: Answer): string[] =>
  (answer.headers.get('cache-control') ?? '')
    .split(',')
    .map((directive) => directive.trim().toLowerCase())
    .filter((directive) => directive !== '')
    .sort();

const REVALIDATE = ['no-cache', 'private'];

/** Asserts a 200 with a strong ETag and `private, no-cache`, and returns the tag. */
function strongTag(answer: Answer): string {
  expect(answer.status, answer.body).toBe(200);
  const etag = answer.headers.get('etag') ?? '(no ETag header)';
  expect(etag, 'a strong ETag').toMatch(STRONG);
  expect(directives(answer)).toEqual(REVALIDATE);
  return etag;
}

/** Asserts a 200 with a weak ETag and `private, no-cache`, and returns the tag. */
function weakTag(answer: Answer): string {
  expect(answer.status, answer.body).toBe(200);
  const etag = answer.headers.get('etag') ?? '(no ETag header)';
  expect(etag, 'a weak ETag').toMatch(WEAK);
  expect(directives(answer)).toEqual(REVALIDATE);
  return etag;
}

function expectNotModified(answer: Answer, etag: string, what: string): void {
  expect(answer.status, `${what}: ${answer.body}`).toBe(304);
  expect(answer.body, what).toBe('');
  expect(answer.headers.get('etag'), what).toBe(etag);
  expect(directives(answer), what).toEqual(REVALIDATE);
}

function expectError(answer: Answer, status: number, what: string): void {
  expect(answer.status, `${what}: ${answer.body}`).toBe(status);
  expect(isErrorBody(answer.body), `${what}: ${answer.body}`).toBe(true);
}

describeEachEmptyDatabase('conditional requests (%s)', (database) => {
  let db: Db;
  let server: ServerProcess;
  let nextSongId = 920_000;

  beforeAll(async () => {
    server = await startServer({ databaseUrl: database.url });
    db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
  });
  afterAll(async () => {
    await killAllServers();
    await db.close();
  });

  const get = (path: string, headers: Record<string, string>): Promise<Answer> =>
    call(`${server.url}${path}`, { headers });

  const create = (security: string, name: string, songIds: number[]) => createThrough(server, security, name, songIds);

  async function remove(security: string, id: number): Promise<void> {
    const answer = await call(`${server.url}/v3/playlist/${id}`, { method: 'DELETE', headers: { security } });
    expect(answer.status, answer.body).toBe(200);
  }

  /** A song of its own, with a title word found nowhere else, and a way to rename it with the CLI. */
  async function ownSong(stem: string) {
    const id = nextSongId++;
    const song = { id, title: `${uniqueWord(stem)} ballad`, artist: 'Etag Quartet' };
    await addSongs(db, [song]);
    const renamed = { id, title: `${uniqueWord(stem)} reprise`, artist: 'Etag Quintet' };
    return { song, renamed, rename: () => renameWithCli(database.url, [renamed]) };
  }

  describe.each(['/v3/playlist', '/v3/playlists'])('GET %s/{id}', (base) => {
    it('answers a strong ETag and private, no-cache: the same for the same playlist, another for another', async () => {
      const security = await addUser(db);
      const first = await create(security, 'Tagged one', [1, 2, 3]);
      const second = await create(security, 'Tagged two', [1, 2, 3]);
      const answer = await get(`${base}/${first.id}`, { security });
      const etag = strongTag(answer);
      expect(JSON.parse(answer.body)).toEqual(first);
      const again = await get(`${base}/${first.id}`, { security });
      expect(strongTag(again)).toBe(etag);
      expect(again.body).toBe(answer.body);
      expect(strongTag(await get(`${base}/${second.id}`, { security }))).not.toBe(etag);
    });

    it('answers 304 to a matching If-None-Match (*, the tag, weak or in a list), 200 to another tag', async () => {
      const security = await addUser(db);
      const playlist = await create(security, 'Revalidated', [4, 5]);
      const path = `${base}/${playlist.id}`;
      const etag = strongTag(await get(path, { security }));
      for (const header of [etag, '*', `W/${etag}`, `"x", ${etag}`, `"x",${etag} , "y"`]) {
        expectNotModified(await get(path, { security, 'if-none-match': header }), etag, `If-None-Match: ${header}`);
      }
      // Any other tag, the right one cut short among them, gets the playlist.
      for (const header of ['"x"', 'W/"x"', `${etag.slice(0, -2)}"`, '"x", "y"']) {
        const answer = await get(path, { security, 'if-none-match': header });
        expect(strongTag(answer), `If-None-Match: ${header}`).toBe(etag);
        expect(JSON.parse(answer.body)).toEqual(playlist);
      }
    });

    it('never hides an error behind a matching If-None-Match: 404 to another user, 401 without a credential, 410 once deleted', async () => {
      const security = await addUser(db);
      const stranger = await addUser(db);
      const playlist = await create(security, 'Not yours', [6]);
      const path = `${base}/${playlist.id}`;
      const etag = strongTag(await get(path, { security }));
      for (const header of [etag, '*']) {
        expectError(await get(path, { security: stranger, 'if-none-match': header }), 404, `another user, ${header}`);
        expectError(await get(path, { 'if-none-match': header }), 401, `no credential, ${header}`);
        expectError(await get(`${base}/${playlist.id + 1000}`, { security, 'if-none-match': header }), 404, header);
      }
      await remove(security, playlist.id);
      for (const header of [etag, '*']) {
        expectError(await get(path, { security, 'if-none-match': header }), 410, `deleted, ${header}`);
      }
    });
  });

  it('gives a playlist a new ETag when a catalog import renames one of its songs', async () => {
    const security = await addUser(db);
    const { song, renamed, rename } = await ownSong('tagged');
    const playlist = await create(security, 'Renamed inside', [1, song.id]);
    const path = `/v3/playlist/${playlist.id}`;
    const before = strongTag(await get(path, { security }));
    expectNotModified(await get(path, { security, 'if-none-match': before }), before, 'before the import');

    await rename();

    const answer = await get(path, { security, 'if-none-match': before });
    const after = strongTag(answer);
    expect(after).not.toBe(before);
    expect((JSON.parse(answer.body) as PlaylistBody).songs[1]).toEqual(renamed);
    expectNotModified(await get(path, { security, 'if-none-match': after }), after, 'after the import');
  });

  it('answers a list page with a weak ETag that changes with the page: count, deletes, renames, offset', async () => {
    const security = await addUser(db);
    const { song, renamed, rename } = await ownSong('paged');
    const first = await create(security, 'Page one', [song.id]);
    const second = await create(security, 'Page two', [2]);
    await create(security, 'Page three', [3]);
    const path = '/v3/playlist?limit=2';

    const answer = await get(path, { security });
    const initial = weakTag(answer);
    expect(JSON.parse(answer.body)).toEqual([first, second]);
    expect(answer.headers.get('x-total-count')).toBe('3');
    expect(weakTag(await get(path, { security }))).toBe(initial);
    expectNotModified(await get(path, { security, 'if-none-match': initial }), initial, 'the same page');
    expect(weakTag(await get('/v3/playlist?limit=2&offset=1', { security }))).not.toBe(initial);

    // A playlist after the page: the same two playlists, but another total.
    await create(security, 'Page four', [4]);
    const longer = await get(path, { security, 'if-none-match': initial });
    const counted = weakTag(longer);
    expect(counted).not.toBe(initial);
    expect(longer.body).toBe(answer.body);
    expect(longer.headers.get('x-total-count')).toBe('4');

    await remove(security, second.id);
    const shorter = await get(path, { security, 'if-none-match': counted });
    const deleted = weakTag(shorter);
    expect([initial, counted]).not.toContain(deleted);
    expect((JSON.parse(shorter.body) as PlaylistBody[]).map((p) => p.id)).not.toContain(second.id);

    await rename();
    const retitled = await get(path, { security, 'if-none-match': deleted });
    const afterRename = weakTag(retitled);
    expect([initial, counted, deleted]).not.toContain(afterRename);
    expect((JSON.parse(retitled.body) as PlaylistBody[])[0]?.songs).toEqual([renamed]);
    expectNotModified(await get(path, { security, 'if-none-match': afterRename }), afterRename, 'the new page');
  });

  it('answers a search with a weak ETag that changes with what it finds', async () => {
    const security = await addUser(db);
    const { song, renamed, rename } = await ownSong('sought');
    const word = uniqueWord('mixtape');
    const found = await create(security, `Found ${word}`, [song.id]);
    await create(security, 'Not found', [song.id]);
    const path = `/v3/playlist?search=${word}`;

    const answer = await get(path, { security });
    const initial = weakTag(answer);
    expect(JSON.parse(answer.body)).toEqual([found]);
    expect(weakTag(await get(path, { security }))).toBe(initial);
    expectNotModified(await get(path, { security, 'if-none-match': initial }), initial, 'the same search');
    expect(weakTag(await get(`/v3/playlist?search=${word}&offset=1`, { security }))).not.toBe(initial);

    const another = await create(security, `Also ${word}`, [1]);
    const more = await get(path, { security, 'if-none-match': initial });
    const grown = weakTag(more);
    expect(grown).not.toBe(initial);
    expect(JSON.parse(more.body)).toEqual([found, another]);

    await rename();
    const retitled = await get(path, { security, 'if-none-match': grown });
    const afterRename = weakTag(retitled);
    expect([initial, grown]).not.toContain(afterRename);
    expect((JSON.parse(retitled.body) as PlaylistBody[])[0]?.songs).toEqual([renamed]);

    await remove(security, found.id);
    const fewer = await get(path, { security, 'if-none-match': afterRename });
    expect([initial, grown, afterRename]).not.toContain(weakTag(fewer));
    expect(JSON.parse(fewer.body)).toEqual([another]);
  });

  it('keeps Cache-Control: no-store on creates, deletes and errors', async () => {
    const security = await addUser(db);
    const noStore = (answer: Answer, status: number, what: string) => {
      expect(answer.status, `${what}: ${answer.body}`).toBe(status);
      expect(directives(answer), what).toEqual(['no-store']);
    };
    const post = (body: unknown) => call(`${server.url}/v3/playlist`, { method: 'POST', headers: { security }, body });
    const created = await post({ name: 'Short-lived', songIds: [1] });
    noStore(created, 200, 'POST');
    const { id } = JSON.parse(created.body) as PlaylistBody;
    noStore(await post({ name: 'Unknown songs', songIds: [99_999_999] }), 422, 'POST with an unknown song');
    noStore(await post({ name: '' }), 400, 'POST without songIds');
    const del = () => call(`${server.url}/v3/playlist/${id}`, { method: 'DELETE', headers: { security } });
    noStore(await del(), 200, 'DELETE');
    noStore(await del(), 410, 'DELETE again');
    noStore(await get(`/v3/playlist/${id}`, { security }), 410, 'GET of a deleted playlist');
    noStore(await get(`/v3/playlist/${id + 1000}`, { security }), 404, 'GET of no playlist');
    noStore(await get(`/v3/playlist/${id}`, {}), 401, 'GET without a credential');
    noStore(await get('/v3/playlist?limit=0', { security }), 400, 'a list with a bad limit');
  });
});
