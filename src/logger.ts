import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from './config.js';

/** Log bytes gathered before a write to stdout, and the longest a line waits for one. */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 100;

/**
 * Pino options: one JSON line per request, credentials never logged. Lines go to stdout in writes of about 4 KB,
 * and at least every 100 ms: a write per line cost a system call per request. What is buffered is written when the
 * process exits, and lost only if it is killed (`kill -9`), at most 100 ms of lines.
 */
export function loggerOptions(config: Config, pretty: boolean): FastifyServerOptions['logger'] {
  const base = {
    level: config.logLevel,
    redact: {
      paths: ['req.headers.security', 'req.headers.authorization', 'headers.security', 'headers.authorization'],
      censor: '[redacted]',
    },
  };
  if (pretty) return { ...base, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } };
  const stream = pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS });
  return { ...base, stream };
}
