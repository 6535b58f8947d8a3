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

/** Whether the request carries a body (a non-zero Content-Length, or a chunked one). */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '0');
}

/**
 * JSON bodies, with the leniency the getting-started examples need: `curl -d` sends
 * `application/x-www-form-urlencoded`, so such a body, or `text/plain`, is read as JSON when the credential
 * came in the `security` header. Browsers never send that header on their own, so this opens no cross-site
 * request forgery; with `Authorization` only JSON media types are taken.
 *
 * Bodies are read as bytes and decoded strictly as UTF-8, then handed to Fastify's own JSON parser (which keeps
 * its prototype-poisoning protection). An empty body is no body on a route that takes none (a generated client's
 * DELETE with `Content-Type: application/json`), and a 400 on one that needs one. Compressed bodies are refused.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  const parseJson = (request: FastifyRequest, body: Buffer, done: Done, onError = (error: Error) => error) => {
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined);
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
      if (request.headers.security === undefined) {
        done(new ApiError(415, 'The request body must be sent with Content-Type: application/json.'), undefined);
        return;
      }
      parseJson(
        request,
        body as Buffer,
        done,
        () => new ApiError(415, 'The request body is not JSON; send a JSON object.'),
      );
    },
  );

  app.addHook('preParsing', async (request, _reply, payload) => {
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
