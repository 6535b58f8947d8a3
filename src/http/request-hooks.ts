import type { FastifyInstance } from 'fastify';
import type { Caller } from './auth.js';
import { ApiError } from './errors.js';
import { loggedUrl } from './logged-url.js';
import { REQUEST_ID_HEADER } from './request-id.js';

/**
 * What every request goes through, whatever its route: on arrival its answer's default headers and the HTTP/1.1
 * `Host` check; once answered, its one log line. Callbacks rather than promises: cheaper on the hot path.
 */
export function registerRequestHooks(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply
      .header(REQUEST_ID_HEADER, request.id)
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff');
    const { httpVersion } = request.raw;
    if (httpVersion === '1.1' && request.headers.host === undefined) {
      done(ApiError.badRequest('An HTTP/1.1 request must have a Host header.'));
      return;
    }
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        method: request.method,
        url: loggedUrl(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        ...(request.failure === undefined ? {} : { entry: request.failure.entry, reason: request.failure.reason }),
        ...((request.caller as Caller | null) === null ? {} : { user: request.caller.name }),
      },
      'request',
    );
    done();
  });
}
