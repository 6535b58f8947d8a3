import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js';
import { parseResponse, rawExchange, timedGet, type RawExchange } from '../helpers/raw-http.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * Faults and abuse at the connection: trickled requests time out with 408, one address cannot take every connection,
 * and whatever Node's HTTP parser refuses is answered with the one error body. Against the real listening service.
 */

const USER = 'steady';
const PASSWORD = 'keeps working';
const SECURITY = basic(USER, PASSWORD);
const REQUEST_TIMEOUT_MS = 2000;
const HEADERS_TIMEOUT_MS = 1000;
const KEEPALIVE_TIMEOUT_MS = 1000;
// Node checks the timeouts once a second; a generous bound for "closed in time", not a speed target.
const SLACK_MS = 3000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function expectErrorAnswer(answer: RawExchange, status: number, where: string): number {
  expect(answer.status, `${where}: ${answer.text.slice(0, 300)}`).toBe(status);
  expect(answer.headers['content-type'], where).toMatch(/^application\/json/);
  expect(answer.headers['x-content-type-options'], where).toBe('nosniff');
  expect(answer.headers['x-request-id'], where).toMatch(UUID);
  const body = JSON.parse(answer.body) as { errormsg?: unknown; logdata?: { entry?: unknown; date?: unknown } };
  expect(typeof body.errormsg, where).toBe('string');
  expect(String(body.errormsg).length, where).toBeGreaterThan(0);
  expect(Number.isSafeInteger(body.logdata?.entry), where).toBe(true);
  expect(Math.abs(Number(body.logdata?.date) - Date.now() / 1000), where).toBeLessThan(60);
  return Number(body.logdata?.entry);
}

const summary = (label: string, ms: number[]): string => {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]?.toFixed(1) ?? '-';
  return `${label}: ${sorted.length} requests, median ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${at(1)} ms`;
};

/** A connection from `localAddress` that has been answered once (keep-alive) and stays open. */
function holdConnection(url: string, localAddress: string): Promise<{ socket: Socket; status: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress });
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer on a held connection from ${localAddress}`));
    }, 10_000);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const answer = parseResponse(text);
      if (answer.status !== 0 && answer.body.length >= Number(answer.headers['content-length'] ?? 0)) {
        clearTimeout(timer);
        resolve({ socket, status: answer.status });
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const answer = parseResponse(text);
      resolve({ socket, status: answer.status });
    });
    socket.write('GET /healthz HTTP/1.1\r\nHost: mixtape\r\n\r\n');
  });
}

/** Writes `text` on the socket every `everyMs` until it closes: a client that sends its request very slowly. */
const trickle = (text: string, everyMs: number) => (socket: Socket) => {
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(text);
  }, everyMs);
  socket.once('close', () => {
    clearInterval(timer);
  });
};

describe('timeouts and malformed requests on a listening server', () => {
  let database: TestDatabase;
  let server: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    server = await startServer({
      databaseUrl: database.url,
      bootstrapUser: `${USER}:${PASSWORD}`,
      env: {
        MIXTAPE_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_MS / 1000),
        MIXTAPE_HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_MS / 1000),
        MIXTAPE_KEEPALIVE_TIMEOUT_SECONDS: String(KEEPALIVE_TIMEOUT_MS / 1000),
      },
    });
  }, 60_000);

  afterAll(async () => {
    await server.stop();
    await killAllServers();
    await database.drop();
  });

  it('answers trickled bodies 408 and closes them, while another client keeps being served', async () => {
    const trickles = 12;
    const head =
      `POST /v3/playlist HTTP/1.1\r\nHost: mixtape\r\nsecurity: ${SECURITY}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{';
    const pending = Array.from({ length: trickles }, () =>
      rawExchange({
        url: server.url,
        send: head,
        localAddress: '127.0.0.2',
        deadlineMs: REQUEST_TIMEOUT_MS + SLACK_MS + 3000,
        onConnect: trickle(' ', 250),
      }),
    );
    const trickling = { settled: false };
    const all = Promise.all(pending).finally(() => {
      trickling.settled = true;
    });

    const healthz: number[] = [];
    const listing: number[] = [];
    for (let i = 0; i < 1000 && !trickling.settled; i++) {
      const health = await timedGet(`${server.url}/healthz`, {}, '127.0.0.3');
      expect(health.status, health.body).toBe(200);
      healthz.push(health.ms);
      const list = await timedGet(`${server.url}/v3/playlist?limit=5`, { security: SECURITY }, '127.0.0.3');
      expect(list.status, list.body).toBe(200);
      listing.push(list.ms);
    }
    const answers = await all;
    console.info(summary('127.0.0.3 GET /healthz during the trickle', healthz));
    console.info(summary('127.0.0.3 GET /v3/playlist during the trickle', listing));
    console.info(`trickled POSTs closed after ${answers.map((a) => a.closedAfterMs ?? 'never').join(', ')} ms`);

    expect(healthz.length).toBeGreaterThan(0);
    for (const [i, answer] of answers.entries()) {
      const entry = expectErrorAnswer(answer, 408, `trickle ${i}`);
      expect(answer.closedAfterMs, `trickle ${i}`).toBeDefined();
      expect(answer.closedAfterMs, `trickle ${i}`).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS + SLACK_MS);
      await server.waitForLog((line) => line.entry === entry, 5000);
    }
  }, 30_000);

  it('answers headers that trickle in 408 after the headers timeout', async () => {
    const answer = await rawExchange({
      url: server.url,
      send: 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\nX-Slow: ',
      localAddress: '127.0.0.2',
      deadlineMs: HEADERS_TIMEOUT_MS + SLACK_MS + 3000,
      onConnect: trickle('a', 200),
    });
    expectErrorAnswer(answer, 408, 'slow headers');
    expect(answer.closedAfterMs).toBeLessThanOrEqual(HEADERS_TIMEOUT_MS + SLACK_MS);
  }, 15_000);

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    const answer = await rawExchange({
      url: server.url,
      send: 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\n\r\n',
      localAddress: '127.0.0.2',
      deadlineMs: KEEPALIVE_TIMEOUT_MS + SLACK_MS + 3000,
    });
    expect(answer.status).toBe(200);
    expect(answer.closedAfterMs).toBeDefined();
    expect(answer.closedAfterMs).toBeLessThanOrEqual(KEEPALIVE_TIMEOUT_MS + SLACK_MS);
  }, 15_000);

  it('answers every request the HTTP parser refuses with the error body, and logs its entry', async () => {
    const cases: [string, string | Buffer, number][] = [
      ['an invalid header byte', 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\nX-Bad: a\u0001b\r\n\r\n', 400],
      [
        'Content-Length with Transfer-Encoding',
        'POST /v3/playlist HTTP/1.1\r\nHost: mixtape\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
      ],
      [
        'a bad chunk size',
        `POST /v3/playlist HTTP/1.1\r\nHost: mixtape\r\nsecurity: ${SECURITY}\r\nContent-Type: application/json\r\n` +
          'Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
        400,
      ],
      ['bare LF line ends', 'GET /healthz HTTP/1.1\nHost: mixtape\n\n', 400],
      ['a raw 0xFF in the URL', Buffer.from('GET /v3/playlist/\xff HTTP/1.1\r\nHost: mixtape\r\n\r\n', 'latin1'), 400],
      ['headers over 16 KB', `GET /healthz HTTP/1.1\r\nHost: mixtape\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`, 431],
      ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\n\r\n', 400],
      ['not HTTP at all', '\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003\r\n\r\n', 400],
    ];
    for (const [name, send, status] of cases) {
      const answer = await rawExchange({ url: server.url, send, localAddress: '127.0.0.2', deadlineMs: 5000 });
      const entry = expectErrorAnswer(answer, status, name);
      await server.waitForLog((line) => line.entry === entry, 5000);
    }
    // HTTP/1.0 needs no Host.
    const old = await rawExchange({
      url: server.url,
      send: 'GET /healthz HTTP/1.0\r\n\r\n',
      localAddress: '127.0.0.2',
      deadlineMs: 5000,
    });
    expect(old.status, old.text).toBe(200);
  }, 30_000);

  it('answers an Expect other than 100-continue 417 with the error body, its request id and a log line', async () => {
    const cases: [string, string][] = [
      ['200-ok', 'GET /healthz'],
      ['something-else', 'GET /v3/playlist'],
      ['200-ok', 'POST /v3/playlist'],
    ];
    for (const [expectation, requestLine] of cases) {
      const answer = await rawExchange({
        url: server.url,
        send:
          `${requestLine} HTTP/1.1\r\nHost: mixtape\r\nsecurity: ${SECURITY}\r\nExpect: ${expectation}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n',
        localAddress: '127.0.0.2',
        deadlineMs: 5000,
      });
      const where = `Expect: ${expectation} on ${requestLine}`;
      const entry = expectErrorAnswer(answer, 417, where);
      expect((JSON.parse(answer.body) as { errormsg: string }).errormsg, where).toMatch(/100-continue/);
      expect(answer.closedAfterMs, where).toBeDefined();
      const line = await server.waitForLog((logged) => logged.entry === entry, 5000);
      expect(line, where).toMatchObject({ status: 417, reqId: answer.headers['x-request-id'], expect: expectation });
    }
    // The client's own request id is kept, as on every other answer.
    const named = await rawExchange({
      url: server.url,
      send: 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\nX-Request-Id: client-id-17\r\nExpect: 200-ok\r\n\r\n',
      localAddress: '127.0.0.2',
      deadlineMs: 5000,
    });
    expect(named.status).toBe(417);
    expect(named.headers['x-request-id']).toBe('client-id-17');
    // 100-continue is still met.
    const continued = await rawExchange({
      url: server.url,
      send: 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
      localAddress: '127.0.0.2',
      deadlineMs: 5000,
    });
    expect(continued.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  }, 30_000);
});

describe('connection caps on a listening server', () => {
  const PER_ADDRESS = 5;
  const TOTAL = 8;
  let database: TestDatabase;
  let server: ServerProcess;
  const held: Socket[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    server = await startServer({
      databaseUrl: database.url,
      bootstrapUser: `${USER}:${PASSWORD}`,
      env: {
        MIXTAPE_MAX_CONNECTIONS: String(TOTAL),
        MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
        MIXTAPE_KEEPALIVE_TIMEOUT_SECONDS: '60',
      },
    });
  }, 60_000);

  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await server.stop();
    await killAllServers();
    await database.drop();
  });

  it('answers connections over the per-address cap 503 while another address is served', async () => {
    for (let i = 0; i < PER_ADDRESS; i++) {
      const connection = await holdConnection(server.url, '127.0.0.2');
      held.push(connection.socket);
      expect(connection.status).toBe(200);
    }
    for (let i = 0; i < 3; i++) {
      const answer = await rawExchange({
        url: server.url,
        send: 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\n\r\n',
        localAddress: '127.0.0.2',
        deadlineMs: 5000,
      });
      const entry = expectErrorAnswer(answer, 503, `extra connection ${i}`);
      expect(answer.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(answer.closedAfterMs).toBeDefined();
      expect((JSON.parse(answer.body) as { errormsg: string }).errormsg).toMatch(/from your address/);
      await server.waitForLog((line) => line.entry === entry, 5000);
    }
    const health = await timedGet(`${server.url}/healthz`, {}, '127.0.0.3');
    expect(health.status).toBe(200);
    const list = await timedGet(`${server.url}/v3/playlist`, { security: SECURITY }, '127.0.0.3');
    expect(list.status, list.body).toBe(200);
    console.info(
      `127.0.0.3 with 127.0.0.2 at its cap: /healthz ${health.ms.toFixed(1)} ms, /v3/playlist ${list.ms.toFixed(1)} ms`,
    );

    // A freed slot is taken again.
    held.shift()?.destroy();
    let again = 0;
    for (let attempt = 0; attempt < 20 && again !== 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const connection = await holdConnection(server.url, '127.0.0.2');
      again = connection.status;
      if (again === 200) held.push(connection.socket);
    }
    expect(again).toBe(200);
  }, 60_000);

  it('answers connections over the total cap 503', async () => {
    // 127.0.0.2 holds PER_ADDRESS connections; fill the rest from 127.0.0.4 (a closed 127.0.0.3 one may linger briefly).
    for (let i = 0; i < TOTAL - PER_ADDRESS; i++) {
      let status = 0;
      for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        const connection = await holdConnection(server.url, '127.0.0.4');
        status = connection.status;
        if (status === 200) held.push(connection.socket);
      }
      expect(status).toBe(200);
    }
    const answer = await rawExchange({
      url: server.url,
      send: 'GET /healthz HTTP/1.1\r\nHost: mixtape\r\n\r\n',
      localAddress: '127.0.0.5',
      deadlineMs: 5000,
    });
    expectErrorAnswer(answer, 503, 'over the total cap');
    expect((JSON.parse(answer.body) as { errormsg: string }).errormsg).toMatch(/too many open connections/);
  }, 60_000);
});
