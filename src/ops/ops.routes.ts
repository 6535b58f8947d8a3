import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Registry } from 'prom-client';
import type { Db } from '../db/database.js';
import type { ShutdownPhase } from '../http/shutdown.js';
import { ApiError } from '../http/errors.js';
import { HEADERS, error } from '../http/responses.js';

// A probe gets its answer within two seconds, whatever the database does.
const READY_TIMEOUT_MS = 1500;

const Status = Type.Object({ status: Type.String() });
// Every route, these included, answers 503 once shutdown has begun (http/shutdown.ts).
const SHUTTING_DOWN = error('The service is shutting down.', HEADERS.retryAfter);

export interface OpsRouteDeps {
  readonly db: Db;
  readonly registry: Registry;
  /** Where shutdown is: from `draining` on, the readiness probe answers 503. */
  readonly shutdownPhase: () => ShutdownPhase;
  /** The bearer token `/metrics` needs; undefined: none. */
  readonly metricsToken?: string | undefined;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * Lets through only `Authorization: Bearer <token>`. Digests of equal length are compared in constant time, so the
 * time of a 401 tells nothing about the token, not even its length.
 */
function bearerToken(token: string): onRequestHookHandler {
  const expected = sha256(token);
  return (request, _reply, done) => {
    const given = /^bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
    if (timingSafeEqual(sha256(given), expected)) {
      done();
      return;
    }
    done(
      new ApiError(401, 'The metrics need a token: send Authorization: Bearer <MIXTAPE_METRICS_TOKEN>.', {
        'www-authenticate': 'Bearer realm="mixtape-metrics"',
      }),
    );
  };
}

/** Liveness and readiness, with no credential; Prometheus metrics, behind a bearer token when one is set. */
export function opsRoutes(app: FastifyInstance, deps: OpsRouteDeps): void {
  const { registry, metricsToken } = deps;

  const tags = ['Operations'];
  app.get(
    '/healthz',
    {
      // A probe throttled into failing would get a healthy instance restarted: never rate limited.
      config: { rateLimit: false },
      schema: {
        operationId: 'health',
        summary: 'Liveness probe',
        tags,
        description: 'Liveness: the process answers.',
        response: {
          200: { description: 'Alive.', content: { 'application/json': { schema: Status } } },
          503: SHUTTING_DOWN,
        },
      },
    },
    () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      // A probe throttled into failing would get a healthy instance restarted: never rate limited.
      config: { rateLimit: false },
      schema: {
        operationId: 'ready',
        summary: 'Readiness probe',
        tags,
        description:
          'Readiness: the database answers and the service is not shutting down. From SIGTERM on it answers 503 ' +
          '(for `MIXTAPE_DRAIN_DELAY_SECONDS` while other requests are still served), so that a proxy takes the ' +
          'instance out of its pool before it stops.',
        response: {
          200: { description: 'Ready.', content: { 'application/json': { schema: Status } } },
          503: error('Not ready: the database is unreachable or the service is shutting down.', HEADERS.retryAfter),
        },
      },
    },
    async () => {
      if (deps.shutdownPhase() !== 'serving') throw ApiError.unavailable('The service is shutting down.');
      try {
        await deps.db.ready(READY_TIMEOUT_MS);
      } catch {
        throw ApiError.unavailable('The database is not reachable or does not take writes.');
      }
      return { status: 'ok' };
    },
  );

  app.get(
    '/metrics',
    {
      // A probe throttled into failing would get a healthy instance restarted: never rate limited.
      config: { rateLimit: false },
      ...(metricsToken === undefined ? {} : { onRequest: bearerToken(metricsToken) }),
      schema: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        tags,
        description:
          'Prometheus metrics in the text exposition format: the process (CPU, memory, event loop, garbage ' +
          'collection), request durations by route and status, and cover drawings and cache hits. No user names, ' +
          'playlists or addresses. With `MIXTAPE_METRICS_TOKEN` set, it needs `Authorization: Bearer <token>`.',
        response: {
          200: { description: 'The metrics.', content: { 'text/plain': { schema: Type.String() } } },
          401: error('`MIXTAPE_METRICS_TOKEN` is set and the bearer token is missing or wrong.', {
            'WWW-Authenticate': { type: 'string', description: '`Bearer realm="mixtape-metrics"`.' },
          }),
          503: SHUTTING_DOWN,
        },
      },
    },
    async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
}
