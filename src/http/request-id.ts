import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header that carries a request's id, both ways. */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * What a client may send as its own request id: 1 to 128 characters from a set that is safe in a header, a log
 * line and a URL (letters, digits and `-._:@/+=`). Anything else is replaced by an id of our own.
 */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9\-._:@/+=]{1,128}$/;

/** Fastify's `genReqId`: the client's `X-Request-Id` when it is acceptable, else a new UUID. */
export function requestId(raw: IncomingMessage): string {
  const given = raw.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
}
