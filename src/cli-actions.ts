import { ConfigError, loadConfig, type Config } from './config.js';
import { openDatabase, type Db } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { printableName, userName } from './users/user-name.js';
import { askNewPassword } from './users/password-prompt.js';
import { checkNewPassword } from './users/password-rule.js';
import { UserError, userService } from './users/user.service.js';
import { CatalogFileError, importCatalogPath } from './catalog/catalog-files.js';
import { StartError } from './startup.js';
import { refreshAfterCatalogImport } from './smart/smart.refresh.js';
import { wakeEveryInstance } from './db/live-channel.js';
import { deletedPlaylists, HistoryCommandError, restorePlaylist } from './history/history.cli.js';
import { tokenService } from './tokens/tokens.service.js';

/** A usage mistake found after parsing; like commander's own, it exits 2. */
class UsageError extends Error {}

async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const password = (Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '').trimEnd();
    checkNewPassword(password);
    return password;
  }
  if (!process.stdin.isTTY) throw new UsageError('No terminal to ask for the password: use --password-stdin.');
  const { default: password } = await import('@inquirer/password');
  return askNewPassword(
    (message) => password({ message, mask: '*' }),
    (line) => {
      console.error(line);
    },
  );
}

async function withDb<T>(work: (db: Db, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = openDatabase(config.database);
  try {
    await migrateToLatest(db);
    return await work(db, config);
  } finally {
    await db.close();
  }
}

/** What the commands do, once the command line is parsed; loaded only then, so that `--help` opens nothing. */
export async function serve(): Promise<void> {
  const config = loadConfig();
  // Loaded only here: the HTTP stack is not needed by the other commands.
  const { serve } = await import('./server.js');
  await serve(config);
}

export async function migrate(): Promise<void> {
  const db = openDatabase(loadConfig().database);
  const applied = await migrateToLatest(db).finally(() => db.close());
  console.log(applied.length === 0 ? 'The schema is up to date.' : `Applied: ${applied.join(', ')}`);
}

export async function userAdd(name: string, passwordStdin: boolean): Promise<void> {
  // The name first: a name no user can have is refused before the password is asked for.
  userName(name);
  const password = await readPassword(passwordStdin);
  const added = await withDb((db) => userService(db).add(name, password));
  if (!added) throw new UserError(`A user named "${name}" already exists.`);
  console.log(`User "${name}" created.`);
}

export async function userPasswd(name: string, passwordStdin: boolean): Promise<void> {
  userName(name);
  const password = await readPassword(passwordStdin);
  if (!(await withDb((db) => userService(db).setPassword(name, password)))) {
    throw new UserError(`No user named "${name}".`);
  }
  console.log(`Password of "${name}" changed; running instances take it within 5 seconds.`);
}

export async function userRemove(name: string): Promise<void> {
  if (!(await withDb((db) => userService(db).remove(name)))) throw new UserError(`No user named "${name}".`);
  console.log(`User "${name}" and their playlists removed.`);
}

export async function userList(): Promise<void> {
  const users = await withDb((db) => userService(db).list());
  for (const u of users)
    console.log(
      `${printableName(u.name)}\t${u.playlist_count} playlists\tsince ${new Date(u.created_at).toISOString()}`,
    );
  if (users.length === 0) console.log('No users yet: mixtape user add NAME');
}

export async function userTokens(name: string): Promise<void> {
  const tokens = await withDb((db) => tokenService(db).listOf(name));
  if (tokens === undefined) throw new UserError(`No user named "${name}".`);
  for (const t of tokens) {
    const used = t.lastUsedAt === null ? 'never used' : `last used ${t.lastUsedAt}`;
    console.log(`${t.id}\t${printableName(t.name)}\t${t.scope}\tmade ${t.createdAt}\texpires ${t.expiresAt}\t${used}`);
  }
  if (tokens.length === 0) console.log(`"${name}" has no live app tokens.`);
}

export async function userRevokeToken(name: string, id: number): Promise<void> {
  const done = await withDb((db) => tokenService(db).revokeOf(name, id));
  if (done === 'no-user') throw new UserError(`No user named "${name}".`);
  if (done === 'no-token') throw new UserError(`"${name}" has no live app token ${id}.`);
  console.log(`App token ${id} of "${name}" revoked: every instance refuses it from its next request.`);
}

export async function playlistDeleted(owner: string): Promise<void> {
  const deleted = await withDb((db) => deletedPlaylists(db, owner));
  for (const p of deleted) {
    const restore = p.restorable === undefined ? 'history no longer kept' : `mixtape playlist restore ${p.id}`;
    console.log(`${p.id}\t${printableName(p.name)}\tdeleted ${new Date(p.deletedAt).toISOString()}\t${restore}`);
  }
  if (deleted.length === 0) console.log(`"${owner}" has no deleted playlists.`);
}

export async function playlistRestore(id: number, version: number | undefined): Promise<void> {
  const done = await withDb(async (db, config) => {
    const restored = await restorePlaylist(db, config, id, version);
    await wakeEveryInstance(db);
    return restored;
  });
  console.log(`Playlist ${id} of "${done.owner}" restored from version ${done.version}: ${done.songs} songs.`);
}

/**
 * Imports the catalog, then (in this process, once the import is done) refreshes the smart playlists whose songs it
 * may have changed; a line tells how many changed, when any did.
 */
export async function catalogImport(path: string): Promise<void> {
  const { result, refreshed } = await withDb(async (db, config) => {
    const imported = await importCatalogPath(db, path, process.stderr);
    const changed = imported.inserted + imported.updated > 0;
    const report = (error: unknown, id: number) => {
      console.error(`mixtape: refreshing the smart playlists that name playlist ${id} failed:`, error);
    };
    const refreshed = changed ? await refreshAfterCatalogImport(db, config.limits, report) : undefined;
    // Requests waiting for changes on every instance read again: songs and smart playlists may read differently.
    if (imported.updated > 0 || (refreshed?.changed.length ?? 0) > 0) await wakeEveryInstance(db);
    return { result: imported, refreshed };
  });
  console.log(`Catalog import: ${result.inserted} added, ${result.updated} updated, ${result.unchanged} unchanged.`);
  if (refreshed !== undefined && refreshed.changed.length > 0) {
    console.log(`Smart playlists: ${refreshed.changed.length} of ${refreshed.checked} changed.`);
  }
}

/**
 * The line a command that failed prints on stderr, and its exit code (2 for a usage mistake, 1 for the rest), for the
 * failures an operator can act on; undefined for any other, which is printed whole.
 */
export function failure(error: unknown): { readonly message: string; readonly exitCode: 1 | 2 } | undefined {
  if (error instanceof ConfigError) return { message: `mixtape: bad setting: ${error.message}`, exitCode: 1 };
  if (error instanceof UsageError) return { message: `mixtape: ${error.message}`, exitCode: 2 };
  if (
    error instanceof UserError ||
    error instanceof CatalogFileError ||
    error instanceof HistoryCommandError ||
    error instanceof StartError
  ) {
    return { message: `mixtape: ${error.message}`, exitCode: 1 };
  }
  return undefined;
}
