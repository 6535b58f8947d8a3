import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Leaves the pool: `/readyz` answers 503 so that a proxy or orchestrator sends no new requests, while every
     * request is still served; each answer carries `Connection: close`, so that kept-alive connections end after
     * their next answer instead of being cut when the service stops.
     */
    markDraining(): void;
    /** Makes new requests answer 503 while in-flight ones finish. */
    markClosing(): void;
    /** Where the instance is in its shutdown. */
    shutdownPhase(): ShutdownPhase;
  }
}

/** Where the instance is in its shutdown: serving, draining (out of the pool, still serving), or closing. */
export type ShutdownPhase = 'serving' | 'draining' | 'closing';

/**
 * Shutting down as requests see it. After `app.markDraining()` (on SIGTERM, for `MIXTAPE_DRAIN_DELAY_SECONDS`)
 * requests are served with `Connection: close` and the readiness probe answers 503; after `app.markClosing()` every
 * new request answers 503 with `Retry-After: 1` while those in flight finish; `app.shutdownPhase()` tells which.
 */
export function registerShutdown(app: FastifyInstance): void {
  let phase: ShutdownPhase = 'serving';
  app.decorate('markDraining', () => {
    if (phase === 'serving') phase = 'draining';
  });
  app.decorate('markClosing', () => {
    phase = 'closing';
  });
  app.decorate('shutdownPhase', () => phase);
  app.addHook('onRequest', (_request, reply, done) => {
    if (phase === 'serving') {
      done();
      return;
    }
    reply.header('connection', 'close');
    if (phase === 'closing') done(ApiError.unavailable('The service is shutting down; try again shortly.', 1));
    else done();
  });
}
