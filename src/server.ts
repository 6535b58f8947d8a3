import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { openDatabase, type Db } from './db/database.js';
import { describeSetupFault, isDatabaseUnavailable } from './db/faults.js';
import { loggerOptions } from './logger.js';
import { prepareDatabase, StartError } from './startup.js';
import { onStopRequests } from './stop-requests.js';

/** SQLite: how often the WAL is copied back into the database file, off the event loop. */
const CHECKPOINT_INTERVAL_MS = 100;

/**
 * Migrates and seeds, retrying with a growing pause while the database cannot be reached (it may be starting
 * too), one log line per attempt, for at most `startTimeoutMs`.
 */
async function prepareWithRetry(db: Db, config: Config, log: FastifyBaseLogger): Promise<void> {
  const deadline = Date.now() + config.database.startTimeoutMs;
  for (let attempt = 1, pause = 500; ; attempt++, pause = Math.min(pause * 2, 10_000)) {
    try {
      await prepareDatabase(db, config, log);
      return;
    } catch (error) {
      const setup = describeSetupFault(error, config.database.url);
      if (setup !== undefined) throw new StartError(setup);
      if (!isDatabaseUnavailable(error)) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new StartError(
          `the database did not answer within ${config.database.startTimeoutMs / 1000} s (${attempt} attempts; last: ${reason})`,
        );
      }
      const wait = Math.min(pause, left);
      log.warn({ attempt, reason, retryInMs: wait }, `the database is not reachable (${reason}); trying again`);
      await sleep(wait);
    }
  }
}

/** The reason the service cannot listen, as one line for the operator, or undefined for any other error. */
function listenFault(error: unknown, { host, port }: Config): StartError | undefined {
  const where = `${host}:${port}`;
  const code: string = (error as NodeJS.ErrnoException).code ?? '';
  switch (code) {
    case 'EADDRINUSE':
      return new StartError(
        `port ${port} is in use on ${host}: stop the program listening there (ss -ltnp 'sport = :${port}' shows it) or set PORT to a free port`,
      );
    case 'EACCES':
      return new StartError(
        `not allowed to listen on ${where}: ports below 1024 need privileges; set PORT to 1024 or above`,
      );
    case 'EADDRNOTAVAIL':
      return new StartError(`${host} is not an address of this machine: set HOST to one of its addresses, or 0.0.0.0`);
    default:
      return undefined;
  }
}

/** Opens the database, prepares it, listens, and drains on SIGTERM or SIGINT before exiting 0. */
export async function serve(config: Config): Promise<FastifyInstance> {
  const log: { current?: FastifyBaseLogger } = {};
  const db = openDatabase(config.database, {
    onConnectionError: (error) => {
      log.current?.warn({ err: error }, 'a database connection failed; it will be replaced');
    },
    backgroundCheckpoints: {
      intervalMs: CHECKPOINT_INTERVAL_MS,
      onReport: (report) => {
        if (report.ok) log.current?.info('WAL checkpoints succeed again');
        else log.current?.warn({ reason: report.error }, 'a WAL checkpoint failed; the WAL grows until one succeeds');
      },
    },
  });
  const app = await buildApp({ config, db, logger: loggerOptions(config, process.stdout.isTTY) });
  log.current = app.log;
  try {
    await prepareWithRetry(db, config, app.log);
    await app.listen({ port: config.port, host: config.host }).catch((error: unknown) => {
      throw listenFault(error, config) ?? error;
    });
  } catch (error) {
    await app.close();
    await db.close();
    throw error;
  }
  app.log.info({ database: config.database.dialect }, 'mixtape is ready');

  // SIGTERM or SIGINT (or, when run by npm, the exit of the process that started it): leave the pool (readiness
  // 503, answers with `Connection: close`) for the drain delay while still serving, then stop accepting and let
  // in-flight requests finish within the shutdown timeout. A second signal during the delay ends the delay; one
  // during the close exits at once. A copy of the same signal (see stop-requests.ts) is not a second one.
  let endDelay: (() => void) | undefined;
  const close = (signal?: NodeJS.Signals) => {
    app.log.info(signal === undefined ? {} : { signal }, 'draining in-flight requests');
    app.markClosing();
    const force = setTimeout(() => {
      app.log.error('in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    force.unref();
    app
      .close()
      .then(() => db.close())
      .then(() => {
        app.log.info('stopped');
        process.exit(0);
      })
      .catch((error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  const stop = (signal: NodeJS.Signals) => {
    const phase = app.shutdownPhase();
    if (phase === 'closing') {
      app.log.warn({ signal }, 'a second signal while closing; exiting now');
      process.exit(1);
    }
    if (phase === 'draining') {
      endDelay?.();
      return;
    }
    if (config.drainDelayMs === 0) {
      close(signal);
      return;
    }
    app.markDraining();
    app.log.info(
      { signal, drainDelayMs: config.drainDelayMs },
      `leaving the pool: /readyz answers 503 for ${config.drainDelayMs / 1000} s while requests are still served`,
    );
    const timer = setTimeout(() => {
      close();
    }, config.drainDelayMs);
    endDelay = () => {
      clearTimeout(timer);
      close();
    };
  };
  onStopRequests(
    (request) => {
      if (request !== 'parent exited') {
        stop(request);
        return;
      }
      // Only ever a first request: a signal that came as well has begun the stop already.
      if (app.shutdownPhase() !== 'serving') return;
      app.log.info('the npm process that started mixtape has exited; stopping as on SIGTERM');
      stop('SIGTERM');
    },
    { watchParent: config.stopWithParent },
  );
  return app;
}
