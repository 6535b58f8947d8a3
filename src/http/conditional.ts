import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';
import { addVary } from './vary.js';

/**
 * Conditional requests (RFC 9110 §13), decided from the current answer's ETag: a read whose `If-None-Match` names
 * it answers 304; a write whose `If-Match` does not name it answers 412.
 */

/** How a client may keep an answer and revalidate it. */
export interface Revalidation {
  readonly etag: string;
  readonly cacheControl: string;
  /** A request header the answer depends on besides the credential, such as `Accept`. */
  readonly vary?: string;
}

const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);

/**
 * Whether an `If-None-Match` header matches an ETag (RFC 9110 §13.1.2): `*`, or any listed tag that is the same
 * once weak prefixes are set aside, since this precondition uses the weak comparison.
 */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const wanted = opaque(etag);
  const tags = header.match(/(?:W\/)?"[^"]*"/g) ?? [];
  return tags.some((tag) => opaque(tag) === wanted);
}

/**
 * Whether an `If-Match` header is satisfied by the current ETag (RFC 9110 §13.1.1): `*` for any current answer, or
 * a listed tag equal to it by the strong comparison, so a weak tag never matches.
 */
export function ifMatch(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  if (etag.startsWith('W/')) return false;
  const tags: string[] = header.match(/(?:W\/)?"[^"]*"/g) ?? [];
  return tags.includes(etag);
}

/** The 412 of a write whose `If-Match` names another answer than the current one, with the current ETag. */
export function preconditionFailed(etag: string): ApiError {
  return new ApiError(
    412,
    'The playlist has changed since you read it (If-Match does not name its current ETag): read it again, then retry.',
    { etag },
  );
}

/** Sets an answer's ETag, `Cache-Control` and `Vary`; only once the answer is this one, so no error is kept as it. */
export function setRevalidation(reply: FastifyReply, revalidation: Revalidation): FastifyReply {
  if (revalidation.vary !== undefined) addVary(reply, revalidation.vary);
  return reply.header('etag', revalidation.etag).header('cache-control', revalidation.cacheControl);
}

/**
 * A read's precondition: when the client's `If-None-Match` names the current ETag, answers 304 with the
 * revalidation headers and returns the reply; otherwise returns undefined, and the caller sends the answer.
 */
export function sendNotModified(
  request: FastifyRequest,
  reply: FastifyReply,
  revalidation: Revalidation,
): FastifyReply | undefined {
  if (!ifNoneMatch(request.headers['if-none-match'], revalidation.etag)) return undefined;
  return setRevalidation(reply, revalidation).code(304).send();
}
