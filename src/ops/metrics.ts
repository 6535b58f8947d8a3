import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Histogram, type Registry } from 'prom-client';

/** Prometheus metrics into `registry`: the process's own, and the time to answer each request by route and status. */
export function collectMetrics(app: FastifyInstance, registry: Registry): void {
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
}
