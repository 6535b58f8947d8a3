import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** An answer's bytes in pieces, sent in turn (a page of playlists: each one's kept bytes), and their length in all. */
export interface BodyParts {
  readonly parts: readonly Buffer[];
  readonly length: number;
}

/**
 * Answers at most this long are joined into one Buffer and sent as any other answer. Past it, @fastify/compress
 * compresses any answer as a stream whatever the host (its `syncThreshold` is at most 64 KiB), so a stream of the
 * pieces is answered with the same headers.
 */
const JOINED_UP_TO = 65_536;

/**
 * What to send for these pieces: a short answer joined; a long one (a page of long playlists is megabytes) as a
 * stream of its pieces with its `Content-Length`, never copied into one buffer, nor again by the compression's first
 * look at it (which joins whatever it was handed before its first 10 bytes). A page of 100 playlists of 1 000 songs
 * was 7 MB copied once, twice when compressed, and the garbage of each copy cost the event loop more than the
 * copying. The same bytes and headers either way.
 */
export function sendableBody(reply: FastifyReply, body: BodyParts): Buffer | Readable {
  if (body.length <= JOINED_UP_TO) return Buffer.concat(body.parts, body.length);
  reply.header('content-length', body.length);
  return Readable.from(body.parts, { objectMode: false });
}
