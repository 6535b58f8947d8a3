import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

type Done = (error: Error | null, body?: unknown) => void;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as text; bytes that are not UTF-8 are a 400, not a U+FFFD stored in a playlist. */
export function decode(body: Buffer): string {
  try {
    return utf8.decode(body);
  } catch {
    throw ApiError.badRequest('The request body is not valid UTF-8.');
  }
}

const expectedJson = (mediaType: string | undefined): string =>
  mediaType === 'application/json-patch+json' ? 'a JSON Patch document (an array of operations)' : 'a JSON object';

/** What an empty (or absent) body on a route that needs one is told, whatever type it was sent as. */
export function emptyJsonBody(mediaType: string | undefined): string {
  return `The request body is empty; it must be ${expectedJson(mediaType)}.`;
}

/** Whether the request carries a body (a non-zero Content-Length, or a chunked one). */
export function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '0');
}

/**
 * The media types a page on any site can send with the browser's credentials and no CORS preflight (an HTML form,
 * or `fetch` in `no-cors` mode): the CORS-safelisted values of `Content-Type`.
 */
const CROSS_SITE_TYPES = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

/**
 * The one rule against cross-site request forgery, for every route that takes a body: a body
 * of a type a page on another site can send is taken only when the credential came in the `security` header, which
 * browsers never send on their own. With `Authorization` (which a browser remembers after a 401) it is a 415.
 */
function refuseCrossSiteBody(request: FastifyRequest): ApiError | undefined {
  const type = request.mediaType;
  if (type === undefined || !CROSS_SITE_TYPES.has(type) || request.headers.security !== undefined || !hasBody(request))
    return undefined;
  return new ApiError(
    415,
    `A body sent as ${type} is taken only with the credential in the security header, as a page on another site ` +
      'can send that type; send the body with its own Content-Type (application/json, or a playlist file type).',
  );
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body may be left out: an empty body with a JSON Content-Type is read as none, not refused. */
    bodyOptional?: boolean;
  }
}

/**
 * JSON bodies, with the leniency the getting-started examples need: `curl -d` sends
 * `application/x-www-form-urlencoded`, so such a body, or `text/plain`, is read as JSON when the credential
 * came in the `security` header (`refuseCrossSiteBody` refuses it otherwise); with `Authorization` only JSON
 * media types are taken.
 *
 * Bodies are read as bytes and decoded strictly as UTF-8, then handed to Fastify's own JSON parser (which keeps
 * its prototype-poisoning protection). A route that takes no body ignores one (a generated client's DELETE with
 * `Content-Type: application/json` and no body); an empty body is a 400 on one that needs one, and no body at all
 * on one whose body may be left out (`config: { bodyOptional: true }`). Compressed bodies
 * are refused.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  const parseJson = (request: FastifyRequest, body: Buffer, done: Done, onError = (error: Error) => error) => {
    if (request.routeOptions.schema?.body === undefined) {
      done(null, undefined);
      return;
    }
    if (body.length === 0) {
      // A route whose body may be left out (`config.bodyOptional`) reads an empty one as none.
      if (request.routeOptions.config.bodyOptional === true) done(null, undefined);
      else done(ApiError.badRequest(emptyJsonBody(request.mediaType)));
      return;
    }
    let text: string;
    try {
      text = decode(body);
    } catch (error) {
      done(error as ApiError);
      return;
    }
    void json(request, text, (error, value) => {
      if (error) done(onError(error));
      // A literal null is refused here, so that null at validation means no body at all (see validation.ts).
      else if (value === null)
        done(ApiError.badRequest(`The request body is null; it must be ${expectedJson(request.mediaType)}.`));
      else done(null, value);
    });
  };

  app.removeContentTypeParser('application/json');
  for (const type of ['application/json', /^application\/[\w.+-]+\+json$/i]) {
    app.addContentTypeParser(type, { parseAs: 'buffer' }, (request, body, done) => {
      parseJson(request, body as Buffer, done);
    });
  }
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(
    ['text/plain', 'application/x-www-form-urlencoded'],
    { parseAs: 'buffer' },
    (request, body, done) => {
      parseJson(
        request,
        body as Buffer,
        done,
        () => new ApiError(415, 'The request body is not JSON; send a JSON object.'),
      );
    },
  );

  app.addHook('preParsing', async (request, _reply, payload) => {
    // A body sent to an operation that takes none (a GET, a DELETE) is never read, so it is not refused either.
    if (request.routeOptions.schema?.body === undefined) return payload;
    const crossSite = refuseCrossSiteBody(request);
    if (crossSite !== undefined) throw crossSite;
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && hasBody(request)) {
      const codings = encoding.split(',').map((coding) => coding.trim().toLowerCase());
      if (codings.some((coding) => coding !== 'identity' && coding !== '')) {
        throw new ApiError(
          415,
          `The request body is sent with Content-Encoding: ${encoding}; send it uncompressed, without Content-Encoding.`,
          { 'accept-encoding': 'identity' },
        );
      }
    }
    return payload;
  });
}
