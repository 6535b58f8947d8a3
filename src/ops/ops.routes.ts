import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Histogram, type Registry } from 'prom-client';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { HEADERS, error } from '../http/responses.js';

// A probe gets its answer within two seconds, whatever the database does.
const READY_TIMEOUT_MS = 1500;

const Status = Type.Object({ status: Type.String() });
// Every route, these included, answers 503 once shutdown has begun.
const SHUTTING_DOWN = error('The service is shutting down.', HEADERS.retryAfter);

/** Liveness, readiness and Prometheus metrics; no credential needed. */
export function opsRoutes(app: FastifyInstance, deps: { db: Db; registry: Registry; isClosing: () => boolean }): void {
  const { registry } = deps;
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'mixtape_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unknown';
    duration.observe({ method: request.method, route, status: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });

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
        description: 'Readiness: the database answers and the service is not shutting down.',
        response: {
          200: { description: 'Ready.', content: { 'application/json': { schema: Status } } },
          503: error('Not ready: the database is unreachable or the service is shutting down.', HEADERS.retryAfter),
        },
      },
    },
    async () => {
      if (deps.isClosing()) throw ApiError.unavailable('The service is shutting down.');
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
      schema: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        tags,
        description: 'Prometheus metrics in the text exposition format.',
        response: {
          200: { description: 'The metrics.', content: { 'text/plain': { schema: Type.String() } } },
          503: SHUTTING_DOWN,
        },
      },
    },
    async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
}
