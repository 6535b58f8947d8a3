import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { runCli } from '../helpers/cli-process.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { addSongs, addUser, createThrough, renameWithCli, uniqueWord } from '../helpers/live-data.js';
import type { PlaylistBody } from '../helpers/requests.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, eventually, isErrorBody, type Answer } from '../helpers/traffic.js';

/**
 * An answer is never served after a delete, a removal or a rename that was acknowledged anywhere: by another
 * instance on the same database, or by the CLI. Every read below comes right after the acknowledgement, with no
 * sleep and no retry, after the same reads were made a few times before (to fill whatever an instance keeps).
 */

const get = (server: ServerProcess, security: string, path: string): Promise<Answer> =>
  call(`${server.url}${path}`, { headers: { security } });

async function remove(server: ServerProcess, security: string, id: number): Promise<void> {
  const answer = await call(`${server.url}/v3/playlist/${id}`, { method: 'DELETE', headers: { security } });
  expect(answer.status, answer.body).toBe(200);
}

/** The playlist a GET answered; fails unless it was 200. */
function playlistOf(answer: Answer): PlaylistBody {
  expect(answer.status, answer.body).toBe(200);
  return JSON.parse(answer.body) as PlaylistBody;
}

/** The page a list or search answered, and its `X-Total-Count`; fails unless it was 200. */
function pageOf(answer: Answer): { playlists: PlaylistBody[]; total: number } {
  expect(answer.status, answer.body).toBe(200);
  return { playlists: JSON.parse(answer.body) as PlaylistBody[], total: Number(answer.headers.get('x-total-count')) };
}

function expectGone(answer: Answer, what: string): void {
  expect(answer.status, `${what}: ${answer.body}`).toBe(410);
  expect(isErrorBody(answer.body), answer.body).toBe(true);
}

describeEachEmptyDatabase('two instances and the CLI on one %s database', (database) => {
  let db: Db;
  let a: ServerProcess;
  let b: ServerProcess;
  let nextSongId = 910_000;

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startServer({ databaseUrl: database.url }),
      startServer({ databaseUrl: database.url }),
    ]);
    db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
  });
  afterAll(async () => {
    await killAllServers();
    await db.close();
  });

  const instances = () => ({ A: a, B: b });

  it.each([
    ['A', 'B'],
    ['B', 'A'],
  ] as const)(
    'a delete acknowledged by %s is seen by the very next get, list and search on %s',
    async (writerName, readerName) => {
      const writer = instances()[writerName];
      const reader = instances()[readerName];
      const security = await addUser(db);
      const word = uniqueWord('tangelo');
      const kept = await createThrough(writer, security, `Kept ${word}`, [1, 2]);
      const doomed = await createThrough(writer, security, `Doomed ${word}`, [3, 4, 5]);
      const other = await createThrough(writer, security, 'Unrelated', [6]);
      const list = '/v3/playlist?limit=100';
      const search = `/v3/playlist?search=${word}`;

      for (let i = 0; i < 3; i++) {
        expect(playlistOf(await get(reader, security, `/v3/playlist/${doomed.id}`))).toEqual(doomed);
        expect(playlistOf(await get(reader, security, `/v3/playlists/${doomed.id}`))).toEqual(doomed);
        expect(pageOf(await get(reader, security, list))).toEqual({ playlists: [kept, doomed, other], total: 3 });
        expect(pageOf(await get(reader, security, search))).toEqual({ playlists: [kept, doomed], total: 2 });
      }

      await remove(writer, security, doomed.id);

      expectGone(await get(reader, security, `/v3/playlist/${doomed.id}`), `GET on ${readerName}`);
      expectGone(await get(reader, security, `/v3/playlists/${doomed.id}`), `GET (plural) on ${readerName}`);
      expect(pageOf(await get(reader, security, list))).toEqual({ playlists: [kept, other], total: 2 });
      expect(pageOf(await get(reader, security, search))).toEqual({ playlists: [kept], total: 1 });
      expect(playlistOf(await get(reader, security, `/v3/playlist/${kept.id}`))).toEqual(kept);
      expectGone(await get(writer, security, `/v3/playlist/${doomed.id}`), `GET on ${writerName}`);
    },
  );

  it.each([
    ['A', 'B'],
    ['B', 'A'],
  ] as const)(
    'an edit acknowledged by %s is what the very next get, file, list, search and cover answer on %s',
    async (writerName, readerName) => {
      const writer = instances()[writerName];
      const reader = instances()[readerName];
      const security = await addUser(db);
      const before = uniqueWord('quince');
      const after = uniqueWord('medlar');
      const edited = await createThrough(writer, security, `Old ${before}`, [1, 2]);
      const other = await createThrough(writer, security, 'Unrelated', [6]);
      const path = `/v3/playlist/${edited.id}`;
      const list = '/v3/playlist?limit=100';
      const cover = `${path}/image?size=64`;
      const m3u8 = `${path}?format=m3u8`;
      const warm = async () => ({
        get: await get(reader, security, path),
        list: await get(reader, security, list),
        cover: await get(reader, security, cover),
        m3u8: await get(reader, security, m3u8),
      });
      let warmed = await warm();
      for (let i = 0; i < 2; i++) warmed = await warm();
      expect(playlistOf(warmed.get)).toEqual(edited);
      expect(pageOf(await get(reader, security, `/v3/playlist?search=${before}`)).total).toBe(1);

      const answer = await call(`${writer.url}${path}`, {
        method: 'PATCH',
        headers: { security, 'content-type': 'application/json', 'if-match': warmed.get.headers.get('etag')! },
        body: { name: `New ${after}`, songIds: [3, 1] },
      });
      const now = playlistOf(answer);
      expect(now).toMatchObject({ id: edited.id, name: `New ${after}` });

      // The list first: its kept answer of the playlist is confirmed by the page's own read, not by a get before it.
      expect(pageOf(await get(reader, security, list))).toEqual({ playlists: [now, other], total: 2 });
      const read = await get(reader, security, path);
      expect(playlistOf(read)).toEqual(now);
      expect(read.headers.get('etag')).toBe(answer.headers.get('etag'));
      expect(pageOf(await get(reader, security, `/v3/playlist?search=${before}`))).toEqual({
        playlists: [],
        total: 0,
      });
      expect(pageOf(await get(reader, security, `/v3/playlist?search=${after}`))).toEqual({
        playlists: [now],
        total: 1,
      });
      const file = await get(reader, security, m3u8);
      expect(file.body).toContain(`New ${after}`);
      expect(file.headers.get('etag')).not.toBe(warmed.m3u8.headers.get('etag'));
      const redrawn = await get(reader, security, cover);
      expect(redrawn.status).toBe(200);
      expect(redrawn.headers.get('etag')).not.toBe(warmed.cover.headers.get('etag'));
    },
  );

  it('lets exactly one of twelve edits with the same If-Match through, sent to both instances at once', async () => {
    const security = await addUser(db);
    const raced = await createThrough(a, security, 'Raced', [1]);
    const path = `/v3/playlist/${raced.id}/songs`;
    const etag = (await get(b, security, `/v3/playlist/${raced.id}`)).headers.get('etag')!;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_v, i) =>
        call(`${(i % 2 === 0 ? a : b).url}${path}`, {
          method: 'POST',
          headers: { security, 'content-type': 'application/json', 'if-match': etag },
          body: { songIds: [10 + i] },
        }),
      ),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, ...Array<number>(11).fill(412)]);
    const songs = playlistOf(await get(a, security, `/v3/playlist/${raced.id}`)).songs;
    expect(songs).toHaveLength(2);
  });

  it('every read that starts after a delete was acknowledged on the other instance answers 410', async () => {
    const security = await addUser(db);
    const playlists: PlaylistBody[] = [];
    for (let i = 0; i < 20; i++) playlists.push(await createThrough(a, security, `Race ${i}`, [i + 1, i + 2]));
    for (let round = 0; round < 2; round++) {
      const warmed = await Promise.all(playlists.map((p) => get(b, security, `/v3/playlist/${p.id}`)));
      expect(warmed.map(playlistOf)).toEqual(playlists);
    }

    const problems: string[] = [];
    let readsAfterAcknowledgement = 0;
    for (const playlist of playlists) {
      const path = `/v3/playlist/${playlist.id}`;
      let acknowledgedAt = Infinity;
      const reads: { startedAt: number; status: number }[] = [];
      // Readers on B keep asking while A deletes, until each has made 3 reads that began after the acknowledgement.
      const reader = async () => {
        let after = 0;
        for (let i = 0; i < 500 && after < 3; i++) {
          const startedAt = performance.now();
          const answer = await get(b, security, path);
          reads.push({ startedAt, status: answer.status });
          if (startedAt > acknowledgedAt) after++;
        }
      };
      const readers = Promise.all([reader(), reader(), reader()]);
      await remove(a, security, playlist.id);
      acknowledgedAt = performance.now();
      const next = await get(b, security, path);
      if (next.status !== 410) problems.push(`playlist ${playlist.id}: the next GET on B answered ${next.status}`);
      await readers;
      for (const read of reads.filter((r) => r.startedAt > acknowledgedAt)) {
        readsAfterAcknowledgement++;
        if (read.status !== 410) {
          const ms = (read.startedAt - acknowledgedAt).toFixed(1);
          problems.push(`playlist ${playlist.id}: a GET on B begun ${ms} ms after the delete answered ${read.status}`);
        }
      }
      for (const read of reads) {
        if (read.status !== 200 && read.status !== 410)
          problems.push(`playlist ${playlist.id}: a GET on B answered ${read.status}`);
      }
    }
    expect(problems).toEqual([]);
    expect(readsAfterAcknowledgement).toBeGreaterThanOrEqual(20 * 3);
  });

  it('a song renamed by `mixtape catalog import` shows in the very next get, list and search on every instance', async () => {
    const security = await addUser(db);
    const [oldTitle, newTitle, oldArtist, newArtist] = ['zyzzyva', 'quokka', 'wombat', 'numbat'].map(uniqueWord);
    const songId = nextSongId++;
    await addSongs(db, [{ id: songId, title: `${oldTitle} nocturne`, artist: `The ${oldArtist}s` }]);
    const playlist = await createThrough(a, security, 'Evening mix', [1, songId, 2]);
    const paths = {
      get: `/v3/playlist/${playlist.id}`,
      plural: `/v3/playlists/${playlist.id}`,
      list: '/v3/playlist?limit=10',
      byOldTitle: `/v3/playlist?search=${oldTitle}`,
      byOldArtist: `/v3/playlist?search=${oldArtist}`,
      byNewTitle: `/v3/playlist?search=${newTitle}`,
      byNewArtist: `/v3/playlist?search=${newArtist}`,
    };
    for (const server of [a, b]) {
      for (let i = 0; i < 3; i++) {
        expect(playlistOf(await get(server, security, paths.get))).toEqual(playlist);
        expect(playlistOf(await get(server, security, paths.plural))).toEqual(playlist);
        expect(pageOf(await get(server, security, paths.list))).toEqual({ playlists: [playlist], total: 1 });
        expect(pageOf(await get(server, security, paths.byOldTitle))).toEqual({ playlists: [playlist], total: 1 });
        expect(pageOf(await get(server, security, paths.byOldArtist))).toEqual({ playlists: [playlist], total: 1 });
        expect(pageOf(await get(server, security, paths.byNewTitle))).toEqual({ playlists: [], total: 0 });
        expect(pageOf(await get(server, security, paths.byNewArtist))).toEqual({ playlists: [], total: 0 });
      }
    }

    await renameWithCli(database.url, [{ id: songId, title: `${newTitle} serenade`, artist: `The ${newArtist}s` }]);

    const renamed: PlaylistBody = {
      ...playlist,
      songs: playlist.songs.map((song) =>
        song.id === songId ? { id: songId, title: `${newTitle} serenade`, artist: `The ${newArtist}s` } : song,
      ),
    };
    for (const server of [a, b]) {
      expect(playlistOf(await get(server, security, paths.get))).toEqual(renamed);
      expect(playlistOf(await get(server, security, paths.plural))).toEqual(renamed);
      expect(pageOf(await get(server, security, paths.list))).toEqual({ playlists: [renamed], total: 1 });
      expect(pageOf(await get(server, security, paths.byNewTitle))).toEqual({ playlists: [renamed], total: 1 });
      expect(pageOf(await get(server, security, paths.byNewArtist))).toEqual({ playlists: [renamed], total: 1 });
      expect(pageOf(await get(server, security, paths.byOldTitle))).toEqual({ playlists: [], total: 0 });
      expect(pageOf(await get(server, security, paths.byOldArtist))).toEqual({ playlists: [], total: 0 });
    }
  });

  it('a user removed by `mixtape user remove` never gets their playlist again, on any instance', async () => {
    const name = uniqueWord('leaver');
    const security = await addUser(db, name);
    const word = uniqueWord('farewell');
    const playlist = await createThrough(a, security, `Last ${word}`, [7, 8]);
    const paths = { get: `/v3/playlist/${playlist.id}`, list: '/v3/playlist', search: `/v3/playlist?search=${word}` };
    for (const server of [a, b]) {
      for (let i = 0; i < 3; i++) {
        expect(playlistOf(await get(server, security, paths.get))).toEqual(playlist);
        expect(pageOf(await get(server, security, paths.list)).playlists).toEqual([playlist]);
        expect(pageOf(await get(server, security, paths.search)).playlists).toEqual([playlist]);
      }
    }

    const removed = await runCli(database.url, ['user', 'remove', name]);
    expect(removed, removed.stderr).toMatchObject({ code: 0 });

    // A credential checked a moment ago may still be taken for a few seconds (until it is checked again), but the
    // playlist is gone at once; within the recheck interval (5 s) every instance refuses the credential itself.
    const problems: string[] = [];
    const refused = { A: false, B: false };
    for (const [label, server] of Object.entries(instances()) as ['A' | 'B', ServerProcess][]) {
      refused[label] = await eventually(async () => {
        const [one, list, search] = await Promise.all([
          get(server, security, paths.get),
          get(server, security, paths.list),
          get(server, security, paths.search),
        ]);
        if (![401, 404, 410].includes(one.status)) problems.push(`GET on ${label} answered ${one.status}`);
        for (const [what, answer] of [
          ['list', list],
          ['search', search],
        ] as const) {
          if (answer.status === 200 && answer.body !== '[]')
            problems.push(`${what} on ${label} answered 200 with ${answer.body}`);
          else if (answer.status !== 200 && answer.status !== 401)
            problems.push(`${what} on ${label} answered ${answer.status}`);
        }
        return one.status === 401;
      }, 10_000);
    }
    expect(problems).toEqual([]);
    expect(refused).toEqual({ A: true, B: true });
  });
});
