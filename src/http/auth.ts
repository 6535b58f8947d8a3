import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { addVary } from './vary.js';

/** Who a request is made for. */
export interface Caller {
  readonly userId: number;
  readonly name: string;
  /** Where the credential came from: bodies sent as text are only taken with the `security` header. */
  readonly source: 'security' | 'authorization';
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** What tells a request's caller from its headers and address: credentials/authenticator.ts, which app.ts passes. */
export interface CallerCheck {
  /** The caller when known without a promise (a credential verified recently), undefined otherwise. */
  cachedCaller(headers: Headers, address: string): Caller | undefined;
  /** The caller, or an ApiError (401, 429, 503). */
  authenticate(headers: Headers, address: string): Promise<Caller>;
}

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
export function authenticateHook(app: FastifyInstance, authenticator: CallerCheck): onRequestHookHandler {
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
