/**
 * The floor under the service's fixed cost: a Fastify server that answers `GET /v3/playlist/:id` with the canned
 * answer, as bench/baseline-server.ts does with `node:http`, adding one layer of the service's request path at a
 * time (the mode, first argument):
 *
 * - `fastify`: the route alone, the answer's headers set one by one and its bytes sent;
 * - `fastify-log`: and the request log line the service writes (pino, buffered, to a file rather than stdout);
 * - `fastify-log-auth`: and the credential's lookup as a cached sign-in takes it (`credentialToken`, the HMAC of
 *   the token, an LRU cache; a token not found is decoded by `readCredential` and kept, as `authenticate` does).
 *
 * Same IPC messages as the baseline server (see bench/baseline.ts).
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { LogController } from 'fastify';
import { LRUCache } from 'lru-cache';
import pino from 'pino';
import type { BaselineMessage, CannedAnswer } from './baseline-server.js';
import { credentialToken, readCredential } from '../src/credentials/credential.js';
import { HmacKey } from '../src/credentials/hmac.js';
import { logStream } from '../src/logger.js';

const mode = process.argv[2] ?? 'fastify';
const log = mode === 'fastify' ? false : true;

let answer = { status: 200, headers: {} as Readonly<Record<string, string>>, body: Buffer.alloc(0) };

const logFile = join(tmpdir(), `mixtape-floor-${process.pid}.log`);
const app = Fastify({
  // As src/logger.ts writes the service's log: a turn's lines at once into buffered writes of about 4 KB,
  // credentials redacted.
  loggerInstance: log
    ? pino(
        { redact: { paths: ['req.headers.security', 'req.headers.authorization'], censor: '[redacted]' } },
        logStream(logFile),
      )
    : undefined,
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
if (log) {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.url, status: reply.statusCode, ms: reply.elapsedTime },
      'request',
    );
    done();
  });
}

const tell = (message: BaselineMessage) => process.send?.(message);

process.on('message', (message: CannedAnswer) => {
  answer = { status: message.status, headers: message.headers, body: Buffer.from(message.bodyBase64, 'base64') };
  tell({ type: 'answering' });
});
process.once('disconnect', () => {
  void app.close().finally(() => {
    rmSync(logFile, { force: true });
  });
});

const address = await app.listen({ port: 0, host: '127.0.0.1' });
tell({ type: 'listening', port: Number(new URL(address).port) });
