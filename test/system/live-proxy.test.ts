import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/service.js';
import { basic } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase, type TestDialect } from '../helpers/databases.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { send, sleep, type Sent } from '../helpers/traffic.js';
import { privateHaproxy, type PrivateHaproxy } from './helpers/private-haproxy.js';

/**
 * Live changes (docs/api.md, "Live changes") through HAProxy with the configuration the repository ships
 * (deploy/haproxy/haproxy.cfg), two instances on one database: a request that waits on one instance (a long poll, a
 * `GET` with `Prefer: wait`, the stream of events) is answered by a change written through the other, at once, and
 * the proxy passes the stream's events on as they are written, pings and its last event included.
 */

const OWNER = basic('hana', 'quiet river stone');
const STREAM_MAX_SECONDS = 20;
const INSTANCE_ENV = {
  MIXTAPE_TRUST_PROXY: '1',
  MIXTAPE_DRAIN_DELAY_SECONDS: '2',
  MIXTAPE_STREAM_MAX_SECONDS: String(STREAM_MAX_SECONDS),
};

/** A generous bound on how long a change may take to reach a waiting request once its write is acknowledged. */
const PROMPT_MS = 5000;

type Name = 'a' | 'b';

/** One block of a `text/event-stream` body (an event or a comment) and when it arrived. */
interface Block {
  readonly text: string;
  readonly at: number;
}

/** A stream of server-sent events read as it arrives, over node:http, every wait bounded in time. */
interface EventStream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Every block so far, in order. */
  readonly blocks: Block[];
  /** The first block from index `from` on that satisfies `test`, once it came; rejects after `timeoutMs`. */
  waitFor(test: (text: string) => boolean, timeoutMs: number, from?: number): Promise<Block & { index: number }>;
  /** Settles when the answer ended (`'end'`) or failed (`'error: …'`); rejects after `timeoutMs`. */
  ended(timeoutMs: number): Promise<string>;
  close(): void;
}

function openStream(url: string, headers: Record<string, string>): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false });
    const timer = setTimeout(() => req.destroy(new Error('no answer within 10 s')), 10_000);
    // Before the answer, an error fails the open; after it, the answer's own events say how it ended.
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.once('response', (res: IncomingMessage) => {
      clearTimeout(timer);
      const blocks: Block[] = [];
      const listeners = new Set<() => void>();
      let buffer = '';
      let finished: string | undefined;
      const tell = () => {
        for (const listener of [...listeners]) listener();
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let at = buffer.indexOf('\n\n');
        while (at >= 0) {
          blocks.push({ text: buffer.slice(0, at), at: Date.now() });
          buffer = buffer.slice(at + 2);
          at = buffer.indexOf('\n\n');
        }
        tell();
      });
      res.once('end', () => {
        finished = 'end';
        tell();
      });
      res.once('error', (error) => {
        finished ??= `error: ${error.message}`;
        tell();
      });
      res.once('close', () => {
        finished ??= 'closed before its end';
        tell();
      });
      const had = () => blocks.map((block) => block.text).join('\n\n');
      /** What `found` gives, once it gives something; fails when the answer ends first, or after `timeoutMs`. */
      const until = <T>(found: () => T | undefined, timeoutMs: number, what: string) =>
        new Promise<T>((done, fail) => {
          const settle = (error: Error | undefined, value?: T) => {
            listeners.delete(check);
            clearTimeout(limit);
            if (error === undefined) done(value as T);
            else fail(error);
          };
          const check = () => {
            const value = found();
            if (value !== undefined) settle(undefined, value);
            else if (finished !== undefined)
              settle(new Error(`the stream ended (${finished}) before ${what}:\n${had()}`));
          };
          const limit = setTimeout(() => {
            settle(new Error(`${what}: not within ${timeoutMs} ms; the stream had:\n${had()}`));
          }, timeoutMs);
          listeners.add(check);
          check();
        });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        blocks,
        waitFor: (test, timeoutMs, from = 0) =>
          until(
            () => {
              const index = blocks.findIndex((block, i) => i >= from && test(block.text));
              return index < 0 ? undefined : { ...blocks[index]!, index };
            },
            timeoutMs,
            'the block waited for',
          ),
        ended: (timeoutMs) => until(() => finished, timeoutMs, 'the end'),
        close: () => {
          req.destroy();
        },
      });
    });
    req.end();
  });
}

/** The `event:`, `id:` and `data:` of an event block. */
function fields(text: string): { event?: string; id?: string; data?: string } {
  const field = (name: string) =>
    text
      .split('\n')
      .find((line) => line.startsWith(`${name}: `))
      ?.slice(name.length + 2);
  return { event: field('event'), id: field('id'), data: field('data') };
}

interface Change {
  readonly id: number;
  readonly change: string;
  readonly version: number;
}

for (const dialect of ['postgres', 'sqlite'] as const satisfies readonly TestDialect[]) {
  describe(`live changes across two instances behind HAProxy, on ${dialect}`, () => {
    let database: TestDatabase;
    const instances: Partial<Record<Name, ServerProcess>> = {};
    let proxy: PrivateHaproxy | undefined;
    let playlistId: number;

    const instance = (name: Name): ServerProcess => {
      const found = instances[name];
      if (found === undefined) throw new Error(`instance ${name} did not start`);
      return found;
    };
    const proxyUrl = (): string => {
      if (proxy === undefined) throw new Error('the proxy did not start');
      return proxy.httpUrl;
    };

    /** How many requests wait for a change on one instance (`mixtape_waiting_requests`, read from it directly). */
    const waitingOn = async (name: Name): Promise<number> => {
      const metrics = await send(`${instance(name).url}/metrics`, { timeoutMs: 5000 });
      const line = /^mixtape_waiting_requests (\d+)$/m.exec(metrics.body);
      if (metrics.status !== 200 || line === null) throw new Error(`/metrics of ${name}: ${metrics.status}`);
      return Number(line[1]);
    };

    /** The instance the proxy sent the one waiting request to: polls both instances' gauge for up to 5 s. */
    const holderOfTheWait = async (): Promise<{ holder: Name; other: Name }> => {
      const deadline = Date.now() + 5000;
      let seen = { a: 0, b: 0 };
      while (Date.now() < deadline) {
        seen = { a: await waitingOn('a'), b: await waitingOn('b') };
        if (seen.a + seen.b === 1) return seen.a === 1 ? { holder: 'a', other: 'b' } : { holder: 'b', other: 'a' };
        await sleep(50);
      }
      throw new Error(`expected one waiting request on one instance, saw ${JSON.stringify(seen)}`);
    };

    /** A rename written directly to one instance (not through the proxy); answers when it is acknowledged. */
    const renameOn = async (name: Name, to: string): Promise<number> => {
      const edited = await send(`${instance(name).url}/v3/playlist/${playlistId}`, {
        method: 'PATCH',
        headers: { security: OWNER },
        body: { name: to },
        timeoutMs: 10_000,
      });
      expect(edited.status, edited.body).toBe(200);
      return Date.now();
    };

    /** `next` of the feed as of now, through the proxy. */
    const now = async (): Promise<string> => {
      const answer = await send(`${proxyUrl()}/v3/changes?since=now`, { headers: { security: OWNER } });
      expect(answer.status, answer.body).toBe(200);
      return (JSON.parse(answer.body) as { next: string }).next;
    };

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      const ports = { a: await freePort(), b: await freePort() };
      for (const name of ['a', 'b'] as const) {
        instances[name] = await startServer({
          databaseUrl: database.url,
          bootstrapUser: 'hana:quiet river stone',
          env: { ...INSTANCE_ENV, PORT: String(ports[name]) },
        });
      }
      proxy = await privateHaproxy({
        servers: { a: `127.0.0.1:${ports.a}`, b: `127.0.0.1:${ports.b}` },
        checkInterval: '250ms',
      });
      await proxy.waitFor({ a: 'UP', b: 'UP' });
      const created = await send(`${proxyUrl()}/v3/playlist`, {
        method: 'POST',
        headers: { security: OWNER },
        body: { name: 'Heard on both sides', songIds: [1, 2, 3] },
      });
      expect(created.status, created.body).toBe(200);
      playlistId = (JSON.parse(created.body) as { id: number }).id;
    }, 90_000);

    afterAll(async () => {
      await proxy?.stop();
      await Promise.all(Object.values(instances).map((running) => running.stop('SIGKILL')));
      await database.drop();
    });

    it('a long poll waiting on one instance is answered by a change written through the other', async () => {
      const next = await now();
      const started = Date.now();
      const polling = send(`${proxyUrl()}/v3/changes?since=${encodeURIComponent(next)}&wait=30`, {
        headers: { security: OWNER },
        timeoutMs: 45_000,
      });
      const { holder, other } = await holderOfTheWait();
      // Long enough for the instance that holds it to have read the feed and be waiting.
      await sleep(500);
      const edited = await renameOn(other, `Renamed on ${other}, heard on ${holder}`);
      const answer: Sent = await polling;
      const afterEditMs = Date.now() - edited;
      expect(answer.status, answer.body).toBe(200);
      const page = JSON.parse(answer.body) as { changes: Change[] };
      expect(page.changes).toEqual([expect.objectContaining({ id: playlistId, change: 'edit' })]);
      expect(afterEditMs, `a wait on ${holder} answered ${afterEditMs} ms after the edit on ${other}`).toBeLessThan(
        PROMPT_MS,
      );
      console.info(`${dialect}: a long poll on ${holder} answered ${afterEditMs} ms after an edit on ${other}`);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(await waitingOn(holder)).toBe(0);
    }, 60_000);

    it('a GET that waits (Prefer: wait) on one instance answers 200 for a change written through the other', async () => {
      const read = await send(`${proxyUrl()}/v3/playlist/${playlistId}`, { headers: { security: OWNER } });
      expect(read.status, read.body).toBe(200);
      const etag = String(read.headers.etag);
      const waiting = send(`${proxyUrl()}/v3/playlist/${playlistId}`, {
        headers: { security: OWNER, 'if-none-match': etag, prefer: 'wait=30' },
        timeoutMs: 45_000,
      });
      const { holder, other } = await holderOfTheWait();
      await sleep(500);
      const to = `Renamed on ${other} while a GET waits on ${holder}`;
      const edited = await renameOn(other, to);
      const answer = await waiting;
      const afterEditMs = Date.now() - edited;
      expect(answer.status, answer.body).toBe(200);
      expect(answer.headers['preference-applied']).toBe('wait=30');
      expect(answer.headers.etag).not.toBe(etag);
      expect((JSON.parse(answer.body) as { name: string }).name).toBe(to);
      expect(afterEditMs, `answered ${afterEditMs} ms after the edit`).toBeLessThan(PROMPT_MS);
      console.info(`${dialect}: a GET waiting on ${holder} answered ${afterEditMs} ms after an edit on ${other}`);
    }, 60_000);

    it('a stream the client leaves stops waiting on the instance behind the proxy', async () => {
      const stream = await openStream(`${proxyUrl()}/v3/changes/stream?since=now`, { security: OWNER });
      try {
        expect(stream.status).toBe(200);
        await stream.waitFor((text) => text === ': ready', 5000);
        const { holder } = await holderOfTheWait();
        stream.close();
        await expect.poll(() => waitingOn(holder), { timeout: 5000, interval: 100 }).toBe(0);
      } finally {
        stream.close();
      }
    });

    it('a stream through the proxy gets the event of a change written on the other instance, then a ping and its end', async () => {
      const opened = Date.now();
      const stream = await openStream(`${proxyUrl()}/v3/changes/stream?since=now`, {
        security: OWNER,
        'accept-encoding': 'gzip, br',
      });
      try {
        expect(stream.status).toBe(200);
        expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
        expect(stream.headers['content-encoding']).toBeUndefined();
        expect(stream.headers['cache-control']).toBe('no-store');
        // The first bytes come through at once: the proxy does not hold them back.
        const ready = await stream.waitFor((text) => text === ': ready', 5000);
        expect(ready.at - opened).toBeLessThan(PROMPT_MS);

        const { holder, other } = await holderOfTheWait();
        const edited = await renameOn(other, `Renamed on ${other}, streamed from ${holder}`);
        const event = await stream.waitFor((text) => fields(text).event === 'changes', 15_000);
        const afterEditMs = event.at - edited;
        expect(afterEditMs, `the event left ${holder} ${afterEditMs} ms after the edit on ${other}`).toBeLessThan(
          PROMPT_MS,
        );
        console.info(`${dialect}: a stream from ${holder} sent the event ${afterEditMs} ms after an edit on ${other}`);
        const { id, data } = fields(event.text);
        const page = JSON.parse(data!) as { changes: Change[]; next: string };
        expect(page.changes).toEqual([expect.objectContaining({ id: playlistId, change: 'edit' })]);
        expect(id).toBe(page.next);

        // A quiet stream: a ping after 15 s, then the last event after MIXTAPE_STREAM_MAX_SECONDS, and the end.
        const ping = await stream.waitFor((text) => text === ': ping', 20_000, event.index + 1);
        expect(ping.at - opened).toBeGreaterThan(14_000);
        const end = await stream.waitFor((text) => fields(text).event === 'end', 15_000, ping.index + 1);
        expect(fields(end.text).id).toBe(id);
        expect(end.at - opened).toBeGreaterThan(STREAM_MAX_SECONDS * 1000 - 1000);
        expect(await stream.ended(5000)).toBe('end');
        expect(stream.blocks.map((block) => fields(block.text).event ?? block.text)).toEqual([
          ': ready',
          'changes',
          ': ping',
          'end',
        ]);
      } finally {
        stream.close();
      }
    }, 60_000);
  });
}
