import compress from '@fastify/compress';
import type { FastifyInstance, onSendHookHandler } from 'fastify';

/** Answers smaller than this go out as they are: compressing them saves little and costs CPU on the hot path. */
const COMPRESS_ABOVE_BYTES = 2048;

const toArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/**
 * A strong ETag names one exact byte sequence; once compressed, the bytes differ, so the validator becomes weak
 * (`W/`). `If-None-Match` compares weakly, so either form revalidates the same answer.
 */
const weakenEncodedEtag: onSendHookHandler = (_request, reply, payload, done) => {
  const etag = reply.getHeader('etag');
  const encoding = reply.getHeader('content-encoding');
  if (typeof etag === 'string' && etag.startsWith('"') && encoding !== undefined && encoding !== 'identity') {
    reply.header('etag', `W/${etag}`);
  }
  done(null, payload);
};

/**
 * Compresses answers as `Accept-Encoding` allows, and weakens the ETag of a compressed one. Register it before the
 * routes: the weakening is added to each route as it is added, after the compression's own `onSend`.
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  await app.register(compress, {
    threshold: COMPRESS_ABOVE_BYTES,
    // A compressed request body stays a 415: the API takes plain JSON.
    globalDecompression: false,
  });
  app.addHook('onRoute', (route) => {
    route.onSend = [...toArray(route.onSend), weakenEncodedEtag];
  });
}
