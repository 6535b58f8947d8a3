import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildApp, loggerOptions } from './app.js';
import type { Config } from './config.js';
import { openDatabase } from './db/database.js';
import { prepareDatabase } from './startup.js';

/** Opens the database, prepares it, listens, and drains on SIGTERM or SIGINT before exiting 0. */
export async function serve(config: Config): Promise<FastifyInstance> {
  const log: { current?: FastifyBaseLogger } = {};
  const db = openDatabase(config.database, {
    onIdleError: (error) => {
      log.current?.warn({ err: error }, 'an idle database connection failed; it will be replaced');
    },
  });
  const app = await buildApp({ config, db, logger: loggerOptions(config, process.stdout.isTTY) });
  log.current = app.log;
  try {
    await prepareDatabase(db, config, app.log);
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    await db.close();
    throw error;
  }
  app.log.info({ database: config.database.dialect }, 'mixtape is ready');

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'draining in-flight requests');
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
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return app;
}
