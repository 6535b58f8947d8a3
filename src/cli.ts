#!/usr/bin/env node
// First: it exits on an unsupported Node.js before the other modules load.
import './node-version.js';
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, type Help } from 'commander';
import { PASSWORD_MIN_LENGTH } from './users/password-rule.js';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The commands' work, loaded once a command runs: `--help`, the version and a mistake load, open and change nothing. */
const actions = () => import('./cli-actions.js');

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1)
    throw new InvalidArgumentError('It must be a whole number from 1 up.');
  return number;
}

const PASSWORD_STDIN = 'read the password from the first line of stdin instead of asking for it twice';

function userCommands(user: Command): void {
  user
    .command('add')
    .usage('NAME [--password-stdin]')
    .description(
      `create a user; asks for the password twice, or reads one line from stdin (at least ${PASSWORD_MIN_LENGTH} characters)`,
    )
    .argument('<NAME>', "the user's name: 1 to 64 characters, no ':' and no spaces")
    .option('--password-stdin', PASSWORD_STDIN)
    .action(async (name: string, options: { passwordStdin?: true }) => {
      await (await actions()).userAdd(name, options.passwordStdin === true);
    });
  user
    .command('passwd')
    .usage('NAME [--password-stdin]')
    .description(
      `change a user's password (at least ${PASSWORD_MIN_LENGTH} characters); running instances take it within 5 s`,
    )
    .argument('<NAME>', "the user's name")
    .option('--password-stdin', PASSWORD_STDIN)
    .action(async (name: string, options: { passwordStdin?: true }) => {
      await (await actions()).userPasswd(name, options.passwordStdin === true);
    });
  user
    .command('remove')
    .usage('NAME')
    .description('remove a user and their playlists')
    .argument('<NAME>', "the user's name")
    .action(async (name: string) => {
      await (await actions()).userRemove(name);
    });
  user
    .command('list')
    .description('list the users, with how many playlists each has')
    .action(async () => {
      await (await actions()).userList();
    });
  user
    .command('tokens')
    .usage('NAME')
    .description("list a user's live app tokens (never their secret), with when each was last used")
    .argument('<NAME>', "the user's name")
    .action(async (name: string) => {
      await (await actions()).userTokens(name);
    });
  user
    .command('revoke-token')
    .usage('NAME ID')
    .description("revoke one of a user's app tokens; every instance refuses it from its next request")
    .argument('<NAME>', "the user's name")
    .argument('<ID>', "the token's id, as `user tokens` lists it", positiveInteger)
    .action(async (name: string, id: number) => {
      await (await actions()).userRevokeToken(name, id);
    });
}

function playlistCommands(playlist: Command): void {
  playlist
    .command('deleted')
    .usage('USER')
    .description("list a user's deleted playlists that can be restored")
    .argument('<USER>', "the owner's name")
    .action(async (owner: string) => {
      await (await actions()).playlistDeleted(owner);
    });
  playlist
    .command('restore')
    .usage('ID [--version N]')
    .description('restore a playlist for its owner: a deleted one as it was deleted, or version N')
    .argument('<ID>', "the playlist's id", positiveInteger)
    .option('--version <N>', 'the version to bring back (default: the last before the delete)', positiveInteger)
    .action(async (id: number, options: { version?: number }) => {
      await (await actions()).playlistRestore(id, options.version);
    });
}

/** The names from the program down to `command`: `user add`, or `mixtape user add` with the program's. */
function commandPath(command: Command, withProgram = false): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) {
    if (c.parent !== null || withProgram) names.unshift(c.name());
  }
  return names.join(' ');
}

/** The commands that do something, below this one: a group's help lists `user add NAME …`, not `add`. */
const leafCommands = (command: Command): Command[] =>
  command.commands.flatMap((sub) => (sub.commands.length > 0 ? leafCommands(sub) : [sub]));

/** What follows a command's name; `[options]` is commander's word for a command whose only option is --help. */
const usage = (command: Command): string => (command.usage() === '[options]' ? '' : ` ${command.usage()}`);

const HELP: Partial<Help> = {
  visibleCommands: leafCommands,
  subcommandTerm: (command) => `${commandPath(command)}${usage(command)}`,
  commandUsage: (command) => `${commandPath(command, true)}${usage(command)}`,
};

/** Every command answers `--help`; a mistake is one line, then the command's help, and exits 2 (see `main`). */
function buildProgram(): Command {
  const program = new Command('mixtape')
    .usage('<command>')
    .description('Mixtape, a music playlist service: run it, and manage its users, playlists and catalog.')
    .version(version, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .helpCommand('help [COMMAND]', "print a command's help")
    // `--version` after a command is that command's (playlist restore --version N), not the program's.
    .enablePositionalOptions()
    .exitOverride()
    .addHelpText(
      'after',
      '\nSettings come from the environment (PORT, HOST, DATABASE_URL, LOG_LEVEL, ...); see docs/operations.md.',
    );
  program
    .command('serve')
    .description('migrate, seed and run the service (npm start); SIGTERM or SIGINT drains and stops it')
    .action(async () => {
      await (await actions()).serve();
    });
  program
    .command('migrate')
    .description('bring the database schema up to date')
    .action(async () => {
      await (await actions()).migrate();
    });
  userCommands(program.command('user').usage('<command>').description('manage the users who can sign in'));
  playlistCommands(program.command('playlist').usage('<command>').description("see and restore users' playlists"));
  program
    .command('catalog')
    .usage('<command>')
    .description('the song catalog')
    .command('import')
    .usage('PATH')
    .description('import songs from a CSV, JSON or JSON Lines file, or a folder of audio files')
    .argument('<PATH>', 'the file or folder')
    .action(async (path: string) => {
      await (await actions()).catalogImport(path);
    });

  const configure = (command: Command): void => {
    command.configureHelp(HELP).configureOutput({
      // Commander's message (`error: unknown option '--x'`, a suggestion on the next line) as one line.
      outputError: (message, write) => {
        const line = message
          .trim()
          .replace(/^error: /, '')
          .replace(/\s*\n\s*/g, ' ');
        write(
          `mixtape${command.parent === null ? '' : ` ${commandPath(command)}`}: ${line}\n\n${command.helpInformation()}`,
        );
      },
    });
    // Shown only when a group is called without one of its commands (commander then prints the help on stderr).
    if (command.commands.length > 0) {
      command.addHelpText('before', ({ error }) =>
        !error
          ? ''
          : command.parent === null
            ? 'mixtape: a command is needed.\n'
            : `mixtape ${commandPath(command)} needs a command.\n`,
      );
    }
    for (const sub of command.commands) configure(sub);
  };
  configure(program);
  return program;
}

async function main(argv: readonly string[]): Promise<void> {
  await buildProgram().parseAsync(argv, { from: 'user' });
}

main(process.argv.slice(2)).catch(async (error: unknown) => {
  // Help and the version end parsing with exit code 0; every mistake in the command line ends it with 2.
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
    return;
  }
  const known = (await actions()).failure(error);
  if (known === undefined) console.error('mixtape:', error);
  else console.error(known.message);
  process.exitCode = known?.exitCode ?? 1;
});
