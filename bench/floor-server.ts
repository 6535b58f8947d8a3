/**
 * A server answering every request with one canned answer set over IPC by `startBaseline`; the mode says how much of
 * the service's request path runs first: `http`, a bare `node:http` server (the baseline); `fastify`, the route alone;
 * `fastify-log`, and the request log (pino to a file, as src/logger.ts writes it); `fastify-log-auth`, and a cached
 * sign-in's credential lookup (`credentialToken`, its HMAC, an LRU cache; else `readCredential`).
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { LogController } from 'fastify';
import { LRUCache } from 'lru-cache';
import pino from 'pino';
import { credentialToken, readCredential } from '../src/credentials/credential.js';
import { HmacKey } from '../src/credentials/hmac.js';
import { logStream } from '../src/logger.js';
import { ROOT, pinToCpu } from './service.js';

/** An answer as the parent sends it: the body in base64, since IPC messages are JSON. */
export interface CannedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly bodyBase64: string;
}

export type ServerMessage = { readonly type: 'listening'; readonly port: number } | { readonly type: 'answering' };

/** A captured answer of the service. */
export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

// The server sets these itself for every answer; copying them would send them twice.
const PER_CONNECTION_HEADERS = new Set(['connection', 'content-length', 'date', 'keep-alive', 'transfer-encoding']);

export interface Baseline {
  readonly url: string;
  readonly pid: number;
  /** From now on, every request gets this answer. */
  answerWith(answer: Answer): Promise<void>;
  stop(): Promise<void>;
}

/** Starts this server in `mode` (the bare `node:http` baseline by default), on `cpu` if given. */
export async function startBaseline(cpu?: number, mode = 'http'): Promise<Baseline> {
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc'] as const;
  const child = fork('bench/floor-server.ts', [mode], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: [...stdio] });
  if (cpu !== undefined && child.pid !== undefined) pinToCpu(child.pid, cpu);
  const next = async (type: ServerMessage['type']) => {
    for (;;) {
      const [message] = (await once(child, 'message')) as [ServerMessage];
      if (message.type === type) return message;
    }
  };
  const listening = await next('listening');
  return {
    url: `http://127.0.0.1:${listening.type === 'listening' ? listening.port : 0}`,
    pid: child.pid!,
    async answerWith(answer) {
      const headers = Object.entries(answer.headers).filter(([name]) => !PER_CONNECTION_HEADERS.has(name));
      const [bodyBase64, status] = [answer.body.toString('base64'), answer.status];
      const message: CannedAnswer = { status, headers: Object.fromEntries(headers), bodyBase64 };
      const answering = next('answering');
      child.send(message);
      await answering;
    },
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// The server itself, in the child process.
if (process.argv[1]?.endsWith('floor-server.ts') === true) {
  const mode = process.argv[2] ?? 'http';
  let answer = { status: 200, headers: {} as Readonly<Record<string, string>>, body: Buffer.alloc(0) };
  const tell = (message: ServerMessage) => process.send?.(message);
  process.on('message', (message: CannedAnswer) => {
    answer = { status: message.status, headers: message.headers, body: Buffer.from(message.bodyBase64, 'base64') };
    tell({ type: 'answering' });
  });

  if (mode === 'http') {
    const server = createServer((request, response) => {
      // The body is read in full before answering, as the service does.
      request.resume();
      request.once('end', () => {
        response.writeHead(answer.status, answer.headers);
        response.end(answer.body);
      });
    });
    // The parent is gone: nothing left to serve.
    process.once('disconnect', () => {
      server.close();
      server.closeAllConnections();
    });
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address !== null && typeof address === 'object') tell({ type: 'listening', port: address.port });
    });
  } else {
    const logFile = join(tmpdir(), `mixtape-floor-${process.pid}.log`);
    const app = Fastify({
      // As src/logger.ts writes the service's log: a turn's lines at once in buffered writes, credentials redacted.
      loggerInstance:
        mode === 'fastify'
          ? undefined
          : pino(
              { redact: { paths: ['req.headers.security', 'req.headers.authorization'], censor: '[redacted]' } },
              logStream(logFile),
            ),
      logController: new LogController({ disableRequestLogging: true }),
    });
    const key = new HmacKey(randomBytes(32));
    const signedIn = new LRUCache<string, { name: string }>({ max: 10_000 });
    app.get('/v3/playlist/:id', (request, reply) => {
      if (mode === 'fastify-log-auth') {
        const found = credentialToken(request.headers);
        if (found.kind !== 'token') return reply.code(401).send();
        const digest = key.digest(found.token);
        if (signedIn.get(digest) === undefined) {
          const read = readCredential(request.headers);
          if (read.kind !== 'ok') return reply.code(401).send();
          signedIn.set(digest, { name: read.credential.name });
        }
      }
      reply.code(answer.status);
      for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
      return reply.send(answer.body);
    });
    if (mode !== 'fastify') {
      app.addHook('onResponse', (request, reply, done) => {
        const line = { method: request.method, url: request.url, status: reply.statusCode, ms: reply.elapsedTime };
        request.log.info(line, 'request');
        done();
      });
    }
    process.once('disconnect', () => {
      void app.close().finally(() => {
        rmSync(logFile, { force: true });
      });
    });
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    tell({ type: 'listening', port: Number(new URL(address).port) });
  }
}
