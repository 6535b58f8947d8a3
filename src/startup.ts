import type { FastifyBaseLogger } from 'fastify';
import { seedDemoCatalog } from './catalog/catalog.service.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { newPasswordProblem, PASSWORD_MIN_LENGTH } from './users/password-rule.js';
import { userService } from './users/user.service.js';

/** The service could not start; the message is one line for the operator. */
export class StartError extends Error {
  override name = 'StartError';
}

/** What `serve` does before it listens: migrate, seed the demo catalog, create the bootstrap user. */
export async function prepareDatabase(
  db: Db,
  config: Config,
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>,
): Promise<void> {
  const applied = await migrateToLatest(db);
  if (applied.length > 0) log.info({ migrations: applied }, 'database schema updated');
  if (config.seedCatalog) {
    const added = await seedDemoCatalog(db);
    if (added > 0) log.info({ songs: added }, 'demo catalog added');
  }
  const users = userService(db);
  if (config.bootstrapUser !== undefined) {
    const { name, password } = config.bootstrapUser;
    const created = await users.add(name, password);
    const same = created || (await users.hasPassword(name, password));
    if (created) log.info({ user: name }, 'bootstrap user created');
    else if (same === false) {
      log.warn(
        { user: name },
        `MIXTAPE_BOOTSTRAP_USER names the existing user "${name}" with another password: the stored password is kept (change it with: mixtape user passwd ${name})`,
      );
    }
    // Warned of, not refused: a start that worked before an upgrade must not fail after it, and a first try is quick.
    if (same === true && newPasswordProblem(password) !== undefined) {
      log.warn(
        { user: name },
        `the password MIXTAPE_BOOTSTRAP_USER gives "${name}" is shorter than ${PASSWORD_MIN_LENGTH} characters, the least a new password needs (mixtape user add refuses it): enough to try the service on this machine; anywhere else, choose a longer one with: mixtape user passwd ${name}`,
      );
    }
  }
  if (!(await users.anyUser())) {
    log.warn(
      'there are no users yet, so nobody can sign in: create one with `npx mixtape user add NAME` (any time, while the service runs), or start with MIXTAPE_BOOTSTRAP_USER=name:password',
    );
  }
}
