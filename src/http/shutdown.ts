import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Makes new requests answer 503 while in-flight ones finish. */
    markClosing(): void;
  }
}

/**
 * Shutting down as requests see it: once `app.markClosing()` is called (on SIGTERM), every new request answers 503
 * with `Retry-After: 1`, while those in flight finish. Returns whether it has been called, for the readiness probe.
 */
export function registerShutdown(app: FastifyInstance): () => boolean {
  let closing = false;
  app.decorate('markClosing', () => {
    closing = true;
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    if (closing) done(ApiError.unavailable('The service is shutting down; try again shortly.', 1));
    else done();
  });
  return () => closing;
}
