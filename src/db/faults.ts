/**
 * Which driver errors mean "the database cannot answer now" (the client may try again: 503 with Retry-After),
 * as opposed to a fault in the service or in the request. Both drivers' errors are classified here, once.
 */

/** Thrown when a database does not answer within its bound (a lock wait, a readiness check). */
export class DatabaseTimeoutError extends Error {
  override name = 'DatabaseTimeoutError';
  readonly code = 'MIXTAPE_DB_TIMEOUT';
}

// Node's socket errors: the server is down, restarting, or the network is broken.
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'MIXTAPE_DB_TIMEOUT',
]);

/**
 * SQLSTATE classes and codes (PostgreSQL appendix A) for a server that is going away, overloaded or out of room:
 * 08 connection exception, 53 insufficient resources (disk full, out of memory, too many connections),
 * 57P01–57P05 shutdown and crash recovery, 57014 a statement cancelled by `statement_timeout`, 55P03 a lock not
 * taken within `lock_timeout`, 40001/40P01
 * serialization failure and deadlock (a retry succeeds), 25006 a read-only server (a standby being promoted).
 */
const SQLSTATE_CLASSES = ['08', '53'];
const SQLSTATE_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '57P04',
  '57P05',
  '57014',
  '55P03',
  '40001',
  '40P01',
  '25006',
]);

// SQLite result codes (and their extended forms, e.g. SQLITE_IOERR_WRITE) for a locked, full, broken or read-only file.
const SQLITE_PREFIXES = ['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_READONLY'];
const SQLITE_CODES = new Set(['SQLITE_CANTOPEN', 'SQLITE_PROTOCOL', 'SQLITE_NOMEM']);

// node-postgres reports a lost or timed-out connection with plain errors that carry no code.
const PG_CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|is not queryable|Client was closed|connection timeout/i;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when the error means that the database cannot answer now, and the same request may succeed later. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = codeOf(error);
  if (code !== undefined) {
    if (SOCKET_CODES.has(code) || SQLSTATE_CODES.has(code) || SQLITE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && SQLSTATE_CLASSES.includes(code.slice(0, 2))) return true;
    if (SQLITE_PREFIXES.some((prefix) => code.startsWith(prefix))) return true;
  }
  if (error instanceof AggregateError && error.errors.some(isDatabaseUnavailable)) return true;
  return PG_CONNECTION_MESSAGES.test(error.message);
}

/** True for SQLite's "another connection holds the lock": worth waiting for, unlike a full disk. */
export function isSqliteBusy(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/**
 * True when a PostgreSQL connection cannot be used again after this error: everything but an error the server
 * reported for one statement (those carry a SQLSTATE and leave the session usable), and the shutdown codes.
 */
export function isConnectionBroken(error: unknown): boolean {
  const code = codeOf(error);
  const fromServer = code !== undefined && /^[0-9A-Z]{5}$/.test(code);
  return !fromServer || code.startsWith('08') || code.startsWith('57P');
}

/** Settles like `promise`, or rejects with a DatabaseTimeoutError after `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new DatabaseTimeoutError(`${what} did not answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * For an error that waiting will not cure (no such database, role or password), one line for the operator that says
 * what is wrong and what to do; undefined for any other error. `url` is the DATABASE_URL in use.
 */
export function describeSetupFault(error: unknown, url: string): string | undefined {
  const code = codeOf(error);
  if (code === undefined || !url.startsWith('postgres')) return undefined;
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.slice(1)) || decodeURIComponent(parsed.username) || 'postgres';
  const user = decodeURIComponent(parsed.username) || 'the current user';
  const server = `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}`;
  switch (code) {
    case '3D000':
      return `PostgreSQL at ${server} has no database "${database}": create it (createdb -h ${parsed.hostname || 'localhost'} -p ${parsed.port || '5432'} ${database}) or point DATABASE_URL at one that exists`;
    case '28000':
      return `PostgreSQL at ${server} refused the role "${user}" (${(error as Error).message}): create the role, allow it in pg_hba.conf, or fix the user in DATABASE_URL`;
    case '28P01':
      return `PostgreSQL at ${server} rejected the password of "${user}": fix the password in DATABASE_URL`;
    case '42501':
      return `the role "${user}" may not create tables in database "${database}" on ${server} (${(error as Error).message}): grant it, or use a role that owns the database`;
    default:
      return undefined;
  }
}
