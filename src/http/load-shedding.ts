import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import type { LoadSheddingSettings } from '../config.js';
import { ApiError } from './errors.js';

/** How often the event loop's delay and utilisation are sampled; each sample is their mean over this time. */
const SAMPLE_MS = 500;
const RETRY_AFTER_SECONDS = 2;

/**
 * GET routes whose cost grows with what the caller asks: a diff, a search (by their singular path). Covers are not
 * among them: their renderer has its own bound and answers 503 when it is full, and a page's cover must not fail
 * because the page's own first render (its fonts, its template) was what delayed the loop.
 */
const COSTLY_READS = new Set(['/v3/playlist/:playlistId/diff']);
const SEARCHABLE = new Set(['/v3/playlist', '/v3/song']);

/** The path a route was declared with, the plural alias read as its singular. */
const routePath = (request: FastifyRequest) =>
  (request.routeOptions.url ?? '').replace(/^\/v3\/(playlist|song)s/, '/v3/$1');

/**
 * Whether a request costs enough to be refused while the event loop is behind: every write (a create, an import, an
 * edit, a restore, a delete, a member or a link), and the reads whose cost the caller controls (a diff, a search). Everything else (one playlist, a page without a search, versions, members, the change feed, the health
 * checks and metrics) is answered as ever, so that the instance stays in its proxy's pool and its users can read.
 */
export function isCostly(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return request.method !== 'OPTIONS';
  const path = routePath(request);
  if (COSTLY_READS.has(path)) return true;
  return SEARCHABLE.has(path) && typeof (request.query as { search?: unknown }).search === 'string';
}

/**
 * Load shedding by the instance's own health (@fastify/under-pressure): while the event loop's mean delay over the
 * last half second is past `maxEventLoopDelayMs` (or its utilisation past `maxEventLoopUtilization`, when set), a
 * costly request is refused with 503 and `Retry-After` before it is authenticated or its body read, and counted in
 * `mixtape_requests_shed_total`. Nothing is shed in the first second after the instance is ready.
 */
export async function registerLoadShedding(
  app: FastifyInstance,
  settings: LoadSheddingSettings,
  registry: Registry,
): Promise<void> {
  if (settings.maxEventLoopDelayMs === 0 && settings.maxEventLoopUtilization === 0) return;
  const shed = new Counter({
    name: 'mixtape_requests_shed_total',
    help: 'Costly requests refused with 503 while the event loop was behind',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  // The first samples hold the start's own work (migrations, the first compiles): nothing is shed until two samples
  // of the running instance have been taken.
  let sheddingFrom = Infinity;
  app.addHook('onReady', (done) => {
    sheddingFrom = performance.now() + 2 * SAMPLE_MS;
    done();
  });
  await app.register(underPressure, {
    sampleInterval: SAMPLE_MS,
    maxEventLoopDelay: settings.maxEventLoopDelayMs,
    maxEventLoopUtilization: settings.maxEventLoopUtilization,
    eventLoopUtilizationMode: 'interval',
    pressureHandler: (request, _reply, type) => {
      if (performance.now() < sheddingFrom || !isCostly(request)) return undefined;
      shed.inc({ reason: type });
      return Promise.reject(
        ApiError.unavailable('The service is overloaded right now; try again in a moment.', RETRY_AFTER_SECONDS),
      );
    },
  });
}
