import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify';
import { ApiError } from './errors.js';
import { error, HEADERS } from './responses.js';
import { addVary } from './conditional.js';

/** Who a request is made for. */
export interface Caller {
  readonly userId: number;
  readonly name: string;
  /** Where the credential came from: bodies sent as text are only taken with the `security` header. */
  readonly source: 'security' | 'authorization';
  /** The user's password, or an app token of theirs (1.11.0; a stream's ticket stands for a read token). */
  readonly via: 'password' | 'token';
  /** What the credential allows: `all` with the password, a token's scope otherwise. */
  readonly scope: 'read' | 'write' | 'all';
  /** The token's id, with a token. */
  readonly tokenId?: number;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** What tells a request's caller from its headers and address: credentials/authenticator.ts, which app.ts passes. */
export interface CallerCheck {
  /** The caller when known without a promise (a credential verified recently), undefined otherwise. */
  cachedCaller(headers: Headers, address: string): Caller | undefined;
  /** The caller, or an ApiError (401, 429, 503). */
  authenticate(headers: Headers, address: string): Promise<Caller>;
  /** A request of the caller's was answered (a token's use is noted, off the request's path). */
  answered(caller: Caller): void;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set on every route that uses `authenticate`. */
    caller: Caller;
  }
  interface FastifyContextConfig {
    /**
     * A read token may call this route although its method is not GET (1.11.0): the stream's ticket, a token
     * revoking itself. Every other route whose method is not GET or HEAD refuses a read token.
     */
    readScope?: boolean;
    /** Only the password may call this route, never a token (1.11.0): making and listing tokens. */
    passwordOnly?: boolean;
  }
}

/** The challenge of a token whose scope does not allow the request (RFC 6750). */
export const INSUFFICIENT_SCOPE = { 'www-authenticate': 'Bearer error="insufficient_scope"' } as const;

const READS = new Set(['GET', 'HEAD']);

type RouteConfig = { readonly readScope?: boolean; readonly passwordOnly?: boolean } | undefined;

/**
 * Why the caller may not call a route with this method and config, or undefined when they may. The one place scopes
 * are decided: a route is safe for tokens by default (a read token reads, with GET or HEAD), and says so in its
 * `config` when it lets a read token do more (`readScope`) or no token at all (`passwordOnly`).
 */
function scopeRefusal(caller: Caller, method: string, config: RouteConfig): string | undefined {
  if (caller.via === 'password') return undefined;
  if (config?.passwordOnly === true) {
    return 'App tokens are made and listed with the password only, never with a token.';
  }
  if (caller.scope === 'read' && !READS.has(method) && config?.readScope !== true) {
    return `This token's scope is "read": it may read, not change anything; ${method} takes a token of scope "write" or the password.`;
  }
  return undefined;
}

/** The 403 a token may meet on a route, as the document lists it beside the route's own (see `documentScopes`). */
const SCOPE_ANSWER = {
  read: 'A token whose scope does not allow this (a `read` token changes nothing): `WWW-Authenticate: Bearer error="insufficient_scope"`.',
  passwordOnly:
    'A token: tokens are made and listed with the password only (`WWW-Authenticate: Bearer error="insufficient_scope"`).',
};

/**
 * Adds the 403 of a token refused for its scope to the documented answers of each route that authenticates with
 * `hook`, merged into a 403 the route documents already, so that the document follows the same rule as the hook.
 */
function documentScopes(app: FastifyInstance, hook: onRequestHookHandler): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const hooks = [route.onRequest ?? []].flat();
    const config = route.config;
    const response = route.schema?.response as Record<string, { description?: string; headers?: object }> | undefined;
    if (!hooks.includes(hook) || response === undefined) return;
    const why =
      config?.passwordOnly === true
        ? SCOPE_ANSWER.passwordOnly
        : READS.has(String(route.method)) || config?.readScope === true
          ? undefined
          : SCOPE_ANSWER.read;
    if (why === undefined) return;
    const own = response[403];
    route.schema = {
      ...route.schema,
      response: {
        ...response,
        403:
          own === undefined
            ? error(why, HEADERS.wwwAuthenticate)
            : {
                ...own,
                description: `${own.description ?? ''} Or: ${why}`,
                headers: { ...own.headers, ...HEADERS.wwwAuthenticate },
              },
      },
    };
  });
}

/**
 * The hook that authenticates a route's requests; answers 401 or 429 through the error handler, and 403 for a token
 * whose scope the route does not allow. A credential verified recently is taken without a promise (every
 * authenticated request passes here).
 */
export function authenticateHook(app: FastifyInstance, authenticator: CallerCheck): onRequestHookHandler {
  app.decorateRequest('caller', null as unknown as Caller);
  const admit = (caller: Caller, request: Parameters<onRequestHookHandler>[0]): ApiError | undefined => {
    request.caller = caller;
    const refusal = scopeRefusal(caller, request.method, request.routeOptions.config);
    return refusal === undefined ? undefined : new ApiError(403, refusal, INSUFFICIENT_SCOPE);
  };
  const hook: onRequestHookHandler = (request, reply, done) => {
    addVary(reply, 'security', 'Authorization');
    const known = authenticator.cachedCaller(request.headers, request.ip);
    if (known !== undefined) {
      done(admit(known, request));
      return;
    }
    authenticator.authenticate(request.headers, request.ip).then((caller) => {
      done(admit(caller, request));
    }, done);
  };
  // A token's use is noted once its request is answered.
  app.addHook('onResponse', (request, _reply, done) => {
    const caller = request.caller as Caller | null;
    if (caller?.tokenId !== undefined) authenticator.answered(caller);
    done();
  });
  documentScopes(app, hook);
  return hook;
}
