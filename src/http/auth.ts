import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Caller, Authenticator } from '../credentials/authenticator.js';
import { addVary } from './vary.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set on every route that uses `authenticate`. */
    caller: Caller;
  }
}

/**
 * The hook that authenticates a route's requests; answers 401 or 429 through the error handler. A credential
 * verified recently is taken without a promise (every authenticated request passes here).
 */
export function authenticateHook(app: FastifyInstance, authenticator: Authenticator): onRequestHookHandler {
  app.decorateRequest('caller', null as unknown as Caller);
  return (request, reply, done) => {
    addVary(reply, 'security', 'Authorization');
    const known = authenticator.cachedCaller(request.headers, request.ip);
    if (known !== undefined) {
      request.caller = known;
      done();
      return;
    }
    authenticator.authenticate(request.headers, request.ip).then((caller) => {
      request.caller = caller;
      done();
    }, done);
  };
}
