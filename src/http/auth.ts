import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import type { Caller, Authenticator } from '../credentials/authenticator.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set on every route that uses `authenticate`. */
    caller: Caller;
  }
}

/** The hook that authenticates a route's requests; answers 401 or 429 through the error handler. */
export function authenticateHook(app: FastifyInstance, authenticator: Authenticator): onRequestAsyncHookHandler {
  app.decorateRequest('caller', null as unknown as Caller);
  return async (request, reply) => {
    const vary = reply.getHeader('vary');
    reply.header('vary', vary === undefined ? 'security, Authorization' : `${String(vary)}, security, Authorization`);
    request.caller = await authenticator.authenticate(request.headers, request.ip);
  };
}
