import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { songSearchColumns } from '../../src/catalog/catalog.service.js';
import { playlistDocument } from '../../src/domain/search-text.js';
import type { TestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, type PlaylistBody } from '../helpers/requests.js';

// A search reads only its caller's documents, a slice at a time with the event loop free in between, for a bounded
// time, one at a time per user: whatever the data and the words, no search can stall the other users, and what it
// costs says nothing of what other users' playlists contain.

/** `㌖` normalises to the six letters `キロメートル`: a 200-character name becomes 1 200 letters of search text. */
const WIDE = '㌖';

/** The user's id, from the name their credential carries. */
async function userId(t: TestApp, security: string): Promise<number> {
  const name = Buffer.from(security.replace(/^Basic /, ''), 'base64')
    .toString('utf8')
    .split(':')[0]!;
  const row = await t.db.kysely.selectFrom('users').select('id').where('name', '=', name).executeTakeFirstOrThrow();
  return row.id;
}

/** Playlists with these names (and no songs) for the user, written straight to the database: a library, quickly. */
async function addLibrary(t: TestApp, ownerId: number, names: readonly string[]): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < names.length; start += 200) {
    const batch = names.slice(start, start + 200);
    await t.db.kysely.transaction().execute(async (trx) => {
      const made = await trx
        .insertInto('playlists')
        .values(batch.map((name) => ({ owner_id: ownerId, name, created_at: Date.now() })))
        .returning('id')
        .execute();
      await trx
        .insertInto('playlist_documents')
        .values(
          made.map((row, i) => ({ owner_id: ownerId, playlist_id: row.id, doc: playlistDocument(batch[i]!, []) })),
        )
        .execute();
      await sql`UPDATE users SET playlist_count = playlist_count + ${made.length} WHERE id = ${ownerId}`.execute(trx);
      ids.push(...made.map((row) => row.id));
    });
  }
  return ids;
}

const search = (t: TestApp, security: string, words: string, extra = '') =>
  t.app.inject({ url: `/v3/playlist?search=${encodeURIComponent(words)}${extra}`, headers: { security } });

const names = (response: LightMyRequestResponse) => response.json<PlaylistBody[]>().map((p) => p.name);

// These check what searches find, not their time limit: a generous one, so that a busy machine cannot turn a
// search into a 503.
const UNHURRIED = { MIXTAPE_SEARCH_TIMEOUT_MS: '30000' };

describeEachDatabase('search, read a slice at a time, on %s', UNHURRIED, (t) => {
  it('finds, pages and counts every match of a library read in many slices', async () => {
    const security = await t.addUser();
    const owner = await userId(t, security);
    const all = Array.from({ length: 1500 }, (_, i) => (i % 7 === 3 ? `Zqxjv ${i}` : `List ${i}`));
    await addLibrary(t, owner, all);
    const marked = all.filter((name) => name.startsWith('Zqxjv'));

    const first = await search(t, security, 'zqxjv', '&limit=100');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.headers['x-total-count']).toBe(String(marked.length));
    expect(names(first)).toEqual(marked.slice(0, 100));
    const last = await search(t, security, 'ZQXJV', `&limit=100&offset=${marked.length - 10}`);
    expect(names(last)).toEqual(marked.slice(-10));
    const past = await search(t, security, 'zqxjv', `&offset=${marked.length + 5}`);
    expect(past.json()).toEqual([]);
    expect(past.headers['x-total-count']).toBe(String(marked.length));
    // Several words must all match.
    expect(names(await search(t, security, 'zqxjv 1403'))).toEqual(['Zqxjv 1403']);
  });

  it("reads only the caller's own documents, so that another user's playlists cannot change what it costs", async () => {
    const eve = await t.addUser();
    const mallory = await t.addUser();
    await addLibrary(
      t,
      await userId(t, eve),
      Array.from({ length: 300 }, () => WIDE.repeat(200)),
    );
    const own = await createPlaylist(t.app, mallory, 'Mallory’s only list', [1]);
    const malloryId = await userId(t, mallory);

    const before = t.queries.length;
    const answer = await search(t, mallory, WIDE.repeat(33));
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual([]);
    const reads = t.queries.slice(before).filter((query) => /playlist_documents/.test(query.sql));
    // One slice: the one document mallory has, read through her key; none of eve's 300.
    expect(reads).toHaveLength(1);
    expect(reads[0]!.sql).toMatch(/"owner_id" = (\$\d+|\?)/);
    expect(reads[0]!.parameters).toContain(malloryId);
    expect(names(await search(t, mallory, 'only list'))).toEqual([own.name]);
  });

  it('counts the search limit on the normalised words, which compatibility characters make longer', async () => {
    const security = await t.addUser();
    // 34 characters as sent, 204 once normalised: over the 200 a search may have.
    const refused = expectError(await search(t, security, WIDE.repeat(34)), 400);
    expect(refused.errormsg).toBe(
      'search is 204 characters long once normalised (characters such as ㌖ or ﬃ stand for several letters); ' +
        'it may be at most 200.',
    );
    expect((await search(t, security, WIDE.repeat(33))).statusCode).toBe(200);
  });
});

describeEachDatabase('hostile searches on %s', { MIXTAPE_SEARCH_TIMEOUT_MS: '10' }, (t) => {
  it('stops a search over its time budget with 503, and keeps one search at a time per user', async () => {
    const trudy = await t.addUser();
    // Names of 1 200 letters of one repeated sequence, searched for a 199-letter word that almost matches
    // everywhere: the worst case of a substring search, several milliseconds a document.
    await addLibrary(
      t,
      await userId(t, trudy),
      Array.from({ length: 3000 }, () => WIDE.repeat(200)),
    );
    const hostile = `${WIDE.repeat(33)}x`;

    // One runs (and runs out of time), one waits for it, the third is refused at once. (Tried a few times: on a busy
    // machine, or while the pool opens a connection for the third, the first may end before the third arrives; then
    // the third waits in turn and all three run out of time. A search that ran out of time is never kept.)
    let replies: LightMyRequestResponse[] = [];
    for (let attempt = 0; attempt < 5; attempt += 1) {
      replies = await Promise.all([search(t, trudy, hostile), search(t, trudy, hostile), search(t, trudy, hostile)]);
      for (const reply of replies) expect([429, 503]).toContain(reply.statusCode);
      if (replies.some((reply) => reply.statusCode === 429)) break;
    }
    expect(replies.map((r) => r.statusCode).sort()).toEqual([429, 503, 503]);
    const slow = replies.find((r) => r.statusCode === 503)!;
    expect(expectError(slow, 503).errormsg).toMatch(/longer than 0\.01 s/);
    expect(slow.headers['retry-after']).toBe('1');
    const refused = replies.find((r) => r.statusCode === 429)!;
    expect(expectError(refused, 429).errormsg).toMatch(/previous searches are still running/);
  });
});

describeEachDatabase('a hostile searcher beside other users on %s', (t) => {
  it("answers other users' small requests at once while one user searches as fast as they can", async () => {
    const trudy = await t.addUser();
    const alice = await t.addUser();
    await addLibrary(
      t,
      await userId(t, trudy),
      Array.from({ length: 3000 }, () => WIDE.repeat(200)),
    );
    const hostile = `${WIDE.repeat(32)}x`;
    const mine = await createPlaylist(t.app, alice, 'Alice', [1, 2]);

    const stop = new AbortController();
    const searches = (async () => {
      let count = 0;
      while (!stop.signal.aborted && count < 50) {
        // Words of their own each time: a search found again would be answered from what was found.
        await Promise.all([search(t, trudy, `${hostile}${count}`), search(t, trudy, `${hostile}${count}`)]);
        count += 1;
      }
      return count;
    })();
    try {
      const worst: number[] = [];
      for (let i = 0; i < 40; i += 1) {
        const started = performance.now();
        const [one, health] = await Promise.all([
          t.app.inject({ url: `/v3/playlist/${mine.id}`, headers: { security: alice } }),
          t.app.inject({ url: '/readyz' }),
        ]);
        worst.push(performance.now() - started);
        expect(one.statusCode).toBe(200);
        expect(health.statusCode).toBe(200);
      }
      // A bound in seconds, not milliseconds: a search holding the event loop would take several times longer.
      expect(Math.max(...worst)).toBeLessThan(1000);
    } finally {
      stop.abort();
    }
    expect(await searches).toBeGreaterThan(0);
  });
});

/** Songs with these titles (each on an album of its own), written straight to the catalog; their ids, in order. */
async function addSongs(t: TestApp, titles: readonly string[]): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < titles.length; start += 200) {
    const batch = titles.slice(start, start + 200);
    const made = await t.db.kysely
      .insertInto('songs')
      .values(
        batch.map((title, i) => ({
          title,
          artist: 'Bench Artist',
          album: `Album ${start + i}`,
          genre: 'Test',
          duration: 180,
          ...songSearchColumns({ title, artist: 'Bench Artist', album: `Album ${start + i}`, genre: 'Test' }),
          added: Date.now(),
        })),
      )
      .returning('id')
      .execute();
    ids.push(...made.map((row) => row.id));
  }
  return ids;
}

const songSearch = (t: TestApp, security: string, words: string, extra = '') =>
  t.app.inject({ url: `/v3/song?search=${encodeURIComponent(words)}${extra}`, headers: { security } });

describeEachDatabase('catalog search, read a slice at a time, on %s', UNHURRIED, (t) => {
  it('finds, pages and counts every match of a catalog read in many slices', async () => {
    const security = await t.addUser();
    const titles = Array.from({ length: 1500 }, (_, i) => (i % 7 === 3 ? `Wqzzy Tune ${i}` : `Plain Tune ${i}`));
    const ids = await addSongs(t, titles);
    const marked = ids.filter((_, i) => titles[i]!.startsWith('Wqzzy'));

    const first = await songSearch(t, security, 'wqzzy', '&limit=50');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.headers['x-total-count']).toBe(String(marked.length));
    expect(first.json<{ id: number }[]>().map((song) => song.id)).toEqual(marked.slice(0, 50));
    const last = await songSearch(t, security, 'WQZZY tune', `&limit=50&offset=${marked.length - 10}`);
    expect(last.json<{ id: number }[]>().map((song) => song.id)).toEqual(marked.slice(-10));
    const past = await songSearch(t, security, 'wqzzy', `&offset=${marked.length + 5}`);
    expect(past.json()).toEqual([]);
    expect(past.headers['x-total-count']).toBe(String(marked.length));
    expectError(await songSearch(t, security, WIDE.repeat(40)), 400);
  });
});

describeEachDatabase('hostile catalog searches on %s', { MIXTAPE_SEARCH_TIMEOUT_MS: '10' }, (t) => {
  it('stops a catalog search over its time budget with 503, one at a time per user, sharing the playlist searches’ gate', async () => {
    const trudy = await t.addUser();
    await addSongs(
      t,
      Array.from({ length: 3000 }, () => WIDE.repeat(200)),
    );
    const hostile = `${WIDE.repeat(33)}x`;
    // Signed in once before, so that the three requests below reach the searches in the order they are sent.
    expect((await t.app.inject({ url: '/v3/song/1', headers: { security: trudy } })).statusCode).toBe(200);

    const lone = await songSearch(t, trudy, hostile);
    expect(expectError(lone, 503).errormsg).toMatch(/read the song catalog for longer than 0\.01 s/);
    expect(lone.headers['retry-after']).toBe('1');

    // Catalog and playlist searches share one gate: while two catalog searches of trudy's run or wait, her playlist
    // search is refused. (Tried a few times: on a busy machine the first search may end before the third arrives.
    // Each try searches her playlists for other words, since a repeated search is answered from what it found.)
    let refused: LightMyRequestResponse | undefined;
    for (let attempt = 0; attempt < 5 && refused === undefined; attempt += 1) {
      const replies = await Promise.all([
        songSearch(t, trudy, hostile),
        songSearch(t, trudy, hostile),
        search(t, trudy, `anything${attempt}`),
      ]);
      for (const reply of replies) expect([200, 429, 503]).toContain(reply.statusCode);
      refused = replies.find((reply) => reply.statusCode === 429);
    }
    expect(refused, 'no search was refused while another of the same user ran').toBeDefined();
    expect(expectError(refused!, 429).errormsg).toMatch(/previous searches are still running/);
  });
});
