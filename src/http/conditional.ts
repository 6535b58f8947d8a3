import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendableBody, type BodyParts } from './body-parts.js';
import { ApiError } from './errors.js';
import { JSON_TYPE, REVALIDATE } from './responses.js';

/*
 * What a request's headers ask of the answer, beyond its body: conditional requests (RFC 9110 §13), decided from the
 * current answer's ETag (a read whose `If-None-Match` names it answers 304; a write whose `If-Match` does not name it
 * answers 412); the `Prefer` header (RFC 7240: a conditional read that waits, a write answered in brief); and the
 * `Vary` that tells caches which request headers an answer depends on.
 */

/**
 * Adds request headers to the answer's `Vary` (RFC 9110 §12.5.5), each once: a cache then keeps one answer per value
 * of each. Names already listed, in any case, and a `Vary: *` are left as they are.
 */
export function addVary(reply: FastifyReply, ...names: string[]): void {
  const current = reply.getHeader('vary');
  if (current === undefined) {
    reply.header('vary', names.join(', '));
    return;
  }
  const listed = Array.isArray(current) ? current.join(', ') : String(current);
  const known = listed.split(',').map((name) => name.trim().toLowerCase());
  if (known.includes('*')) return;
  const added = names.filter((name) => !known.includes(name.toLowerCase()));
  if (added.length > 0) reply.header('vary', [listed, ...added].join(', '));
}

/** The longest `Prefer: wait` honoured, in seconds. */
export const LONGEST_WAIT_SECONDS = 60;

/**
 * The preferences of a `Prefer` header (RFC 7240 §2), by name (lowercased), each with its value unquoted (the empty
 * text when it has none) and without its parameters. The first of a name counts; a request may repeat the header.
 */
function preferences(header: string | readonly string[] | undefined): Map<string, string> {
  const found = new Map<string, string>();
  if (header === undefined) return found;
  const text = typeof header === 'string' ? header : header.join(',');
  for (const preference of text.split(',')) {
    const [token, ...rest] = preference.split(';')[0]!.split('=');
    const name = token?.trim().toLowerCase() ?? '';
    if (name === '' || found.has(name)) continue;
    const value = rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1');
    found.set(name, value);
  }
  return found;
}

/**
 * The `wait` preference of a `Prefer` header (RFC 7240 §4.3), in whole seconds, at most LONGEST_WAIT_SECONDS; undefined
 * when there is none or it is not a number of seconds (a preference the server does not understand is ignored, as
 * RFC 7240 says). The first `wait` in the header counts; a request may repeat the header.
 */
export function preferredWait(header: string | readonly string[] | undefined): number | undefined {
  const value = preferences(header).get('wait');
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  const seconds = Number(value);
  return seconds === 0 ? undefined : Math.min(seconds, LONGEST_WAIT_SECONDS);
}

/**
 * Whether a `Prefer` header asks for `return=minimal` (RFC 7240 §4.2): a write then answers what it did in brief, not
 * the whole playlist. The first `return` counts; `return=representation`, or a value the service does not know, is
 * the usual answer.
 */
export function prefersMinimal(header: string | readonly string[] | undefined): boolean {
  return preferences(header).get('return')?.toLowerCase() === 'minimal';
}

/** How a client may keep an answer and revalidate it. */
export interface Revalidation {
  readonly etag: string;
  readonly cacheControl: string;
  /** A request header the answer depends on besides the credential, such as `Accept`. */
  readonly vary?: string;
}

const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);

/** The content codings the service compresses answers with (@fastify/compress leaves out what Node lacks). */
export const CONTENT_CODINGS = ['zstd', 'br', 'gzip', 'deflate'] as const;

/**
 * The strong ETag of an answer sent in a content coding: its bytes differ from the identity answer's, so its tag does
 * too (`"abc"` becomes `"abc-gzip"`), while the service still knows it for the same playlist in every precondition.
 */
export function encodedEtag(etag: string, coding: string): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/** The tags an answer with this strong ETag goes out with, by coding: the identity one first. */
const variants = (etag: string): string[] => [etag, ...CONTENT_CODINGS.map((coding) => encodedEtag(etag, coding))];

const listed = (header: string): string[] => header.match(/(?:W\/)?"[^"]*"/g) ?? [];

/**
 * Which of the current answer's tags an `If-None-Match` header names (RFC 9110 §13.1.2), or undefined: `*` names the
 * identity one, and otherwise the first listed tag that is one of them once weak prefixes are set aside, since this
 * precondition uses the weak comparison.
 */
export function noneMatchTag(header: string | undefined, etag: string): string | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return etag;
  // A weak tag (a page's) is the same whatever the coding.
  const mine = etag.startsWith('W/') ? [opaque(etag)] : variants(etag);
  const found = listed(header).find((tag) => mine.includes(opaque(tag)));
  return found === undefined ? undefined : etag.startsWith('W/') ? etag : opaque(found);
}

/**
 * What a write's `If-Match` header asks for (RFC 9110 §13.1.1), read once by its route: any current answer (`*`), or
 * one of the tags it lists. The service compares it with the current ETags (`isExpected`): those of every form of the
 * playlist (`playlistEtags`), so a client may send the tag of whichever form it read.
 */
export type ExpectedEtag = { readonly any: true } | { readonly any: false; readonly tags: readonly string[] };

/** The request's `If-Match` header as what it asks for; undefined without one. */
export function expectedEtag(header: string | undefined): ExpectedEtag | undefined {
  if (header === undefined) return undefined;
  return header.trim() === '*' ? { any: true } : { any: false, tags: listed(header) };
}

/**
 * Whether the current answer is what `If-Match` asks for: any current answer, or a listed tag equal by the strong
 * comparison to the tag of one of the current answers (`etags`: one, or those of every form) in one of its
 * encodings, so a weak tag never matches.
 */
export function isExpected(expected: ExpectedEtag, etags: string | readonly string[]): boolean {
  if (expected.any) return true;
  const mine = (typeof etags === 'string' ? [etags] : etags).filter((etag) => !etag.startsWith('W/')).flatMap(variants);
  return expected.tags.some((tag) => mine.includes(tag));
}

/**
 * The 412 of a write whose `If-Match` names no current answer, with the current ETag of the form the write answers
 * with.
 */
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
  const named = noneMatchTag(request.headers['if-none-match'], revalidation.etag);
  if (named === undefined) return undefined;
  // The tag the client keeps, so that its cache finds the answer this 304 freshens (RFC 9111 §4.3.4).
  return setRevalidation(reply, { ...revalidation, etag: named })
    .code(304)
    .send();
}

/**
 * The answer (its bytes, or their pieces: see sendableBody), or 304 if the client already has it; either way with its
 * ETag and `Cache-Control`.
 */
export function sendRevalidated(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: { readonly body: Buffer | BodyParts; readonly etag: string },
  type = JSON_TYPE,
): FastifyReply {
  const revalidation = { etag: answer.etag, cacheControl: REVALIDATE };
  const notModified = sendNotModified(request, reply, revalidation);
  if (notModified !== undefined) return notModified;
  const { body } = answer;
  setRevalidation(reply, revalidation).type(type);
  return reply.send(Buffer.isBuffer(body) ? body : sendableBody(reply, body));
}
