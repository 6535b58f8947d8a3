import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Every method the API has; a new one must be added here or browsers cannot call it from another origin. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Request headers a page may set: the credential, the JSON body, revalidation, conditional edits and the request id. */
export const CORS_ALLOWED_HEADERS = [
  'security',
  'authorization',
  'content-type',
  'if-none-match',
  'if-match',
  'x-request-id',
  'prefer',
];

/** Answer headers a page may read beyond the always readable ones (`Content-Type`, `Cache-Control`…). */
export const CORS_EXPOSED_HEADERS = [
  'etag',
  'location',
  'content-location',
  'preference-applied',
  'x-total-count',
  'link',
  'content-disposition',
  'retry-after',
  'www-authenticate',
  'allow',
  'accept-patch',
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** A browser's preflight: `OPTIONS` with both `Origin` and `Access-Control-Request-Method`. */
const isPreflight = (request: FastifyRequest): boolean =>
  request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined;

/**
 * Lets pages from these origins call the API. A preflight is answered 204 before routing and authentication. Any
 * other `OPTIONS` answers as it does with CORS off, as a method the path lacks (405 with `Allow`, or 404), with the
 * JSON error body: the plugin would answer it `400 text/plain`.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  const options = {
    origin: [...origins],
    methods: [...CORS_METHODS],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE,
    strictPreflight: false,
  } satisfies FastifyCorsOptions;
  const withoutPreflight = { ...options, preflight: false };
  await app.register(cors, {
    delegator: (request, callback) => {
      callback(null, request.method === 'OPTIONS' && !isPreflight(request) ? withoutPreflight : options);
    },
  });
}
