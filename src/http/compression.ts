import { promisify } from 'node:util';
import zlib from 'node:zlib';
import negotiate from '@fastify/accept-negotiator';
import compress from '@fastify/compress';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { CONTENT_CODINGS, encodedEtag } from './conditional.js';
import { addVary } from './conditional.js';

/** A coding the service compresses answers in. */
export type ContentCoding = (typeof CONTENT_CODINGS)[number];

/** Answers smaller than this go out as they are: compressing them saves little and costs CPU on the hot path. */
const COMPRESS_ABOVE_BYTES = 2048;

const toArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/**
 * A strong ETag names one exact byte sequence; once compressed, the bytes differ, so the tag names its coding
 * (`"abc-gzip"`, `encodedEtag`). It stays strong, and the preconditions take it for the same playlist, so a client
 * that compresses can send it back in `If-Match` as well as in `If-None-Match`. Weak tags (pages) stay as they are.
 */
const nameCodingInEtag: onSendHookHandler = (_request, reply, payload, done) => {
  const etag = reply.getHeader('etag');
  const coding = reply.getHeader('content-encoding');
  if (typeof etag === 'string' && etag.startsWith('"') && typeof coding === 'string' && coding !== 'identity') {
    reply.header('etag', encodedEtag(etag, coding));
  }
  done(null, payload);
};

/**
 * Compresses answers as `Accept-Encoding` allows, and names the coding in the ETag of a compressed one. Register it
 * before the routes: the renaming is added to each route as it is added, after the compression's own `onSend`.
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  await app.register(compress, {
    threshold: COMPRESS_ABOVE_BYTES,
    // Only the codings the preconditions know an ETag by.
    encodings: [...CONTENT_CODINGS, 'identity'],
    // A compressed request body stays a 415: the API takes plain JSON.
    globalDecompression: false,
  });
  app.addHook('onRoute', (route) => {
    route.onSend = [...toArray(route.onSend), nameCodingInEtag];
  });
}

/** zstd, which Node has from 22.15 (the engines take 22.14): the compression offers it only then. */
const zstdCompress = (zlib as Partial<typeof zlib>).zstdCompress;

/** The codings offered, in the order the compression prefers them (@fastify/compress's, zstd first where Node has it). */
const OFFERED: readonly string[] = [
  ...CONTENT_CODINGS.filter((coding) => coding !== 'zstd' || zstdCompress !== undefined),
  'identity',
];

/**
 * The coding @fastify/compress would send this request's answer in (the same negotiation of `Accept-Encoding`, with
 * the same codings), for an answer kept already compressed; undefined for none (an answer sent as it is).
 */
export function answerCoding(request: FastifyRequest, bytes: number): ContentCoding | undefined {
  const header = request.headers['accept-encoding'];
  if (bytes < COMPRESS_ABOVE_BYTES || header === undefined || request.headers['x-no-compression'] !== undefined) {
    return undefined;
  }
  // No preference (`*`) and `x-gzip` are gzip's, as the compression reads them.
  const coding = negotiate(header.toLowerCase().replace(/\*|x-gzip/g, 'gzip'), [...OFFERED]);
  return coding === null || coding === 'identity' ? undefined : (coding as ContentCoding);
}

const BROTLI = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } };
const compressors: Record<ContentCoding, (body: Buffer) => Promise<Buffer>> = {
  zstd: zstdCompress === undefined ? promisify(zlib.gzip) : promisify(zstdCompress),
  br: (body) => promisify(zlib.brotliCompress)(body, BROTLI),
  gzip: promisify(zlib.gzip),
  deflate: promisify(zlib.deflate),
};

/** `body` in `coding`, as the compression would send it (its options), off the event loop. */
export function compressed(body: Buffer, coding: ContentCoding): Promise<Buffer> {
  return compressors[coding](body);
}

/**
 * Sends bytes already in `coding` (from `compressed`): the compression leaves an answer with a `Content-Encoding`
 * alone, and the ETag is named for its coding as any other's.
 */
export function sendEncoded(reply: FastifyReply, body: Buffer, coding: ContentCoding): FastifyReply {
  addVary(reply, 'accept-encoding');
  return reply.header('content-encoding', coding).send(body);
}
