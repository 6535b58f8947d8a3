import type { FastifyBaseLogger } from 'fastify';
import { seedDemoCatalog } from './catalog/catalog.service.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { userService } from './users/user.service.js';

/** The service could not start; the message is one line for the operator. */
export class StartError extends Error {
  override name = 'StartError';
}

/** What `serve` does before it listens: migrate, seed the demo catalog, create the bootstrap user. */
export async function prepareDatabase(db: Db, config: Config, log: Pick<FastifyBaseLogger, 'info'>): Promise<void> {
  const applied = await migrateToLatest(db);
  if (applied.length > 0) log.info({ migrations: applied }, 'database schema updated');
  if (config.seedCatalog) {
    const added = await seedDemoCatalog(db);
    if (added > 0) log.info({ songs: added }, 'demo catalog added');
  }
  if (config.bootstrapUser !== undefined) {
    const { name, password } = config.bootstrapUser;
    if (await userService(db).add(name, password)) log.info({ user: name }, 'bootstrap user created');
  }
}
