import compress from '@fastify/compress';
import rateLimit from '@fastify/rate-limit';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyServerOptions,
  type onSendHookHandler,
} from 'fastify';
import type { Config } from './config.js';
import { coverRoutes } from './covers/cover.routes.js';
import { CoverRenderer } from './covers/renderer.js';
import { Authenticator, type Caller } from './credentials/authenticator.js';
import type { Db } from './db/database.js';
import { authenticateHook } from './http/auth.js';
import { registerBodyParsers } from './http/body-parsers.js';
import { connectionHandling } from './http/connections.js';
import { registerCors } from './http/cors.js';
import { registerErrorHandling, sendError, toApiError } from './http/error-handler.js';
import { ApiError, ErrorBody } from './http/errors.js';
import { registerOpenApi } from './http/openapi.js';
import { REQUEST_ID_HEADER, requestId } from './http/request-id.js';
import { buildSharedSerializer } from './http/serialization.js';
import { createValidatorCompiler, formatValidationError } from './http/validation.js';
import { opsRoutes } from './ops/ops.routes.js';
import pino from 'pino';
import { Registry } from 'prom-client';
import { playlistFiles } from './playlists/playlist.files.js';
import { playlistImporter } from './playlists/playlist.import.js';
import { playlistImportRoutes } from './playlists/playlist-import.routes.js';
import { playlistRoutes } from './playlists/playlist.routes.js';
import {
  ImportedPlaylist,
  PlaylistWithSongs,
  Song,
  UnmatchedTrack,
  newPlaylistSchema,
} from './playlists/playlist.schemas.js';
import { playlistService } from './playlists/playlist.service.js';
import { CatalogSong, songRoutes } from './songs/song.routes.js';
import { songService } from './songs/song.service.js';

export interface AppOptions {
  readonly config: Config;
  readonly db: Db;
  /** The logger: pino options, or false for none (tests). */
  readonly logger?: FastifyServerOptions['logger'];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Makes new requests answer 503 while in-flight ones finish. */
    markClosing(): void;
  }
}

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

/** Fastify's `trustProxy` from the setting: a hop count trusts that many proxies nearest the service. */
function trustProxy(setting: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return setting === false ? false : [...setting];
}

/** Builds the whole service without listening: plugins, then routes, then the error handlers. */
export async function buildApp({ config, db, logger = false }: AppOptions): Promise<FastifyInstance> {
  const { limits } = config;
  const connections = connectionHandling(config.server);
  const app = Fastify({
    ...connections.options,
    logger,
    genReqId: requestId,
    logController: new LogController({ disableRequestLogging: true }),
    schemaController: { compilersFactory: { buildSerializer: buildSharedSerializer } },
    bodyLimit: limits.bodyBytes,
    trustProxy: trustProxy(config.trustProxy),
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    schemaErrorFormatter: formatValidationError,
    // Errors raised before routing (a malformed %-escape, an over-long path parameter) get the same body.
    frameworkErrors: (error, request, reply) => {
      void sendError(request, reply, toApiError(error, limits.bodyBytes));
    },
  });
  connections.install(app.server, app.log);

  const sharedSchemas = [
    ErrorBody,
    Song,
    PlaylistWithSongs,
    newPlaylistSchema(limits),
    CatalogSong,
    UnmatchedTrack,
    ImportedPlaylist,
  ];
  for (const schema of sharedSchemas) app.addSchema(schema);
  app.setValidatorCompiler(createValidatorCompiler(sharedSchemas));
  registerBodyParsers(app);

  let closing = false;
  // Hooks every request runs, written with callbacks rather than promises: cheaper on the hot path.
  app.addHook('onRequest', (request, reply, done) => {
    reply
      .header(REQUEST_ID_HEADER, request.id)
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff');
    if (closing) {
      done(ApiError.unavailable('The service is shutting down; try again shortly.', 1));
      return;
    }
    const { httpVersion } = request.raw;
    if (httpVersion === '1.1' && request.headers.host === undefined) {
      done(ApiError.badRequest('An HTTP/1.1 request must have a Host header.'));
      return;
    }
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        method: request.method,
        url: request.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        ...(request.failure === undefined ? {} : { entry: request.failure.entry, reason: request.failure.reason }),
        ...((request.caller as Caller | null) === null ? {} : { user: request.caller.name }),
      },
      'request',
    );
    done();
  });

  registerErrorHandling(app, limits.bodyBytes);

  if (config.corsOrigins.length > 0) await registerCors(app, config.corsOrigins);
  if (config.rateLimitPerMinute > 0) {
    await app.register(rateLimit, {
      max: config.rateLimitPerMinute,
      timeWindow: 60_000,
      errorResponseBuilder: (_request, context) =>
        ApiError.tooManyRequests(context.ttl / 1000, `Too many requests; the limit is ${context.max} a minute.`),
    });
  }

  await app.register(compress, {
    threshold: COMPRESS_ABOVE_BYTES,
    // A compressed request body stays a 415: the API takes plain JSON.
    globalDecompression: false,
  });
  app.addHook('onRoute', (route) => {
    route.onSend = [...toArray(route.onSend), weakenEncodedEtag];
  });

  await registerOpenApi(app);
  const authenticate = authenticateHook(app, new Authenticator(db, config.auth));
  const registry = new Registry();
  const playlists = playlistService(db, limits, config.playlistCacheBytes);
  const files = playlistFiles(playlists, config.exports);
  playlistRoutes(app, { playlists, limits, authenticate, files });
  const importer = playlistImporter(db, limits, playlists, config.exports.locationTemplate);
  playlistImportRoutes(app, { importer, limits, authenticate });
  coverRoutes(app, { playlists, renderer: new CoverRenderer(config.images, registry), authenticate });
  songRoutes(app, { songs: songService(db), limits, authenticate });
  opsRoutes(app, { db, registry, isClosing: () => closing });

  app.decorate('markClosing', () => {
    closing = true;
  });
  return app;
}
