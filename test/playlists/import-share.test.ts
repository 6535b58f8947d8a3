import { Agent, request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { addUser } from '../helpers/live-data.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, importStatus, sleep } from '../helpers/traffic.js';

/**
 * An import beyond the user's share (one in progress, 32 waiting) is refused with 429 as soon as its headers arrive,
 * before its body is read, on a real service: the share is filled by one user's real imports, and that user's next
 * import, its body still on its way, gets the share's 429 and a closed connection, while another user imports.
 */

const SHARE_MESSAGE = 'Your previous imports are still being read; wait for them first.';
/** The declared body of the refused import: more than it ever sends, within the import limit. */
const DECLARED = 1024 * 1024;
const IMPORT_LIMIT = 2 * DECLARED;
/** How the refused import's body trickles in: a piece every so often, so that the 1 MiB would take over 3 s. */
const PIECE = 16 * 1024;
const PIECE_EVERY_MS = 50;
/** What the second refused import sends with its headers, before its answer can come. */
const UPFRONT = 384 * 1024;
/** How long an attempt waits for its 429 before giving up (the share may have had room at that moment). */
const ATTEMPT_MS = 1500;

/** An XSPF file of `count` tracks that match no song of the catalog (about 60 KB for 1 000). */
const unmatchedXspf = (count: number) =>
  `<playlist version="1" xmlns="http://xspf.org/ns/0/"><title>x</title><trackList>` +
  Array.from({ length: count }, (_v, i) => `<track><title>No ${i}</title><creator>Nx ${i}</creator></track>`).join('') +
  `</trackList></playlist>`;

interface Early {
  /** The status, or 0 when nothing came back within the attempt. */
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  /** Body bytes written when the answer's head arrived. */
  readonly sentWhenAnswered: number;
  /** Whether the connection was closed within a second of the answer. */
  readonly closed: boolean;
}

/**
 * An import that declares a 1 MiB body, sends `upfront` bytes of it at once and the rest slowly, a piece at a time,
 * and gives up after `ATTEMPT_MS` without ever finishing it: what came back, and how much of the body had been sent
 * by then. It asks to keep the connection alive, as a client reusing its connections does.
 */
function slowImport(url: string, security: string, upfront: number): Promise<Early> {
  return new Promise((resolve) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let sent = 0;
    let answered: Omit<Early, 'closed'> | undefined;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearInterval(trickle);
      clearTimeout(deadline);
      sending.destroy();
      agent.destroy();
      resolve({ ...(answered ?? { status: 0, headers: {}, body: '', sentWhenAnswered: sent }), closed });
    };
    const sending = request(url, {
      method: 'POST',
      agent,
      headers: { security, 'content-type': 'application/xspf+xml', 'content-length': String(DECLARED) },
    });
    sending.on('response', (response) => {
      const sentWhenAnswered = sent;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => {
        answered = { status: response.statusCode ?? 0, headers: response.headers, body, sentWhenAnswered };
        clearTimeout(deadline);
        // The body keeps trickling; the server should close the connection rather than read it. A second for that.
        const closing = setTimeout(() => {
          finish(false);
        }, 1000);
        const closed = () => {
          clearTimeout(closing);
          finish(true);
        };
        if (sending.socket?.destroyed === true) closed();
        else sending.socket?.once('close', closed);
      });
    });
    // Writes after the server has closed fail (EPIPE, ECONNRESET): expected, and what came back is kept.
    sending.on('error', () => undefined);
    if (upfront > 0) {
      sending.write(Buffer.alloc(upfront, 0x20));
      sent = upfront;
    } else {
      sending.flushHeaders();
    }
    const trickle = setInterval(() => {
      // Never the last piece: the body stays incomplete whatever happens.
      if (sending.destroyed || sent + PIECE >= DECLARED) return;
      sending.write(Buffer.alloc(PIECE, 0x20));
      sent += PIECE;
    }, PIECE_EVERY_MS);
    const deadline = setTimeout(() => {
      finish(false);
    }, ATTEMPT_MS);
  });
}

/**
 * `slowImport` until one is answered, at most eight times: an attempt that meets the share with room passes on to
 * read the body and is given up, as the share is full again a moment later. The answered one, and every attempt.
 */
async function refusedImport(url: string, security: string, upfront: number) {
  const attempts: Early[] = [];
  for (let i = 0; i < 8; i++) {
    const attempt = await slowImport(url, security, upfront);
    attempts.push(attempt);
    if (attempt.status !== 0) break;
  }
  const shown = JSON.stringify(
    attempts.map(({ status, sentWhenAnswered, closed }) => [status, sentWhenAnswered, closed]),
  );
  console.info(`${upfront} bytes at once, attempts [status, body bytes sent when answered, closed]: ${shown}`);
  return { answer: attempts.find((attempt) => attempt.status !== 0), shown };
}

/** The share's 429, while the body was still coming, on a connection the server then closed. */
function expectRefusedEarly({ answer, shown }: Awaited<ReturnType<typeof refusedImport>>) {
  expect(answer, shown).toBeDefined();
  expect(answer!.status, answer!.body).toBe(429);
  expect(JSON.parse(answer!.body)).toMatchObject({ errormsg: SHARE_MESSAGE });
  expect(answer!.headers['retry-after']).toBe('1');
  expect(answer!.sentWhenAnswered, shown).toBeLessThan(DECLARED);
  expect(answer!.headers.connection).toBe('close');
  expect(answer!.closed, shown).toBe(true);
}

describeEachEmptyDatabase('an import beyond the share refused before its body (%s)', (database) => {
  let db: Db;
  let server: ServerProcess;

  beforeAll(async () => {
    // One thread reads the files, so that eve's imports, one at a time, keep her share full for a while.
    server = await startServer({
      databaseUrl: database.url,
      env: { MIXTAPE_IMPORT_LIMIT: String(IMPORT_LIMIT), MIXTAPE_WORKER_THREADS: '1' },
    });
    db = openDatabase(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }).database);
  });
  afterAll(async () => {
    await killAllServers();
    await db.close();
  });

  const at = (path: string) => `${server.url}${path}`;

  it("answers the share's 429 before the body is sent, closes, and another user's import goes through", async () => {
    const eve = await addUser(db);
    const bob = await addUser(db);
    // Signed in once before, so that the flood and the attempts do not wait for a first check of a password.
    expect((await call(at('/v3/playlist'), { headers: { security: eve } })).status).toBe(200);
    expect((await call(at('/v3/playlist'), { headers: { security: bob } })).status).toBe(200);

    // Eve's flood: 48 connections, each sending a large file again as soon as it is answered, until stopped. Her share
    // holds 33; the rest are refused at once, and send again a little later.
    const file = unmatchedXspf(1000);
    const state = { stop: false, refused: 0 };
    const statuses = new Map<number, number>();
    const flood = Promise.all(
      Array.from({ length: 48 }, async () => {
        for (let i = 0; i < 2000 && !state.stop; i++) {
          const status = await importStatus(server.url, eve, file);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status === 429) {
            state.refused++;
            await sleep(20);
          }
        }
      }),
    );

    try {
      // A 429 to the flood: her share has been full.
      for (let i = 0; i < 300 && state.refused === 0; i++) await sleep(20);
      expect(state.refused, JSON.stringify(Object.fromEntries(statuses))).toBeGreaterThan(0);

      // Her next import, its body trickling in: refused at its headers while the share is full, the body unread.
      const url = at('/v3/playlist/import?unmatched=fail');
      expectRefusedEarly(await refusedImport(url, eve, 0));
      // The same with several hundred KB sent before the answer, still unread on the server when it closes.
      expectRefusedEarly(await refusedImport(url, eve, UPFRONT));

      // Meanwhile bob's import is served: eve's flood is held to her share.
      const refusedBeforeBob = state.refused;
      const bobs = await fetch(at('/v3/playlist/import?name=bob'), {
        method: 'POST',
        headers: { security: bob, 'content-type': 'audio/mpegurl' },
        body: '#EXTM3U\nhttp://elsewhere.example/v3/song/7\n',
        signal: AbortSignal.timeout(30_000),
      });
      const imported = (await bobs.json()) as { playlist?: { songs?: { id: number }[] } };
      expect(bobs.status, JSON.stringify(imported)).toBe(200);
      expect(imported.playlist?.songs?.map((song) => song.id)).toEqual([7]);
      // Her flood was still being refused around it: bob's import was served while her share was full.
      for (let i = 0; i < 50 && state.refused === refusedBeforeBob; i++) await sleep(20);
      expect(state.refused).toBeGreaterThan(refusedBeforeBob);
    } finally {
      state.stop = true;
      await flood;
    }
    const shown = JSON.stringify(Object.fromEntries(statuses));
    console.info(`eve's flood: ${shown}`);
    // Eve's imports are served or refused, never failed (a connection closed before the answer would be a 0).
    for (const status of statuses.keys()) expect([422, 429, 503], shown).toContain(status);
  }, 120_000);
});
