import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { Gauge, Registry } from 'prom-client';
import type { Config } from './config.js';
import { coverRoutes } from './covers/cover.routes.js';
import { CoverRenderer } from './covers/renderer.js';
import { Authenticator } from './credentials/authenticator.js';
import type { Db } from './db/database.js';
import { authenticateHook } from './http/auth.js';
import { registerBodyParsers } from './http/body-parsers.js';
import { registerCompression } from './http/compression.js';
import { connectionHandling } from './http/connections.js';
import { registerCors } from './http/cors.js';
import { frameworkErrors, registerErrorHandling } from './http/error-handler.js';
import { ErrorBody } from './http/errors.js';
import { registerOpenApi } from './http/openapi.js';
import { registerRateLimit } from './http/rate-limit.js';
import { registerRequestHooks } from './http/request-hooks.js';
import { requestId } from './http/request-id.js';
import { buildSharedSerializer } from './http/serialization.js';
import { registerShutdown } from './http/shutdown.js';
import { trustProxy } from './http/trust-proxy.js';
import { createValidatorCompiler, formatValidationError } from './http/validation.js';
import { collectMetrics } from './ops/metrics.js';
import { opsRoutes } from './ops/ops.routes.js';
import { playlistFiles } from './playlists/playlist-files.service.js';
import { playlistImporter } from './playlists/playlist-import.service.js';
import { WorkerPool } from './workers/worker-pool.js';
import { rulesSchema } from './smart/rules.js';
import { rulesRunner } from './smart/rules-runner.js';
import { registerLoadShedding } from './http/load-shedding.js';
import { playlistImportRoutes } from './playlists/playlist-import.routes.js';
import { playlistRoutes } from './playlists/playlist.routes.js';
import { playlistEditRoutes } from './playlists/playlist-edit.routes.js';
import {
  EditResult,
  editOpSchema,
  entryEditRoutes,
  PlaylistEntries,
  RefusedEdits,
} from './playlists/edits/edits.routes.js';
import { entryEdits } from './playlists/edits/edits.service.js';
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
import { searchGate } from './search/bounded-search.js';
import { historyRoutes } from './history/history.routes.js';
import { historyService } from './history/history.service.js';
import {
  CatalogChangeEntry,
  ChangeEntry,
  EntriesDiff,
  EntryDiffOp,
  LibraryChangeEntry,
  Revision,
} from './history/history.schemas.js';
import { changesRoutes } from './history/changes.routes.js';
import { changeFeed } from './history/changes.service.js';
import { liveChanges } from './live/live-changes.js';
import { streamTickets } from './live/tickets.js';
import { liveNotifier, Wakeups } from './live/wakeups.js';
import { startHistoryPruning } from './history/pruning.js';
import { linkRoutes } from './sharing/links.routes.js';
import { linkService, sharedPlaylists } from './sharing/links.service.js';
import { sharePageRoutes } from './sharing/share-page.routes.js';
import { membersRoutes } from './sharing/members.routes.js';
import { Member } from './sharing/members.schemas.js';
import { membersService } from './sharing/members.service.js';
import { libraryRoutes } from './library/library.routes.js';
import { LibraryItem } from './library/library.schemas.js';
import { LibraryAnswers } from './library/library.answers.js';
import { libraryService } from './library/library.service.js';
import { tokenRoutes } from './tokens/tokens.routes.js';
import { tokenService } from './tokens/tokens.service.js';

export interface AppOptions {
  readonly config: Config;
  readonly db: Db;
  /** The logger: pino options (see logger.ts), or false for none (tests). */
  readonly logger?: FastifyServerOptions['logger'];
}

/**
 * Builds the whole service without listening. Hooks run in the order they are added, and what watches routes as
 * they are added (the error handling's 405 table, the ETag's coding, the rate limit, the OpenAPI document) is
 * registered before any route.
 */
export async function buildApp({ config, db, logger = false }: AppOptions): Promise<FastifyInstance> {
  const { limits } = config;
  const connections = connectionHandling(config.server);
  const app = Fastify({
    ...connections.options,
    logger,
    genReqId: requestId,
    // Each request's one log line is written by the request hooks.
    logController: new LogController({ disableRequestLogging: true }),
    schemaController: { compilersFactory: { buildSerializer: buildSharedSerializer } },
    schemaErrorFormatter: formatValidationError,
    bodyLimit: limits.bodyBytes,
    trustProxy: trustProxy(config.trustProxy),
    // Requests during shutdown get the error body (http/shutdown.ts).
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors: frameworkErrors(limits.bodyBytes),
  });
  connections.install(app.server, app.log);

  const sharedSchemas = [
    ErrorBody,
    Song,
    PlaylistWithSongs,
    rulesSchema(limits),
    newPlaylistSchema(limits),
    CatalogSong,
    UnmatchedTrack,
    ImportedPlaylist,
    Revision,
    ChangeEntry,
    CatalogChangeEntry,
    LibraryChangeEntry,
    Member,
    PlaylistEntries,
    editOpSchema(limits),
    EditResult,
    RefusedEdits,
    EntryDiffOp,
    EntriesDiff,
    LibraryItem,
  ];
  for (const schema of sharedSchemas) app.addSchema(schema);
  app.setValidatorCompiler(createValidatorCompiler(sharedSchemas));
  registerBodyParsers(app);

  registerShutdown(app);
  registerRequestHooks(app);
  const registry = new Registry();
  collectMetrics(app, registry);
  registerErrorHandling(app, limits.bodyBytes);
  await registerLoadShedding(app, config.loadShedding, registry);
  if (config.corsOrigins.length > 0) await registerCors(app, config.corsOrigins);
  // The app's rate limit and the shared playlists' throttle count through one machinery (and one Redis).
  const throttle =
    config.rateLimitPerMinute > 0 || config.sharePerMinute > 0
      ? await registerRateLimit(app, {
          perMinute: config.rateLimitPerMinute,
          ipv6PrefixBits: config.server.ipv6PrefixBits,
          redisUrl: config.redisUrl,
        })
      : undefined;
  if (throttle === undefined && config.redisUrl !== undefined) {
    app.log.warn(
      'REDIS_URL is set but MIXTAPE_RATE_LIMIT and MIXTAPE_SHARE_PER_MINUTE are 0: there is no rate limit, and Redis is not used',
    );
  }
  await registerCompression(app);
  await registerOpenApi(app);

  // App tokens (1.11.0): a Bearer credential is checked by its digest, through the authenticator's throttle.
  const tokens = tokenService(db);
  const authenticate = authenticateHook(app, new Authenticator(db, config.auth, Date.now, tokens));
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  // Playlist and catalog searches share one gate: one search at a time per user, a bounded number in all.
  const searches = searchGate(config.search);
  // Smart playlists' rules run off the event loop, each stopped past its time (MIXTAPE_RULES_TIMEOUT_MS).
  const rules = rulesRunner(db, {
    timeoutMs: config.rules.timeoutMs,
    database: config.database,
    threads: config.workers.threads,
  });
  app.addHook('onClose', () => rules.close());
  const playlists = playlistService(
    db,
    limits,
    config.playlistCacheBytes,
    config.search,
    searches,
    rules,
    (error, message) => {
      app.log.error({ err: error }, message);
    },
    registry,
  );
  // Refreshes under way finish before the database closes; those still waiting are found by the next read.
  app.addHook('onClose', () => playlists.smart.stop());
  // Requests that wait for changes, woken after each commit on any instance (live/).
  const wakeups = new Wakeups(config.live.waitsPerUser);
  new Gauge({
    name: 'mixtape_waiting_requests',
    help: 'Requests of this instance waiting for a change',
    registers: [registry],
    collect() {
      this.set(wakeups.count);
    },
  });
  const notifier = liveNotifier(db, config.database, wakeups, (error, message) => {
    app.log.error({ err: error }, message);
  });
  playlists.store.events.on((event) => {
    notifier.publish([event.id], event.others).catch((error: unknown) => {
      app.log.error({ err: error, playlist: event.id }, 'Telling the waiting requests of a change failed.');
    });
  });
  // At shutdown every waiting request is answered at once, before the server waits for requests in flight.
  app.addHook('preClose', (done) => {
    wakeups.close();
    done();
  });
  app.addHook('onClose', () => notifier.close());
  const live = liveChanges(changeFeed(db, config.historyDays), wakeups, notifier, {
    maxSeconds: config.live.streamMaxSeconds,
  });
  const files = playlistFiles(playlists, config.exports);
  playlistRoutes(routes, { playlists, limits, authenticate, files, live });
  playlistEditRoutes(routes, { playlists, limits, authenticate });
  entryEditRoutes(routes, { edits: entryEdits(db, playlists, limits), limits, authenticate, live });
  // Work whose cost grows with a request's body or a playlist's length runs on these threads.
  const workers = new WorkerPool(config.workers);
  app.addHook('onClose', () => workers.close());
  const importer = playlistImporter(db, limits, playlists, config.exports.locationTemplate, workers);
  playlistImportRoutes(routes, { importer, limits, authenticate });
  const history = historyService(
    db,
    playlists,
    { limits, exports: config.exports, historyDays: config.historyDays },
    workers,
  );
  historyRoutes(routes, { history, limits, authenticate });
  changesRoutes(routes, { feed: live, tickets: streamTickets(db), authenticate });
  membersRoutes(routes, { members: membersService(db, playlists, limits), limits, authenticate });
  // Each user's folders and order (1.10.0): a write wakes the user's waiting requests on every instance.
  const library = libraryService(
    db,
    playlists.access,
    limits,
    (userId) => {
      notifier.publish([], [userId]).catch((error: unknown) => {
        app.log.error({ err: error, user: userId }, 'Telling the waiting requests of a change failed.');
      });
    },
    // Trees' answers at their versions (MIXTAPE_LIBRARY_CACHE_MB).
    new LibraryAnswers(config.libraryCacheBytes),
  );
  libraryRoutes(routes, { library, limits, authenticate });
  tokenRoutes(routes, { tokens, limits, authenticate });
  const pruning = startHistoryPruning(db, config.historyDays, app.log);
  app.addHook('onClose', () => {
    pruning.stop();
  });
  const renderer = new CoverRenderer(config.images, registry);
  coverRoutes(routes, { playlists, renderer, authenticate });
  const links = linkService(db, playlists, limits.linksMax);
  const publicUrl = config.exports.publicUrl;
  linkRoutes(routes, { links, limits, authenticate, publicUrl });
  sharePageRoutes(routes, {
    shared: sharedPlaylists(links, playlists, files),
    renderer,
    throttle: config.sharePerMinute > 0 ? throttle?.('share', config.sharePerMinute) : undefined,
    publicUrl,
  });
  songRoutes(routes, { songs: songService(db, limits, config.search, searches), limits, authenticate });
  opsRoutes(app, { db, registry, shutdownPhase: () => app.shutdownPhase(), metricsToken: config.metricsToken });
  return app;
}
