import compress from '@fastify/compress';
import type { FastifyInstance, onSendHookHandler } from 'fastify';
import { CONTENT_CODINGS, encodedEtag } from './conditional.js';

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
