/**
 * "The plain way": the load scenarios' requests (get, list, search, create, edit) answered as a competent developer
 * would write them in an afternoon, on the same stack, as the anchor the service is measured against in the same run.
 * Fastify without a log; the credential looked up in a `Map` of the exact `security` or `Authorization` header value;
 * better-sqlite3 in WAL with `synchronous = FULL`, on tables `playlist`, `entry` and `song` of its own; every read
 * straight from the database; the writes of one turn of the event loop committed in one `BEGIN IMMEDIATE … COMMIT`
 * (a group commit), then answered. No history, no search index (a LIKE for each word), no quota, no feed.
 *
 * `startPlainWay` forks this file as a server of its own, which makes its SQLite file in a temporary folder beside
 * the data sets (on the disk the service's SQLite file is on) and fills it from the data set's database, SQLite or
 * PostgreSQL, before it listens.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { auth } from './load.js';
import { DATA_DIR, ROOT, openSql, pinToCpu } from './service.js';

type Message =
  | { readonly type: 'listening'; readonly port: number; readonly playlists: number; readonly fillMs: number }
  | { readonly type: 'failed'; readonly error: string };

export interface PlainWay {
  readonly url: string;
  readonly pid: number;
  /** Its playlists when it started, and how long filling its database took. */
  readonly playlists: number;
  readonly fillMs: number;
  stop(): Promise<void>;
}

/**
 * Starts the plain way on `cpu` (if given), filled from `source`: the data set's database URL (`sqlite:FILE` or a
 * PostgreSQL URL), read once at start; the service must not be writing to it meanwhile.
 */
export async function startPlainWay(cpu: number | undefined, source: string): Promise<PlainWay> {
  mkdirSync(DATA_DIR, { recursive: true });
  const dir = mkdtempSync(join(DATA_DIR, 'plain-way-'));
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc'] as const;
  const child = fork('bench/plain-way.ts', [join(dir, 'plain.db'), source], {
    ...{ cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: [...stdio] },
  });
  if (cpu !== undefined && child.pid !== undefined) pinToCpu(child.pid, cpu);
  const exited = once(child, 'exit');
  const remove = () => {
    rmSync(dir, { recursive: true, force: true });
  };
  const first = await Promise.race([
    once(child, 'message') as Promise<[Message]>,
    exited.then(([code, signal]) => [{ type: 'failed', error: `exited (${code ?? signal})` }] as [Message]),
  ]);
  const [message] = first;
  if (message.type !== 'listening') {
    child.kill('SIGKILL');
    remove();
    throw new Error(`The plain way did not start: ${message.error}`);
  }
  let stopping: Promise<void> | undefined;
  return {
    ...{ url: `http://127.0.0.1:${message.port}`, pid: child.pid!, playlists: message.playlists },
    fillMs: message.fillMs,
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
        remove();
      })()),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The server itself, in the child process.

interface SongRow {
  readonly id: number;
  readonly title: string;
  readonly artist: string;
}
interface PlaylistRow {
  readonly id: number;
  readonly name: string;
  readonly version: number;
}

const SCHEMA = `
  CREATE TABLE song (id INTEGER PRIMARY KEY, title TEXT NOT NULL, artist TEXT NOT NULL, album TEXT NOT NULL,
    genre TEXT NOT NULL, duration INTEGER);
  CREATE TABLE playlist (id INTEGER PRIMARY KEY, owner INTEGER NOT NULL, name TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1);
  CREATE TABLE entry (playlist_id INTEGER NOT NULL, ord INTEGER NOT NULL, song_id INTEGER NOT NULL,
    PRIMARY KEY (playlist_id, ord));`;
const INDEXES = 'CREATE INDEX playlist_owner ON playlist (owner, id)';

/** Playlists read from the source at a time. */
const BATCH = 10_000;

/** Makes the plain way's database and fills it from the data set's; returns the users' credentials and the count. */
async function fill(db: SQLite.Database, source: string) {
  db.exec(SCHEMA);
  const from = await openSql(source);
  try {
    const credentials = new Map<string, number>();
    for (const { id, name } of await from.all<{ id: number | string; name: string }>(
      'SELECT id, name FROM users ORDER BY id',
    ))
      credentials.set(auth(name).authorization, Number(id));
    const insertSong = db.prepare(
      'INSERT INTO song (id, title, artist, album, genre, duration) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const insertPlaylist = db.prepare('INSERT INTO playlist (id, owner, name, version) VALUES (?, ?, ?, ?)');
    const insertEntry = db.prepare('INSERT INTO entry (playlist_id, ord, song_id) VALUES (?, ?, ?)');
    type Song = { id: number | string; title: string; artist: string; album: string; genre: string };
    for (let last = 0; ;) {
      const songs = await from.all<Song & { duration: number | null }>(
        'SELECT id, title, artist, album, genre, duration FROM songs WHERE id > ? ORDER BY id LIMIT ?',
        [last, 50_000],
      );
      if (songs.length === 0) break;
      db.transaction(() => {
        for (const s of songs) insertSong.run(Number(s.id), s.title, s.artist, s.album, s.genre, s.duration);
      })();
      last = Number(songs.at(-1)!.id);
    }
    let playlists = 0;
    for (let last = 0; ;) {
      const rows = await from.all<{ id: number | string; owner_id: number | string; name: string } & { v: unknown }>(
        'SELECT id, owner_id, name, version AS v FROM playlists WHERE id > ? ORDER BY id LIMIT ?',
        [last, BATCH],
      );
      if (rows.length === 0) break;
      const upTo = Number(rows.at(-1)!.id);
      // The service's order: by order key (compared as bytes on both databases), then entry.
      const entries = await from.all<{ playlist_id: number | string; song_id: number | string }>(
        `SELECT playlist_id, song_id FROM playlist_songs WHERE playlist_id > ? AND playlist_id <= ?
           AND song_id IS NOT NULL ORDER BY playlist_id, ord, entry`,
        [last, upTo],
      );
      db.transaction(() => {
        for (const p of rows) insertPlaylist.run(Number(p.id), Number(p.owner_id), p.name, Number(p.v));
        let [playlist, ord] = [0, 0];
        for (const e of entries) {
          const id = Number(e.playlist_id);
          ord = id === playlist ? ord + 1 : 1;
          playlist = id;
          insertEntry.run(id, ord, Number(e.song_id));
        }
      })();
      playlists += rows.length;
      last = upTo;
    }
    db.exec(INDEXES);
    return { credentials, playlists };
  } finally {
    await from.close();
  }
}

/** An error's answer, as the service words them: `{"errormsg": …}`. */
const problem = (errormsg: string) => ({ errormsg });

/** Whether `If-Match` (absent: no condition) names the playlist's current version. */
function matches(ifMatch: string | undefined, version: number): boolean {
  if (ifMatch === undefined) return true;
  const tags = ifMatch.split(',').map((tag) => tag.trim());
  return tags.includes('*') || tags.includes(`"${version}"`);
}

/** A write's outcome: an answer to send after the commit. */
interface Outcome {
  readonly status: number;
  readonly body: unknown;
  readonly etag?: string;
}

async function serve(file: string, source: string): Promise<void> {
  const started = performance.now();
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const { credentials, playlists } = await fill(db, source);

  const statements = {
    song: db.prepare<[number], SongRow>('SELECT id, title, artist FROM song WHERE id = ?'),
    playlist: db.prepare<[number, number], PlaylistRow>(
      'SELECT id, name, version FROM playlist WHERE id = ? AND owner = ?',
    ),
    songsOf: db.prepare<[number], SongRow>(
      `SELECT s.id, s.title, s.artist FROM entry e JOIN song s ON s.id = e.song_id
       WHERE e.playlist_id = ? ORDER BY e.ord`,
    ),
    page: db.prepare<[number, number, number], PlaylistRow>(
      'SELECT id, name, version FROM playlist WHERE owner = ? ORDER BY id LIMIT ? OFFSET ?',
    ),
    count: db.prepare<[number], { n: number }>('SELECT count(*) AS n FROM playlist WHERE owner = ?'),
    insertPlaylist: db.prepare<[number, string]>('INSERT INTO playlist (owner, name, version) VALUES (?, ?, 1)'),
    insertEntry: db.prepare<[number, number, number]>('INSERT INTO entry (playlist_id, ord, song_id) VALUES (?, ?, ?)'),
    lastOrd: db.prepare<[number], { n: number }>('SELECT coalesce(max(ord), 0) AS n FROM entry WHERE playlist_id = ?'),
    bump: db.prepare<[number]>('UPDATE playlist SET version = version + 1 WHERE id = ?'),
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
  };

  // A search: each word in the playlist's name or in one of its songs' title, artist or genre (LIKE, so ASCII
  // letters in any case), among the caller's playlists; a page of them, and how many in all. One statement pair for
  // each number of words, prepared when first needed.
  const searches = new Map<number, { page: SQLite.Statement<unknown[], PlaylistRow>; count: SQLite.Statement }>();
  const searchFor = (words: number) => {
    let found = searches.get(words);
    if (found === undefined) {
      const word = `(p.name LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM entry e JOIN song s ON s.id = e.song_id
        WHERE e.playlist_id = p.id AND (s.title LIKE ? ESCAPE '\\' OR s.artist LIKE ? ESCAPE '\\'
        OR s.genre LIKE ? ESCAPE '\\')))`;
      const where = `p.owner = ? AND ${Array.from({ length: words }, () => word).join(' AND ')}`;
      found = {
        page: db.prepare<unknown[], PlaylistRow>(
          `SELECT p.id, p.name, p.version FROM playlist p WHERE ${where} ORDER BY p.id LIMIT ? OFFSET ?`,
        ),
        count: db.prepare(`SELECT count(*) AS n FROM playlist p WHERE ${where}`),
      };
      searches.set(words, found);
    }
    return found;
  };

  const withSongs = (p: PlaylistRow) => ({ id: p.id, name: p.name, songs: statements.songsOf.all(p.id) });

  /** The songs of these ids, in order, or the ids the catalog has not. */
  function songsOf(ids: readonly number[]): { songs: SongRow[] } | { unknown: number[] } {
    const songs: SongRow[] = [];
    const unknown: number[] = [];
    for (const id of ids) {
      const song = statements.song.get(id);
      if (song === undefined) unknown.push(id);
      else songs.push(song);
    }
    return unknown.length === 0 ? { songs } : { unknown };
  }

  // The group commit: the writes that arrive in one turn of the event loop run in one transaction, then each is
  // answered. A write checks what it needs before it changes anything, so that it never fails halfway.
  let queue: { work: () => Outcome; done: (outcome: Outcome) => void; failed: (error: unknown) => void }[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    const outcomes: Outcome[] = [];
    try {
      statements.begin.run();
      try {
        for (const write of batch) outcomes.push(write.work());
        statements.commit.run();
      } catch (error) {
        statements.rollback.run();
        throw error;
      }
    } catch (error) {
      for (const write of batch) write.failed(error);
      return;
    }
    batch.forEach((write, i) => {
      write.done(outcomes[i]!);
    });
  };
  const write = (work: () => Outcome) =>
    new Promise<Outcome>((done, failed) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ work, done, failed });
    });

  const app = Fastify({ logger: false });
  /** The caller's user id, or undefined once a 401 is sent. */
  const signedIn = (request: FastifyRequest, reply: FastifyReply) => {
    const value = request.headers.security ?? request.headers.authorization;
    const userId = typeof value === 'string' ? credentials.get(value) : undefined;
    if (userId === undefined)
      void reply.code(401).header('www-authenticate', 'Basic realm="mixtape"').send(problem('Sign in.'));
    return userId;
  };
  const idParams = { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'] } as const;
  const songIds = { type: 'array', items: { type: 'integer', minimum: 1 }, minItems: 1, maxItems: 1000 } as const;

  app.get<{ Params: { id: number } }>('/v3/playlist/:id', { schema: { params: idParams } }, (request, reply) => {
    const userId = signedIn(request, reply);
    if (userId === undefined) return reply;
    const found = statements.playlist.get(request.params.id, userId);
    if (found === undefined) return reply.code(404).send(problem('No such playlist of yours.'));
    return reply.header('etag', `"${found.version}"`).send(withSongs(found));
  });

  const listQuery = {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      offset: { type: 'integer', minimum: 0, default: 0 },
      search: { type: 'string', maxLength: 200 },
    },
  } as const;
  app.get<{ Querystring: { limit: number; offset: number; search?: string } }>(
    '/v3/playlist',
    { schema: { querystring: listQuery } },
    (request, reply) => {
      const userId = signedIn(request, reply);
      if (userId === undefined) return reply;
      const { limit, offset, search } = request.query;
      const words = (search ?? '').split(/\s+/).filter(Boolean);
      let rows: PlaylistRow[];
      let total: number;
      if (words.length === 0) {
        rows = statements.page.all(userId, limit, offset);
        total = statements.count.get(userId)!.n;
      } else {
        const like = words.flatMap((w) => Array<string>(4).fill(`%${w.replace(/[\\%_]/g, '\\$&')}%`));
        const { page, count } = searchFor(words.length);
        rows = page.all(userId, ...like, limit, offset);
        total = (count.get(userId, ...like) as { n: number }).n;
      }
      return reply.header('x-total-count', String(total)).send(rows.map(withSongs));
    },
  );

  const newPlaylist = {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, songIds },
    required: ['name', 'songIds'],
    additionalProperties: false,
  } as const;
  app.post<{ Body: { name: string; songIds: number[] } }>(
    '/v3/playlist',
    { schema: { body: newPlaylist } },
    async (request, reply) => {
      const userId = signedIn(request, reply);
      if (userId === undefined) return reply;
      const { name } = request.body;
      const found = songsOf(request.body.songIds);
      if ('unknown' in found) return reply.code(422).send(problem(`Unknown songs: ${found.unknown.join(', ')}`));
      const outcome = await write(() => {
        const id = Number(statements.insertPlaylist.run(userId, name).lastInsertRowid);
        found.songs.forEach((song, i) => statements.insertEntry.run(id, i + 1, song.id));
        return { status: 200, body: { id, name, songs: found.songs }, etag: '"1"' };
      });
      const { id } = outcome.body as { id: number };
      return reply.header('location', `/v3/playlist/${id}`).header('etag', outcome.etag).send(outcome.body);
    },
  );

  const newSongs = {
    type: 'object',
    properties: { songIds },
    required: ['songIds'],
    additionalProperties: false,
  } as const;
  app.post<{ Params: { id: number }; Body: { songIds: number[] } }>(
    '/v3/playlist/:id/songs',
    { schema: { params: idParams, body: newSongs } },
    async (request, reply) => {
      const userId = signedIn(request, reply);
      if (userId === undefined) return reply;
      const found = songsOf(request.body.songIds);
      if ('unknown' in found) return reply.code(422).send(problem(`Unknown songs: ${found.unknown.join(', ')}`));
      const [id, ifMatch] = [request.params.id, request.headers['if-match']];
      const outcome = await write(() => {
        const playlist = statements.playlist.get(id, userId);
        if (playlist === undefined) return { status: 404, body: problem('No such playlist of yours.') };
        const etag = `"${playlist.version}"`;
        if (!matches(ifMatch, playlist.version))
          return { status: 412, etag, body: problem('The playlist has changed since you read it.') };
        let ord = statements.lastOrd.get(id)!.n;
        for (const song of found.songs) statements.insertEntry.run(id, ++ord, song.id);
        statements.bump.run(id);
        const edited = { ...playlist, version: playlist.version + 1 };
        return { status: 200, body: withSongs(edited), etag: `"${edited.version}"` };
      });
      if (outcome.etag !== undefined) reply.header('etag', outcome.etag);
      return reply.code(outcome.status).send(outcome.body);
    },
  );

  // The parent is gone: nothing left to serve.
  process.once('disconnect', () => {
    void app.close().finally(() => db.close());
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const fillMs = performance.now() - started;
  process.send?.({ type: 'listening', port: Number(new URL(address).port), playlists, fillMs } satisfies Message);
}

if (process.argv[1]?.endsWith('plain-way.ts') === true) {
  const [file, source] = process.argv.slice(2);
  serve(file!, source!).catch((error: unknown) => {
    process.send?.({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exitCode = 1;
    if (process.connected) process.disconnect();
  });
}
