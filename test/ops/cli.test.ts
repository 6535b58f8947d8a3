import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { songSearchColumns } from '../../src/catalog/catalog.service.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { userService } from '../../src/users/user.service.js';
import { basic } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { version: VERSION } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const dir = mkdtempSync(join(tmpdir(), 'mixtape-cli-'));
const DATABASE_URL = `sqlite:${join(dir, 'mixtape.db')}`;

// The child sees the test's environment minus every Mixtape setting, plus its own database and silence.
const baseEnv: Record<string, string> = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      entry[1] !== undefined && !/^(PORT|HOST|DATABASE_URL|DATABASE_POOL_SIZE|LOG_LEVEL|MIXTAPE_.*)$/.test(entry[0]),
  ),
);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `mixtape ARGS` as its own process, with INPUT on a piped (not terminal) stdin. */
function mixtape(args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...baseEnv, DATABASE_URL, LOG_LEVEL: 'silent', ...options.env },
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    // A bound on a stuck process, not a measure: on a loaded two-core machine a run can take tens of seconds.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A command that exits before it reads its input (a usage mistake) closes the pipe: that EPIPE is no failure of
    // the run, whose exit code and output tell what happened.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/** The HTTP status that `GET /v3/playlist` answers on the CLI's database to each of these passwords. */
async function signInStatuses(name: string, passwords: string[]): Promise<number[]> {
  const config = loadConfig({ DATABASE_URL, LOG_LEVEL: 'silent', MIXTAPE_SEED_CATALOG: 'false' });
  const db = openDatabase(config.database);
  const app = await buildApp({ config, db });
  try {
    const statuses: number[] = [];
    for (const password of passwords) {
      const headers = { security: basic(name, password) };
      statuses.push((await app.inject({ method: 'GET', url: '/v3/playlist', headers })).statusCode);
    }
    return statuses;
  } finally {
    await app.close();
    await db.close();
  }
}

/** Runs each of `argsList` as its own process, two at a time (one a core), and gives their runs in the same order. */
async function mixtapeEach(argsList: string[][], env: Record<string, string>): Promise<Run[]> {
  const runs: Run[] = [];
  for (let i = 0; i < argsList.length; i += 2) {
    runs.push(...(await Promise.all(argsList.slice(i, i + 2).map((args) => mixtape(args, { env })))));
  }
  return runs;
}

/** Every command and group of commands, as typed after `mixtape`. */
const COMMANDS: string[][] = [
  [],
  ['serve'],
  ['migrate'],
  ['user'],
  ['user', 'add'],
  ['user', 'passwd'],
  ['user', 'remove'],
  ['user', 'list'],
  ['user', 'tokens'],
  ['user', 'revoke-token'],
  ['playlist'],
  ['playlist', 'deleted'],
  ['playlist', 'restore'],
  ['catalog'],
  ['catalog', 'import'],
];

/**
 * An empty folder for the database, and settings that no command could run with (a port that is no number): a
 * command line that only asks for help, or has a mistake, must read no setting and leave the folder empty.
 */
function untouchable(name: string): { folder: string; env: Record<string, string> } {
  const folder = join(dir, name);
  mkdirSync(folder);
  return { folder, env: { DATABASE_URL: `sqlite:${join(folder, 'mixtape.db')}`, PORT: 'not a port' } };
}

async function userNames(): Promise<string[]> {
  const db = openDatabase(loadConfig({ DATABASE_URL }).database);
  try {
    return (await userService(db).list()).map((user) => user.name);
  } finally {
    await db.close();
  }
}

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

// The tests run side by side (each spawn is mostly start-up time); the shared database is migrated first
// so that no two processes race to create its schema.
describe.concurrent('the mixtape CLI (SQLite)', () => {
  beforeAll(async () => {
    const db = openDatabase(loadConfig({ DATABASE_URL }).database);
    try {
      await migrateToLatest(db);
    } finally {
      await db.close();
    }
  });
  it('migrate creates the schema of a new database', async ({ expect }) => {
    const url = `sqlite:${join(dir, 'fresh.db')}`;
    const migrated = await mixtape(['migrate'], { env: { DATABASE_URL: url } });
    expect(migrated).toMatchObject({ code: 0, stderr: '' });
    expect(migrated.stdout).toBe(
      'Applied: 2026-11-20-initial, 2026-11-23-service-probe, 2026-11-24-serving, 2026-11-25-song-titles, ' +
        '2026-11-27-playlist-versions, 2026-11-28-owner-search, 2026-11-29-sign-in-budgets, 2026-11-30-playlist-history, ' +
        '2026-12-01-revision-copies, 2026-12-02-sharing, 2026-12-03-shared-feed, 2026-12-04-library-version, ' +
        '2026-12-05-membership-changes, 2026-12-06-entries, 2026-12-07-smart-playlists, 2026-12-08-smart-sources, ' +
        '2026-12-09-smart-rights, 2026-12-10-edit-keys-and-song-count, 2026-12-11-stream-tickets, 2026-12-12-catalog-changes, ' +
        '2026-12-13-edit-key-writes, 2026-12-14-entry-origins, 2026-12-15-library, 2026-12-16-app-tokens\n',
    );
    const again = await mixtape(['migrate'], { env: { DATABASE_URL: url } });
    expect(again).toMatchObject({ code: 0, stdout: 'The schema is up to date.\n' });
    const db = openDatabase(loadConfig({ DATABASE_URL: url }).database);
    try {
      const tables = await db.kysely.introspection.getTables();
      expect(tables.map((table) => table.name)).toEqual(
        expect.arrayContaining(['users', 'songs', 'playlists', 'playlist_songs']),
      );
    } finally {
      await db.close();
    }
  }, 60_000);

  // Seven CLI processes, five one after another, each compiling the CLI with tsx and hashing a password: on a busy
  // two-core machine that can take longer than the default 30 s.
  it('user add, list, passwd and remove manage a user who can sign in', async ({ expect }) => {
    const added = await mixtape(['user', 'add', 'bob', '--password-stdin'], { input: 'first secret\n' });
    expect(added).toMatchObject({ code: 0, stdout: 'User "bob" created.\n' });
    expect(await userNames()).toContain('bob');
    expect(await signInStatuses('bob', ['first secret', 'second secret'])).toEqual([200, 401]);

    const [again, listed] = await Promise.all([
      mixtape(['user', 'add', 'bob', '--password-stdin'], { input: 'other long secret\n' }),
      mixtape(['user', 'list']),
    ]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/"bob" already exists/);
    expect(listed).toMatchObject({ code: 0 });
    expect(listed.stdout).toMatch(/^bob\t0 playlists\tsince \d{4}-/m);

    const changed = await mixtape(['user', 'passwd', 'bob', '--password-stdin'], { input: 'second secret\n' });
    expect(changed.code).toBe(0);
    expect(changed.stdout).toMatch(/Password of "bob" changed/);
    expect(await signInStatuses('bob', ['second secret', 'first secret'])).toEqual([200, 401]);

    const removed = await mixtape(['user', 'remove', 'bob']);
    expect(removed).toMatchObject({ code: 0, stdout: 'User "bob" and their playlists removed.\n' });
    expect(await userNames()).not.toContain('bob');
    const [listedAfter, removedAgain] = await Promise.all([
      mixtape(['user', 'list']),
      mixtape(['user', 'remove', 'bob']),
    ]);
    expect(listedAfter.stdout).not.toMatch(/bob/);
    expect(removedAgain.code).not.toBe(0);
    expect(removedAgain.stderr).toMatch(/No user named "bob"/);
  }, 90_000);

  // Six CLI processes one after another, as in the test above.
  it('user add, passwd, list and remove take a name in either Unicode form as one user; invisible characters are refused', async ({
    expect,
  }) => {
    const [nfc, nfd] = ['jos\u00e9', 'jose\u0301'];
    const added = await mixtape(['user', 'add', nfd, '--password-stdin'], { input: 'first secret\n' });
    expect(added.code, added.stderr).toBe(0);
    expect(await userNames()).toContain(nfc);
    expect(await userNames()).not.toContain(nfd);

    const again = await mixtape(['user', 'add', nfc, '--password-stdin'], { input: 'other long secret\n' });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/already exists/);
    const changed = await mixtape(['user', 'passwd', nfc, '--password-stdin'], { input: 'second secret\n' });
    expect(changed.code, changed.stderr).toBe(0);
    expect(await signInStatuses(nfc, ['second secret'])).toEqual([200]);
    expect(await signInStatuses(nfd, ['second secret', 'first secret'])).toEqual([200, 401]);

    const refused = await mixtape(['user', 'add', 'zed\u200b', '--password-stdin'], { input: 'long enough secret\n' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'mixtape: A user name may not contain control or format characters (such as zero-width spaces or ' +
        'bidirectional marks): it has U+200B at character 4.\n',
    );
    expect((await userNames()).filter((name) => name.startsWith('zed'))).toEqual([]);

    const listed = await mixtape(['user', 'list']);
    expect(listed.stdout.split('\n').filter((line) => line.startsWith('jos'))).toEqual([
      expect.stringMatching(new RegExp(`^${nfc}\t0 playlists\t`)),
    ]);
    const removed = await mixtape(['user', 'remove', nfd]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(await userNames()).not.toContain(nfc);
  }, 90_000);

  it('catalog import prints the counts, and names the line of a bad entry', async ({ expect }) => {
    const good = join(dir, 'songs.csv');
    writeFileSync(
      good,
      'title,artist,album,genre,duration\n"Cli Song, One",Tester,,Rock,120\nCli Song Two,Tester,,,\n',
    );
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"title":"Fine","artist":"A"}\n{"title":"","artist":"A"}\n');
    const [imported, refused] = await Promise.all([
      mixtape(['catalog', 'import', good]),
      mixtape(['catalog', 'import', bad]),
    ]);
    expect(imported).toMatchObject({ code: 0, stdout: 'Catalog import: 2 added, 0 updated, 0 unchanged.\n' });
    // No terminal: no progress bar either.
    expect(imported.stderr).toBe('');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('bad.jsonl, line 2: title must not be empty');
    expect(refused.stdout).toBe('');
  });

  it('catalog import refreshes, in its own process, the smart playlists whose songs it changes', async ({ expect }) => {
    // A database of its own: the other tests' imports, running beside it, refresh no playlist of it.
    const folder = join(dir, 'smart');
    mkdirSync(folder);
    const url = `sqlite:${join(folder, 'mixtape.db')}`;
    const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', MIXTAPE_SEED_CATALOG: 'false' });
    const db = openDatabase(config.database);
    await migrateToLatest(db);
    const app = await buildApp({ config, db });
    try {
      expect(await userService(db).add('smart-cli', 'smart cli secret')).toBe(true);
      const security = basic('smart-cli', 'smart cli secret');
      const rules = { match: 'all', conditions: [{ field: 'title', op: 'startsWith', value: 'smart cli' }] };
      const made = await app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security },
        payload: { name: 'S', rules },
      });
      expect(made.statusCode, made.body).toBe(200);
      const { id } = made.json<{ id: number }>();
      const songs = join(dir, 'smart.csv');
      writeFileSync(songs, 'title,artist\nSmart CLI Song,Tester\n');
      const imported = await mixtape(['catalog', 'import', songs], { env: { DATABASE_URL: url } });
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout).toMatch(
        /^Catalog import: 1 added, 0 updated, 0 unchanged\.\nSmart playlists: 1 of \d+ changed\.\n$/,
      );
      const read = await app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security } });
      expect(read.json<{ songs: { title: string }[] }>().songs.map((song) => song.title)).toEqual(['Smart CLI Song']);
      const versions = await app.inject({ method: 'GET', url: `/v3/playlist/${id}/versions`, headers: { security } });
      expect(versions.json<{ change: string; by: string }[]>()[0]).toMatchObject({
        change: 'refresh',
        by: 'smart-cli',
      });
    } finally {
      await app.close();
      await db.close();
    }
  });

  it('refuses a bad setting, naming it, and asks for --password-stdin without a terminal', async ({ expect }) => {
    const [port, database, noTerminal] = await Promise.all([
      mixtape(['serve'], { env: { PORT: 'abc' } }),
      mixtape(['migrate'], { env: { DATABASE_URL: 'mysql://x' } }),
      mixtape(['user', 'add', 'carol'], { input: 'secret\n' }),
    ]);
    expect(port.code).not.toBe(0);
    expect(port.stderr).toMatch(/bad setting: PORT must be an integer/);
    expect(database.code).not.toBe(0);
    expect(database.stderr).toMatch(/bad setting: DATABASE_URL must start with sqlite: or postgres:/);
    expect(noTerminal.code).not.toBe(0);
    expect(noTerminal.stderr).toMatch(/No terminal .*--password-stdin/);
    expect(await userNames()).not.toContain('carol');
  });

  it("playlist deleted lists a user's deleted playlists, and playlist restore brings one back for its owner", async ({
    expect,
  }) => {
    const added = await mixtape(['user', 'add', 'carol', '--password-stdin'], { input: 'carol restores\n' });
    expect(added.code).toBe(0);
    // Load shedding is off, as in every app a test runs in its own process (test/helpers/app.ts): it judges the
    // test's own event loop, busy with the CLI processes the other tests of this file start at the same time, and
    // refused the delete this test is about (503 "overloaded", on a busy machine).
    const config = loadConfig({
      DATABASE_URL,
      LOG_LEVEL: 'silent',
      MIXTAPE_SEED_CATALOG: 'false',
      MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '0',
    });
    const db = openDatabase(config.database);
    const app = await buildApp({ config, db });
    const headers = { security: basic('carol', 'carol restores') };
    try {
      const song = await db.kysely
        .insertInto('songs')
        .values({
          title: 'Kept',
          artist: 'A',
          album: 'B',
          genre: 'C',
          duration: 1,
          ...songSearchColumns({ title: 'Kept', artist: 'A', album: 'B', genre: 'C' }),
          added: Date.now(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const created = await app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers,
        payload: { name: 'Dropped by mistake', songIds: [song.id, song.id] },
      });
      const { id } = created.json<{ id: number }>();
      const deleted = await app.inject({ method: 'DELETE', url: `/v3/playlist/${id}`, headers });
      expect(deleted.statusCode, deleted.body).toBe(200);

      const listed = await mixtape(['playlist', 'deleted', 'carol']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(
        new RegExp(`^${id}\\tDropped by mistake\\tdeleted \\d{4}-.*mixtape playlist restore ${id}$`, 'm'),
      );
      const restored = await mixtape(['playlist', 'restore', String(id)]);
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stdout).toBe(`Playlist ${id} of "carol" restored from version 2: 2 songs.\n`);
      const read = await app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers });
      expect(read.statusCode).toBe(200);
      expect(read.json<{ name: string }>().name).toBe('Dropped by mistake');
      const again = await mixtape(['playlist', 'restore', String(id), '--version', '9']);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/no version 9/);
      expect((await mixtape(['playlist', 'deleted', 'nobody'])).stderr).toMatch(/No user named "nobody"/);
      expect((await mixtape(['playlist', 'restore', 'x'])).code).toBe(2);
    } finally {
      await app.close();
      await db.close();
    }
  }, 90_000);

  it('user add and user passwd refuse a new password shorter than 12 characters, saying the rule; a user whose password is shorter from before still signs in', async ({
    expect,
  }) => {
    const rule =
      'mixtape: A new password needs at least 12 characters; this one has 11. A few words in a row make one that ' +
      'is easy to type.\n';
    const [short, enough] = await Promise.all([
      mixtape(['user', 'add', 'shorty', '--password-stdin'], { input: 'eleven char\n' }),
      mixtape(['user', 'add', 'twelve', '--password-stdin'], { input: 'twelve chars\n' }),
    ]);
    expect(short).toEqual({ code: 1, stdout: '', stderr: rule });
    expect(enough).toMatchObject({ code: 0, stderr: '' });
    expect(await userNames()).toEqual(expect.arrayContaining(['twelve']));
    expect(await userNames()).not.toContain('shorty');

    // A user from before the rule.
    const db = openDatabase(loadConfig({ DATABASE_URL }).database);
    try {
      expect(await userService(db).add('olden', 'old pw')).toBe(true);
    } finally {
      await db.close();
    }
    expect(await signInStatuses('olden', ['old pw'])).toEqual([200]);
    const refused = await mixtape(['user', 'passwd', 'olden', '--password-stdin'], { input: 'eleven char\n' });
    expect(refused).toEqual({ code: 1, stdout: '', stderr: rule });
    expect(await signInStatuses('olden', ['old pw', 'eleven char'])).toEqual([200, 401]);
    const changed = await mixtape(['user', 'passwd', 'olden', '--password-stdin'], { input: 'a longer one now\n' });
    expect(changed.code, changed.stderr).toBe(0);
    expect(await signInStatuses('olden', ['a longer one now', 'old pw'])).toEqual([200, 401]);
  }, 60_000);

  it('fails with the usage when no command is given, and lists the user commands for a bare `user`', async ({
    expect,
  }) => {
    const [none, user, help] = await Promise.all([mixtape([]), mixtape(['user']), mixtape(['--help'])]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/a command is needed[\s\S]*Usage: mixtape <command>[\s\S]*catalog import PATH/);
    expect(user.code).toBe(2);
    expect(user.stderr).toMatch(
      /mixtape user needs a command[\s\S]*user add NAME[\s\S]*user remove NAME[\s\S]*user list/,
    );
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: mixtape <command>/);
  });
});

// Many short processes: one after another, with no other test of this file running beside them.
describe('the mixtape command line: help, mistakes and the version', () => {
  it('--help and -h print the usage of every command and group on stdout and exit 0, doing nothing', async ({
    expect,
  }) => {
    const { folder, env } = untouchable('help');
    const asked = [
      ...COMMANDS.flatMap((command) => [
        [...command, '--help'],
        [...command, '-h'],
      ]),
      ['help'],
      ['help', 'user'],
    ];
    const runs = await mixtapeEach(asked, env);
    runs.forEach((run, i) => {
      const args = asked[i]!;
      const command = args[0] === 'help' ? args.slice(1) : args.slice(0, -1);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(run.stdout, args.join(' ')).toMatch(new RegExp(`^Usage: ${['mixtape', ...command].join(' ')}( |\n)`));
    });
    const root = runs[0]!.stdout;
    for (const line of ['serve', 'user add NAME [--password-stdin]', 'playlist restore ID [--version N]'])
      expect(root).toContain(`\n  ${line} `);
    expect(root).toMatch(/-v, --version +print the version/);
    expect(runs[asked.findIndex((args) => args.join(' ') === 'user add --help')]!.stdout).toMatch(
      /--password-stdin +read the password/,
    );
    expect(readdirSync(folder)).toEqual([]);
  }, 90_000);

  it('a mistake on any command exits 2 with one line, then the usage, and no stack', async ({ expect }) => {
    const { folder, env } = untouchable('mistakes');
    const mistakes: [string[], string][] = [
      [['--verbose'], "mixtape: unknown option '--verbose'"],
      [['serv'], "mixtape: unknown command 'serv' (Did you mean serve?)"],
      [['serve', '--port', '8080'], "mixtape serve: unknown option '--port'"],
      [['migrate', '--dry-run'], "mixtape migrate: unknown option '--dry-run'"],
      [['user', 'ad', 'dave'], "mixtape user: unknown command 'ad' (Did you mean add?)"],
      [
        ['user', 'add', 'dave', '--pasword-stdin'],
        "mixtape user add: unknown option '--pasword-stdin' (Did you mean --password-stdin?)",
      ],
      [['user', 'add'], "mixtape user add: missing required argument 'NAME'"],
      [
        ['user', 'passwd', 'dave', '--pasword-stdin'],
        "mixtape user passwd: unknown option '--pasword-stdin' (Did you mean --password-stdin?)",
      ],
      [['user', 'remove', 'dave', '--force'], "mixtape user remove: unknown option '--force'"],
      [
        ['user', 'list', 'dave'],
        "mixtape user list: too many arguments for 'list'. Expected 0 arguments but got 1: dave.",
      ],
      [['playlist', 'delted', 'dave'], "mixtape playlist: unknown command 'delted' (Did you mean deleted?)"],
      [['playlist', 'deleted', 'dave', '--all'], "mixtape playlist deleted: unknown option '--all'"],
      [
        ['playlist', 'restore', '5', '--verison', '2'],
        "mixtape playlist restore: unknown option '--verison' (Did you mean --version?)",
      ],
      [
        ['playlist', 'restore', '5', '--version', '0'],
        "mixtape playlist restore: option '--version <N>' argument '0' is invalid. It must be a whole number from 1 up.",
      ],
      [['catalog', 'imprt', 'songs.csv'], "mixtape catalog: unknown command 'imprt' (Did you mean import?)"],
      [['catalog', 'import', 'songs.csv', '--dry-run'], "mixtape catalog import: unknown option '--dry-run'"],
    ];
    const runs = await mixtapeEach(
      mistakes.map(([args]) => args),
      env,
    );
    runs.forEach((run, i) => {
      const [args, message] = mistakes[i]!;
      const command = message.slice(0, message.indexOf(':'));
      const lines = run.stderr.split('\n');
      expect({ args, code: run.code, stdout: run.stdout, first: lines[0] }).toEqual({
        args,
        code: 2,
        stdout: '',
        first: message,
      });
      expect(lines[1]).toBe('');
      expect(lines[2]).toMatch(new RegExp(`^Usage: ${command}( |$)`));
      expect(run.stderr).not.toMatch(/\n\s+at |Error|ERR_/);
    });
    expect(readdirSync(folder)).toEqual([]);
  }, 90_000);

  it('--version and -v print the version of the package', async ({ expect }) => {
    const { folder, env } = untouchable('version');
    const runs = await mixtapeEach([['--version'], ['-v']], env);
    for (const run of runs) expect(run).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
    expect(readdirSync(folder)).toEqual([]);
  });
});
