#!/usr/bin/env node
// First: it exits on an unsupported Node.js before the other modules load.
import './node-version.js';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { openDatabase, type Db } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { printableName } from './users/user-name.js';
import { askNewPassword } from './users/password-prompt.js';
import { UserError, userService } from './users/user.service.js';
import { CatalogFileError, importCatalogPath } from './catalog/catalog-files.js';
import { StartError } from './startup.js';
import { deletedPlaylists, HistoryCommandError, restorePlaylist } from './history/history.cli.js';

const USER_USAGE = `  user add NAME [--password-stdin]   create a user; prompts for the password, or reads a line from stdin
  user passwd NAME [--password-stdin]
  user remove NAME                   remove a user and their playlists
  user list`;

const USAGE = `Usage: mixtape <command>

  serve                              run the service (npm start)
  migrate                            bring the database schema up to date
${USER_USAGE}
  playlist deleted USER              list a user's deleted playlists that can be restored
  playlist restore ID [--version N]  restore a playlist for its owner: a deleted one as it was deleted, or version N
  catalog import PATH                import songs from a CSV, JSON or JSON Lines file, or a folder of audio files

Settings come from the environment (PORT, HOST, DATABASE_URL, LOG_LEVEL, ...); see README.md.`;

class UsageError extends Error {}

async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return (Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '').trimEnd();
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

async function withDb<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const db = openDatabase(config.database);
  try {
    await migrateToLatest(db);
    return await work(db);
  } finally {
    await db.close();
  }
}

async function userCommand(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'password-stdin': { type: 'boolean', default: false } },
  });
  const [action, name] = positionals;
  if (action === 'list') {
    const users = await withDb(config, (db) => userService(db).list());
    for (const u of users)
      console.log(
        `${printableName(u.name)}\t${u.playlist_count} playlists\tsince ${new Date(u.created_at).toISOString()}`,
      );
    if (users.length === 0) console.log('No users yet: mixtape user add NAME');
    return;
  }
  if (action === undefined) throw new UsageError(`mixtape user needs a command:\n\n${USER_USAGE}`);
  if (name === undefined) throw new UsageError(`mixtape user ${action} needs a user NAME.`);
  switch (action) {
    case 'add': {
      const password = await readPassword(values['password-stdin']);
      const added = await withDb(config, (db) => userService(db).add(name, password));
      if (!added) throw new UserError(`A user named "${name}" already exists.`);
      console.log(`User "${name}" created.`);
      return;
    }
    case 'passwd': {
      const password = await readPassword(values['password-stdin']);
      if (!(await withDb(config, (db) => userService(db).setPassword(name, password)))) {
        throw new UserError(`No user named "${name}".`);
      }
      console.log(`Password of "${name}" changed; running instances take it within 5 seconds.`);
      return;
    }
    case 'remove':
      if (!(await withDb(config, (db) => userService(db).remove(name))))
        throw new UserError(`No user named "${name}".`);
      console.log(`User "${name}" and their playlists removed.`);
      return;
    default:
      throw new UsageError(`Unknown user command "${action}".`);
  }
}

async function playlistCommand(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { version: { type: 'string' } } });
  const [action, target] = positionals;
  if (action === 'deleted' && target !== undefined) {
    const deleted = await withDb(config, (db) => deletedPlaylists(db, target));
    for (const p of deleted) {
      const restore = p.restorable === undefined ? 'history no longer kept' : `mixtape playlist restore ${p.id}`;
      console.log(`${p.id}\t${printableName(p.name)}\tdeleted ${new Date(p.deletedAt).toISOString()}\t${restore}`);
    }
    if (deleted.length === 0) console.log(`"${target}" has no deleted playlists.`);
    return;
  }
  const id = Number(target);
  const version = values.version === undefined ? undefined : Number(values.version);
  if (action !== 'restore' || !Number.isSafeInteger(id) || id < 1 || (version !== undefined && !(version >= 1))) {
    throw new UsageError('Usage: mixtape playlist deleted USER | mixtape playlist restore ID [--version N]');
  }
  const done = await withDb(config, (db) => restorePlaylist(db, config, id, version));
  console.log(`Playlist ${id} of "${done.owner}" restored from version ${done.version}: ${done.songs} songs.`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return;
  }
  // Without a command nothing was done: say what there is, and fail, so that a script notices.
  if (command === undefined) throw new UsageError(`a command is needed.\n\n${USAGE}`);
  const config = loadConfig();
  switch (command) {
    case 'serve': {
      // Loaded only here: the HTTP stack is not needed by the other commands.
      const { serve } = await import('./server.js');
      await serve(config);
      return;
    }
    case 'migrate': {
      const db = openDatabase(config.database);
      const applied = await migrateToLatest(db).finally(() => db.close());
      console.log(applied.length === 0 ? 'The schema is up to date.' : `Applied: ${applied.join(', ')}`);
      return;
    }
    case 'user':
      await userCommand(config, rest);
      return;
    case 'playlist':
      await playlistCommand(config, rest);
      return;
    case 'catalog': {
      const [action, path] = rest;
      if (action !== 'import' || path === undefined) throw new UsageError('Usage: mixtape catalog import PATH');
      const result = await withDb(config, (db) => importCatalogPath(db, path, process.stderr));
      console.log(
        `Catalog import: ${result.inserted} added, ${result.updated} updated, ${result.unchanged} unchanged.`,
      );
      return;
    }
    default:
      throw new UsageError(`Unknown command "${command}".\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(`mixtape: bad setting: ${error.message}`);
  else if (
    error instanceof UserError ||
    error instanceof UsageError ||
    error instanceof CatalogFileError ||
    error instanceof HistoryCommandError ||
    error instanceof StartError
  ) {
    console.error(`mixtape: ${error.message}`);
  } else console.error('mixtape:', error);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});
