import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { isDatabaseUnavailable } from '../db/faults.js';
import { emptyJsonBody } from './body-parsers.js';
import { ApiError, errorBody, newEntry } from './errors.js';
import { loggedUrl } from './logged-url.js';
import { REQUEST_ID_HEADER } from './request-id.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The error this request answered with, for its log line. */
    failure?: { entry: number; reason: string };
  }
}

const FRAMEWORK_MESSAGES: Record<string, (error: FastifyError, limit: number) => string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, limit) => `The request body is larger than the limit of ${limit} bytes.`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'The request body must be JSON, sent with Content-Type: application/json.',
  FST_ERR_CTP_EMPTY_JSON_BODY: () => emptyJsonBody(undefined),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'The Content-Length header does not match the body.',
  FST_ERR_CTP_INVALID_JSON_BODY: () => 'The request body is not valid JSON.',
  FST_ERR_BAD_URL: () => 'The URL is malformed (a bad %-escape?).',
  FST_ERR_MAX_PARAM_LENGTH: () => 'A path segment is too long to be an id.',
};

const STATUS_MESSAGES: Record<number, string> = {
  400: 'The request is malformed.',
  404: 'No such resource.',
  405: 'This method is not allowed here.',
  408: 'The request took too long to arrive.',
  413: 'The request body is too large.',
  414: 'The request URL is too long.',
  415: 'The request body has an unsupported content type.',
  431: 'The request headers are too large.',
};

/** Maps any error to the status, message and headers the client gets. */
export function toApiError(error: unknown, bodyLimit: number): ApiError {
  if (error instanceof ApiError) return error;
  const fe = error as Partial<FastifyError>;
  if (fe.validation !== undefined) return ApiError.badRequest(fe.message ?? 'The request is not valid.');
  const framework = fe.code === undefined ? undefined : FRAMEWORK_MESSAGES[fe.code];
  if (framework !== undefined && fe.statusCode !== undefined) {
    return new ApiError(fe.statusCode, framework(fe as FastifyError, bodyLimit));
  }
  if (isDatabaseUnavailable(error)) {
    return ApiError.unavailable('The database is not reachable at the moment; try again shortly.');
  }
  const status = fe.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const message = error instanceof SyntaxError ? 'The request body is not valid JSON.' : STATUS_MESSAGES[status];
    return new ApiError(status, message ?? 'The request cannot be served.');
  }
  return new ApiError(500, 'Something went wrong on our side. Quote the entry number when you report it.');
}

/** Sends the error body and records its entry number for the request's log line. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  const entry = newEntry();
  request.failure = { entry, reason: error.message };
  return reply
    .code(error.statusCode)
    .headers(error.headers)
    .header('cache-control', 'no-store')
    .header(REQUEST_ID_HEADER, request.id)
    .header('x-content-type-options', 'nosniff')
    .type('application/json; charset=utf-8')
    .send({ ...errorBody(error.message, entry), ...error.details });
}

/** Fastify's `frameworkErrors`: errors raised before routing (a malformed %-escape, an over-long path parameter). */
export function frameworkErrors(bodyLimit: number): FastifyServerOptions['frameworkErrors'] {
  return (error, request, reply) => {
    void sendError(request, reply, toApiError(error, bodyLimit));
  };
}

/**
 * One error handler and one not-found handler for the whole app, framework errors included. Register it before the
 * routes: the 405 answers' `Allow` comes from a table of the routes, filled as each is added.
 */
export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    if (route.url === '*' || route.url.endsWith('*')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const source = route.url
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[A-Za-z0-9_]+/g, '[^/]+')
      .replace(/\/$/, '');
    const pattern = new RegExp(`^${source}/?$`);
    const existing = routes.find((r) => r.pattern.source === pattern.source);
    if (existing === undefined) routes.push({ pattern, methods: new Set(methods) });
    else for (const m of methods) existing.methods.add(m);
  });

  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error, bodyLimit);
    const result = sendError(request, reply, apiError);
    // The request's own log line carries the entry; a fault also gets its original error, under the same entry.
    if (apiError.statusCode >= 500 && !(error instanceof ApiError)) {
      const unavailable = apiError.statusCode === 503;
      request.log[unavailable ? 'warn' : 'error'](
        { entry: request.failure?.entry, err: error },
        unavailable ? 'database unavailable' : 'unexpected fault',
      );
    }
    return result;
  });

  /** The 404's message; a path that exists under `/v3` says so (`/playlist` → `/v3/playlist`). */
  const nothingAt = (path: string): string => {
    const versioned = `/v3${path}`;
    if (path.startsWith('/v3/') || !routes.some((r) => r.pattern.test(versioned)))
      return `There is nothing at ${path}.`;
    return `There is nothing at ${path}. The API is under /v3: try ${versioned}.`;
  };

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const route = routes.find((r) => r.pattern.test(path));
    // The messages repeat the path, and the log line the message: never a share link's token.
    const shown = loggedUrl(path);
    if (route === undefined) return sendError(request, reply, new ApiError(404, nothingAt(shown)));
    const allow = [...route.methods].sort().join(', ');
    return sendError(
      request,
      reply,
      new ApiError(405, `${request.method} is not allowed on ${shown}; use ${allow}.`, { allow }),
    );
  });
}
