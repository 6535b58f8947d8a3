import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

/**
 * JSON bodies, with the leniency the getting-started examples need: `curl -d` sends
 * `application/x-www-form-urlencoded`, so such a body, or `text/plain`, is read as JSON when the credential
 * came in the `security` header. Browsers never send that header on their own, so this opens no cross-site
 * request forgery; with `Authorization` only JSON media types are taken.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(/^application\/[\w.+-]+\+json$/i, { parseAs: 'string' }, json);
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(
    ['text/plain', 'application/x-www-form-urlencoded'],
    { parseAs: 'string' },
    (request, body, done) => {
      if (request.headers.security === undefined) {
        done(new ApiError(415, 'The request body must be sent with Content-Type: application/json.'), undefined);
        return;
      }
      void json(request, String(body), (error, value) => {
        if (error) done(new ApiError(415, 'The request body is not JSON; send a JSON object.'), undefined);
        else done(null, value);
      });
    },
  );
}
