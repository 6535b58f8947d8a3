import { spawn } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNAL_COPY_MS } from '../../src/stop-requests.js';
import { isRunning, killGroup, startThroughNpm } from '../helpers/cli-process.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/databases.js';
import { killAllServers, runServeExpectingExit, startServer } from '../helpers/server-process.js';
import { eventually, send, sleep } from '../helpers/traffic.js';

/**
 * SIGTERM and SIGINT drain in-flight requests, then close the database, then exit 0;
 * every setting is validated at start, and a bad one stops the start with a message that names it.
 */

const USER = 'drain';
const PASSWORD = 'let them finish';
const SECURITY = `Basic ${Buffer.from(`${USER}:${PASSWORD}`, 'utf8').toString('base64')}`;
const SONGS = Array.from({ length: 1000 }, (_, i) => (i % 240) + 1);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

interface PlaylistBody {
  id: number;
  name: string;
  songs: { id: number }[];
}

/**
 * A request sent with `Expect: 100-continue`. Node's HTTP server answers `100 Continue` right before it hands the
 * request to Fastify, whose first hook (the one that answers 503 once the service is closing) runs in that same
 * turn: so once `continued` settles, the request is in flight on the server. A body is held back until `finish()`.
 */
interface HeldRequest {
  readonly continued: Promise<void>;
  readonly answer: Promise<Answer>;
  finish(): void;
}

function holdRequest(base: string, method: 'GET' | 'POST', path: string, body?: string): HeldRequest {
  const headers: Record<string, string | number> = { security: SECURITY, expect: '100-continue' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(body);
  }
  const req = httpRequest(`${base}${path}`, { method, headers, agent: false });
  const continued = new Promise<void>((resolve, reject) => {
    req.once('continue', () => {
      resolve();
    });
    req.once('error', reject);
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.once('error', reject);
      res.once('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text });
      });
    });
  });
  // Either may reject before it is awaited; the test awaits both.
  continued.catch(() => undefined);
  answer.catch(() => undefined);
  req.flushHeaders();
  return {
    continued,
    answer,
    finish: () => {
      req.end(body);
    },
  };
}

/** One GET with the test user's credential, on a new connection or through a keep-alive agent. */
const getOnce = (url: string, agent?: Agent): Promise<Answer> =>
  send(url, { headers: { security: SECURITY }, timeoutMs: 10_000, ...(agent === undefined ? {} : { agent }) });

/** One GET on a new connection, or the error that kept it from being answered. */
const tryRequest = (url: string): Promise<Answer | Error> =>
  getOnce(url).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));

describe.each(DIALECTS)('graceful shutdown (%s)', (dialect) => {
  const databases: TestDatabase[] = [];

  afterAll(async () => {
    await killAllServers();
    for (const database of databases) await database.drop();
  });

  it('finishes every in-flight request on SIGTERM, refuses new ones, then exits 0', async () => {
    const database = await createTestDatabase(dialect);
    databases.push(database);
    const server = await startServer({ databaseUrl: database.url, bootstrapUser: `${USER}:${PASSWORD}` });

    // Playlists of 1000 songs, so that a page of them takes a while to read and to send.
    for (let i = 0; i < 12; i++) {
      const response = await fetch(`${server.url}/v3/playlist`, {
        method: 'POST',
        headers: { security: SECURITY, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Long ${i}`, songIds: SONGS }),
      });
      expect(response.status, await response.clone().text()).toBe(200);
      await response.arrayBuffer();
    }

    const creates = Array.from({ length: 6 }, (_, i) =>
      holdRequest(server.url, 'POST', '/v3/playlist', JSON.stringify({ name: `In flight ${i}`, songIds: SONGS })),
    );
    const lists = Array.from({ length: 6 }, (_, i) =>
      holdRequest(server.url, 'GET', `/v3/playlist?limit=100&offset=${i % 3}`),
    );
    await Promise.all([...creates, ...lists].map((held) => held.continued));
    for (const held of lists) held.finish();

    server.process.kill('SIGTERM');
    await server.waitForLog((line) => line.msg === 'draining in-flight requests');

    // A request that arrives now is refused: no connection, or 503 with Retry-After.
    const late = await tryRequest(`${server.url}/v3/playlist?limit=1`);
    if (!(late instanceof Error)) {
      expect(late.status, late.body).toBe(503);
      expect(late.headers['retry-after']).toMatch(/^\d+$/);
      expect((JSON.parse(late.body) as { errormsg: unknown }).errormsg).toEqual(expect.any(String));
    }

    // The held creates send their bodies only now, after SIGTERM; they still complete.
    for (const held of creates) held.finish();
    const created = await Promise.all(creates.map((held) => held.answer));
    const listed = await Promise.all(lists.map((held) => held.answer));

    created.forEach((answer, i) => {
      expect(answer.status, answer.body).toBe(200);
      const playlist = JSON.parse(answer.body) as PlaylistBody;
      expect(playlist.name).toBe(`In flight ${i}`);
      expect(playlist.songs.map((s) => s.id)).toEqual(SONGS);
    });
    listed.forEach((answer, i) => {
      expect(answer.status, answer.body.slice(0, 300)).toBe(200);
      const page = JSON.parse(answer.body) as PlaylistBody[];
      expect(page.length).toBeGreaterThanOrEqual(12 - (i % 3));
      for (const playlist of page) expect(playlist.songs).toHaveLength(1000);
    });

    const exit = await server.exited;
    expect(exit, server.output()).toEqual({ code: 0, signal: null });
    const messages = server.logLines().map((line) => line.msg);
    expect(messages).toContain('draining in-flight requests');
    expect(messages).toContain('stopped');
    expect(messages.indexOf('stopped')).toBeGreaterThan(messages.indexOf('draining in-flight requests'));
    expect(server.output()).not.toMatch(/in-flight requests did not finish|shutdown failed/);

    // The creates that finished during the drain were committed.
    const again = await startServer({ databaseUrl: database.url });
    const response = await fetch(`${again.url}/v3/playlist?limit=100`, { headers: { security: SECURITY } });
    expect(response.status).toBe(200);
    const names = ((await response.json()) as PlaylistBody[]).map((p) => p.name);
    for (let i = 0; i < 6; i++) expect(names).toContain(`In flight ${i}`);
    expect(await again.stop('SIGINT'), again.output()).toEqual({ code: 0, signal: null });
  }, 60_000);
});

describe('leaving the pool before stopping (MIXTAPE_DRAIN_DELAY_SECONDS)', () => {
  const databases: TestDatabase[] = [];

  afterAll(async () => {
    await killAllServers();
    for (const database of databases) await database.drop();
  });

  const start = async (delaySeconds: number) => {
    const database = await createTestDatabase('sqlite');
    databases.push(database);
    return startServer({
      databaseUrl: database.url,
      bootstrapUser: `${USER}:${PASSWORD}`,
      env: { MIXTAPE_DRAIN_DELAY_SECONDS: String(delaySeconds) },
    });
  };

  it('answers /readyz 503 and keeps serving, with Connection: close, for the delay; then drains and exits 0', async () => {
    const server = await start(2);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await getOnce(`${server.url}/v3/playlist?limit=1`, agent);
      expect(before.status).toBe(200);
      expect(before.headers.connection).toBe('keep-alive');

      server.process.kill('SIGTERM');
      const leaving = await server.waitForLog((line) => /^leaving the pool/.test(String(line.msg)));
      expect(leaving.drainDelayMs).toBe(2000);

      // Each of these fails the test if it is not answered.
      const ready = await getOnce(`${server.url}/readyz`);
      const health = await getOnce(`${server.url}/healthz`);
      const onKeptConnection = await getOnce(`${server.url}/v3/playlist?limit=1`, agent);
      const onNewConnection = await getOnce(`${server.url}/v3/playlist?limit=1`);
      const stillDraining = !server.logLines().some((line) => line.msg === 'draining in-flight requests');
      expect(stillDraining, 'the answers above came within the 2 s delay').toBe(true);

      expect(ready.status, ready.body).toBe(503);
      expect(health.status).toBe(200);
      expect(onKeptConnection.status).toBe(200);
      expect(onKeptConnection.headers.connection).toBe('close');
      expect(onNewConnection.status).toBe(200);
      expect(onNewConnection.headers.connection).toBe('close');

      const exit = await server.exited;
      expect(exit, server.output()).toEqual({ code: 0, signal: null });
      const lines = server.logLines();
      const at = (message: string) => lines.find((line) => line.msg === message)?.time as number | undefined;
      const closing = at('draining in-flight requests') ?? 0;
      expect(closing - (leaving.time as number)).toBeGreaterThanOrEqual(1900);
      expect(at('stopped')).toBeGreaterThanOrEqual(closing);
    } finally {
      agent.destroy();
    }
  }, 60_000);

  it('a second signal during the delay ends it', async () => {
    const server = await start(600);
    server.process.kill('SIGTERM');
    await server.waitForLog((line) => /^leaving the pool/.test(String(line.msg)));
    // Later than a copy of the first could come (see the test below).
    await sleep(SIGNAL_COPY_MS);
    server.process.kill('SIGTERM');
    await server.waitForLog((line) => line.msg === 'draining in-flight requests', 10_000);
    expect(await server.exited, server.output()).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('a second signal while in-flight requests finish exits at once, with 1', async () => {
    const server = await start(0);
    const held = holdRequest(server.url, 'POST', '/v3/playlist', JSON.stringify({ name: 'Held', songIds: [1] }));
    await held.continued;
    server.process.kill('SIGTERM');
    await server.waitForLog((line) => line.msg === 'draining in-flight requests');
    await sleep(SIGNAL_COPY_MS);
    server.process.kill('SIGTERM');
    expect(await server.exited, server.output()).toEqual({ code: 1, signal: null });
    expect(server.logLines().some((line) => line.msg === 'a second signal while closing; exiting now')).toBe(true);
    held.finish();
    await held.answer.catch(() => undefined);
  }, 60_000);

  it('a copy of the signal that comes at once, as Ctrl-C sends one to npm and one to the service, is not a second signal', async () => {
    const server = await start(0);
    const held = holdRequest(server.url, 'POST', '/v3/playlist', JSON.stringify({ name: 'Held', songIds: [1] }));
    await held.continued;
    server.process.kill('SIGINT');
    // npm passes its copy on a few milliseconds after the terminal's: apart, not merged into one by the kernel.
    await sleep(20);
    server.process.kill('SIGINT');
    await server.waitForLog((line) => line.msg === 'draining in-flight requests');
    held.finish();
    expect((await held.answer).status).toBe(200);
    expect(await server.exited, server.output()).toEqual({ code: 0, signal: null });
    expect(server.logLines().some((line) => line.msg === 'a second signal while closing; exiting now')).toBe(false);
  }, 60_000);
});

describe('a bad setting stops `serve`', () => {
  const databases: TestDatabase[] = [];

  afterAll(async () => {
    await killAllServers();
    for (const database of databases) await database.drop();
  });

  it.each([
    ['PORT', '99999'],
    ['PORT', 'eighty'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'mysql://localhost/mixtape'],
    ['MIXTAPE_BOOTSTRAP_USER', 'no-password'],
    ['MIXTAPE_AUTH_MAX_FAILURES', '0'],
    ['MIXTAPE_SEED_CATALOG', 'maybe'],
  ])('%s=%s: exits non-zero, naming the setting on stderr', async (name, value) => {
    const database = await createTestDatabase('sqlite');
    databases.push(database);
    const result = await runServeExpectingExit({ DATABASE_URL: database.url, LOG_LEVEL: 'info', [name]: value });
    expect(result.signal, result.stderr).toBeNull();
    expect(result.code, result.stderr).not.toBe(0);
    expect(result.code, result.stderr).not.toBeNull();
    expect(result.stderr).toContain(name);
    expect(result.stdout).not.toContain('Server listening');
    expect(result.stdout).not.toContain('mixtape is ready');
  });
});

describe('`serve` says in one line what stops it, and what the operator should know at start', () => {
  const databases: TestDatabase[] = [];

  afterAll(async () => {
    await killAllServers();
    for (const database of databases) await database.drop();
  });

  const newDatabase = async (dialect: 'sqlite' | 'postgres') => {
    const database = await createTestDatabase(dialect);
    databases.push(database);
    return database;
  };

  const expectOneLine = (result: { code: number | null; stderr: string; stdout: string }, pattern: RegExp) => {
    expect(result.code, result.stderr).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(pattern);
    expect(result.stdout).not.toContain('mixtape is ready');
  };

  it('a port in use', async () => {
    const database = await newDatabase('sqlite');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const result = await runServeExpectingExit({ DATABASE_URL: database.url, LOG_LEVEL: 'info', PORT: String(port) });
      expectOneLine(result, new RegExp(`^mixtape: port ${port} is in use on 127\\.0\\.0\\.1: .*set PORT`));
    } finally {
      taken.close();
    }
  });

  it('a PostgreSQL database that does not exist', async () => {
    const url = new URL((await newDatabase('postgres')).url);
    url.pathname = '/mixtape_no_such_database';
    const result = await runServeExpectingExit({ DATABASE_URL: url.toString(), LOG_LEVEL: 'info' });
    expectOneLine(
      result,
      /^mixtape: PostgreSQL at .* has no database "mixtape_no_such_database": create it \(createdb /,
    );
  });

  it('warns when nobody can sign in, and when the bootstrap user exists with another password', async () => {
    const database = await newDatabase('sqlite');
    const first = await startServer({ databaseUrl: database.url, env: { LOG_LEVEL: 'info' } });
    const hint = await first.waitForLog((line) => /no users yet/.test(String(line.msg)));
    expect(hint.msg).toContain('mixtape user add');
    expect(await first.stop()).toEqual({ code: 0, signal: null });

    const second = await startServer({
      databaseUrl: database.url,
      bootstrapUser: 'ann:first',
      env: { LOG_LEVEL: 'info' },
    });
    await second.waitForLog((line) => line.msg === 'bootstrap user created');
    expect(await second.stop()).toEqual({ code: 0, signal: null });

    const third = await startServer({
      databaseUrl: database.url,
      bootstrapUser: 'ann:second',
      env: { LOG_LEVEL: 'info' },
    });
    const warning = await third.waitForLog((line) => /MIXTAPE_BOOTSTRAP_USER/.test(String(line.msg)));
    expect(warning.msg).toContain('another password');
    expect(third.output()).not.toContain('second');
    expect(third.logLines().some((line) => /no users yet/.test(String(line.msg)))).toBe(false);
    expect(await third.stop()).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('says plainly what is rate limited, and warns when the bootstrap password is shorter than a new one may be', async () => {
    const database = await newDatabase('sqlite');
    const short = await startServer({ databaseUrl: database.url, bootstrapUser: 'kim:right horse' });
    try {
      expect(short.logLines()[0]?.msg).toBe(
        'no rate limit on API requests (MIXTAPE_RATE_LIMIT is 0); requests to shared playlists (/s/…) are limited ' +
          'per client address, counted by each instance on its own (set REDIS_URL to count across instances)',
      );
      const warning = await short.waitForLog((line) => /MIXTAPE_BOOTSTRAP_USER/.test(String(line.msg)));
      expect(warning.level).toBe(40);
      expect(warning.msg).toBe(
        'the password MIXTAPE_BOOTSTRAP_USER gives "kim" is shorter than 12 characters, the least a new password ' +
          'needs (mixtape user add refuses it): enough to try the service on this machine; anywhere else, choose a ' +
          'longer one with: mixtape user passwd kim',
      );
      expect(short.output()).not.toContain('right horse');
      // Taken all the same: kim signs in with it.
      const security = `Basic ${Buffer.from('kim:right horse').toString('base64')}`;
      expect((await fetch(`${short.url}/v3/playlist`, { headers: { security } })).status).toBe(200);
    } finally {
      expect(await short.stop()).toEqual({ code: 0, signal: null });
    }
    const long = await startServer({ databaseUrl: database.url, bootstrapUser: 'lea:a long enough password' });
    expect(long.logLines().some((line) => line.msg === 'bootstrap user created')).toBe(true);
    expect(long.logLines().some((line) => /shorter than/.test(String(line.msg)))).toBe(false);
    expect(await long.stop()).toEqual({ code: 0, signal: null });
  }, 60_000);
});

/** Runs `npm run build` in the checkout, as `npm start` does first; its exit code, or null when killed at the bound. */
function build(timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(null);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** Whether nothing accepts a connection at the service's address any more. */
function portClosed(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => {
      resolve(true);
    });
  });
}

describe('SIGTERM to npm, as a supervisor sends it, stops the service started as README says', () => {
  const databases: TestDatabase[] = [];

  // `npm start` builds first (prestart); here the build is done once, and `--ignore-scripts` skips it below.
  beforeAll(async () => {
    expect(await build(240_000)).toBe(0);
  }, 250_000);

  afterAll(async () => {
    for (const database of databases) await database.drop();
  });

  it.each([
    ['npm start', 'npm', ['start', '--ignore-scripts']],
    ['npx mixtape serve', 'npx', ['mixtape', 'serve']],
  ] as const)(
    '%s: the service drains, closes the database and exits, and its port closes',
    async (_, command, args) => {
      const database = await createTestDatabase('sqlite');
      databases.push(database);
      const started = await startThroughNpm(command, args, {
        DATABASE_URL: database.url,
        MIXTAPE_BOOTSTRAP_USER: `${USER}:${PASSWORD}`,
      });
      try {
        expect(started.servicePid).not.toBe(started.npm.pid);
        const held = holdRequest(started.url, 'GET', '/v3/playlist?limit=1');
        await held.continued;

        // To npm alone, as `kill PID`, `docker stop` or an orchestrator sends it: not to its process group.
        started.npm.kill('SIGTERM');
        await started.waitForLog((line) => line.msg === 'draining in-flight requests', 10_000);
        held.finish();
        expect((await held.answer).status).toBe(200);

        const gone = await eventually(() => Promise.resolve(!isRunning(started.servicePid)), 30_000);
        expect(gone, started.output()).toBe(true);
        expect(await portClosed(started.url)).toBe(true);
        await started.waitForLog((line) => line.msg === 'stopped', 10_000);
        expect(started.output()).not.toMatch(/a second signal|shutdown failed|did not finish/);
        const npmExit = await Promise.race([started.npmExited, sleep(30_000).then(() => 'still running')]);
        // npm start waits for the service and exits with its code; npx ends as the signal ended the shell it ran.
        if (command === 'npm') expect(npmExit).toEqual({ code: 0, signal: null });
        else expect(npmExit).not.toBe('still running');
      } finally {
        if (isRunning(started.servicePid)) process.kill(started.servicePid, 'SIGKILL');
        killGroup(started.npm, 'SIGKILL');
      }
    },
    180_000,
  );
});
