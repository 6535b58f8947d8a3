/**
 * The service's settings, read once from the environment, validated and frozen.
 * Nothing else in the code base reads `process.env`.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';

/** How long the service waits for its database, whichever it is. */
export interface DatabaseTimeouts {
  /**
   * The longest a statement may take (PostgreSQL cancels it, and the client gives up on a server that does not
   * answer), and the longest a SQLite write waits for another process's write lock.
   */
  readonly queryTimeoutMs: number;
  /** The longest a request waits to connect or for a free pooled PostgreSQL connection. */
  readonly connectTimeoutMs: number;
  /** How long `serve` keeps trying to reach the database at start before it gives up. */
  readonly startTimeoutMs: number;
}

/** Which database, from `DATABASE_URL` (and the pool size for PostgreSQL). */
type DatabaseLocation =
  | { readonly dialect: 'sqlite'; readonly file: string; readonly url: string }
  | { readonly dialect: 'postgres'; readonly url: string; readonly poolSize: number };

export type DatabaseConfig = DatabaseLocation & DatabaseTimeouts;

export interface Limits {
  readonly nameMaxLength: number;
  readonly songsMax: number;
  readonly pageDefault: number;
  readonly pageMax: number;
  readonly searchMaxLength: number;
  /** A request body's bytes, but for an import's. */
  readonly bodyBytes: number;
  /** A playlist file's bytes, sent to `POST /v3/playlist/import`. */
  readonly importBytes: number;
  readonly playlistsPerUser: number;
  /** Live (not expired) share links a playlist may have at once. */
  readonly linksMax: number;
  /** Members of one playlist besides its owner (docs/api.md, Sharing a playlist). */
  readonly membersMax: number;
  /** Playlists one user may be a member of (shared with them), deleted ones kept for a restore included. */
  readonly sharedWithMax: number;
  /** Keys of merged edits kept per user (docs/api.md, Entries and merged edits); a new one forgets the oldest. */
  readonly editKeysPerUser: number;
  /** Folders one user may have (docs/api.md, Folders). */
  readonly foldersMax: number;
}

/** Failed sign-in budgets, each over the same window. */
export interface ThrottlePolicy {
  /** Failures of one name from one address. */
  readonly perAddressAndName: number;
  /** Failures from one address, whatever the names. */
  readonly perAddress: number;
  /** Failures of one name from every address together: distributed guessing. */
  readonly perName: number;
  readonly windowMs: number;
  /** How long an address stays known for a name after a sign-in as it, or a request with its verified credential. */
  readonly knownMs: number;
  /** Attempts this instance counts a second (each writes up to three budget rows); half are kept for known addresses. */
  readonly attemptsPerSecond: number;
  /** IPv6 addresses are counted by this many leading bits (see `clientKey`). */
  readonly ipv6PrefixBits: number;
}

export interface AuthConfig {
  /** Verified credentials kept in memory. */
  readonly cacheSize: number;
  /** How long a cached credential is trusted before it is checked against the database again. */
  readonly recheckMs: number;
  /** Failed sign-in budgets (see SignInThrottle). */
  readonly throttle: ThrottlePolicy;
  /** Password hashes computed at the same time, how many more may wait, and for how long, before 503. */
  readonly hashConcurrency: number;
  readonly hashQueue: number;
  readonly hashWaitMs: number;
}

export interface ImageConfig {
  /** Memory for rendered covers, in bytes. */
  readonly cacheBytes: number;
  /** Covers drawn at the same time. */
  readonly renders: number;
  /** Covers waiting for a free renderer before new ones answer 503. */
  readonly queue: number;
}

/** How long a client may take, and how many connections it may hold. */
export interface ServerConfig {
  /** The whole request, headers and body, must arrive within this; then 408. */
  readonly requestTimeoutMs: number;
  /** The request headers must arrive within this; at most `requestTimeoutMs`. */
  readonly headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections at once; one more is answered 503 and closed. */
  readonly maxConnections: number;
  /** Open connections at once from one client socket address. */
  readonly maxConnectionsPerAddress: number;
  /** IPv6 clients are counted by this many leading bits of their address (see `clientKey`). */
  readonly ipv6PrefixBits: number;
}

/** How searches are bounded: each one's time, and how many run at once. */
export interface SearchSettings {
  /** A search still reading after this long answers 503. */
  readonly timeoutMs: number;
  /** Searches that read at the same time, across all users; one more per user waits for the first. */
  readonly concurrency: number;
}

/** How long a smart playlist's rules may take to choose their songs (smart/rules-runner.ts). */
export interface RulesSettings {
  /** A rules query still running after this long is stopped, and its request answered 422. */
  readonly timeoutMs: number;
}

/** Requests that wait for changes (live/). */
export interface LiveSettings {
  /** Waiting requests of one user on an instance; the next one makes the oldest answer at once. */
  readonly waitsPerUser: number;
  /** A stream of changes ends after this long, with a last event to resume from. */
  readonly streamMaxSeconds: number;
}

/** The threads that read playlist files and compute diffs off the event loop, and how many tasks may wait for them. */
export interface WorkerSettings {
  readonly threads: number;
  /** Tasks waiting for a free thread, across all users; one more answers 503. */
  readonly queue: number;
}

/**
 * When the instance refuses new costly requests (imports, edits, diffs, searches, covers, creates) with 503 and
 * `Retry-After`, because its event loop has fallen behind; 0 switches a measure off. Health checks and reads of
 * single playlists are always answered.
 */
export interface LoadSheddingSettings {
  /** The event loop's delay, in milliseconds, past which costly requests are refused. */
  readonly maxEventLoopDelayMs: number;
  /** The share of time the event loop was busy (0 to 1) past which costly requests are refused. */
  readonly maxEventLoopUtilization: number;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly logLevel: LogLevel;
  readonly database: DatabaseConfig;
  readonly bootstrapUser: { readonly name: string; readonly password: string } | undefined;
  readonly seedCatalog: boolean;
  readonly limits: Limits;
  readonly auth: AuthConfig;
  readonly images: ImageConfig;
  /** Memory for playlists' answers (JSON bytes), in bytes; 0 switches the cache off. */
  readonly playlistCacheBytes: number;
  /** Memory for the answers of users' trees (`GET /v3/library`), in bytes; 0 switches the cache off. */
  readonly libraryCacheBytes: number;
  /** Days every revision of a playlist is kept (a playlist's current one always), and a deleted playlist restorable. */
  readonly historyDays: number;
  /** How long one search may read the caller's playlists, and how many searches read at once. */
  readonly search: SearchSettings;
  /** How long a smart playlist's rules query may run before it is stopped (422). */
  readonly rules: RulesSettings;
  readonly live: LiveSettings;
  readonly workers: WorkerSettings;
  readonly loadShedding: LoadSheddingSettings;
  readonly server: ServerConfig;
  /** Requests per minute per client address; 0 switches general rate limiting off. */
  readonly rateLimitPerMinute: number;
  /** Requests per minute per client address to shared playlists (`/s/…`), counted apart; 0 switches it off. */
  readonly sharePerMinute: number;
  /**
   * The Redis that instances share the rate limit through (`REDIS_URL`, `redis://` or `rediss://`); undefined: each
   * instance counts on its own.
   */
  readonly redisUrl: string | undefined;
  readonly corsOrigins: readonly string[];
  /**
   * Which proxies' `X-Forwarded-For` is believed: none (false), the nearest N hops, or these addresses and ranges
   * (Fastify's `trustProxy`, which takes the right-most address not of a trusted proxy as the client's).
   */
  readonly trustProxy: false | number | readonly string[];
  /**
   * After SIGTERM, how long the instance keeps serving with `/readyz` answering 503 before it stops accepting, so
   * that a proxy's health check takes it out of the pool first; 0 stops accepting at once.
   */
  readonly drainDelayMs: number;
  /** Once it stops accepting, how long in-flight requests have to finish before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
  /**
   * Run by npm (`npm start`, `npx mixtape serve`: npm sets `npm_lifecycle_event`): the service also stops, as on
   * SIGTERM, once the process that started it has exited, because the shell npm starts does not pass SIGTERM on.
   */
  readonly stopWithParent: boolean;
  /** Playlist files (XSPF, JSPF, M3U8): the addresses they carry. */
  readonly exports: ExportConfig;
  /** The bearer token `/metrics` needs; undefined leaves it open, as Prometheus expects by default. */
  readonly metricsToken: string | undefined;
}

export interface ExportConfig {
  /** The service's public origin and path prefix (no trailing slash); undefined: each request's own origin. */
  readonly publicUrl: string | undefined;
  /** Each entry's location: `{base}` is the public base, `{id}` the song id. */
  readonly locationTemplate: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A setting that cannot be used; the message names it. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

const DEFAULT_DATABASE_URL = 'sqlite:./data/mixtape.db';

export function loadConfig(env: Env = process.env): Config {
  const read = reader(env);
  // One setting for every per-client cap: the connection caps, the sign-in throttle and the rate limit.
  const ipv6PrefixBits = read.int('MIXTAPE_IPV6_PREFIX', 64, 32, 128);
  const config: Config = {
    port: read.int('PORT', 8080, 0, 65535),
    host: read.string('HOST', '127.0.0.1'),
    logLevel: read.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    database: {
      ...parseDatabaseUrl(
        read.string('DATABASE_URL', DEFAULT_DATABASE_URL),
        read.int('DATABASE_POOL_SIZE', 10, 1, 1000),
      ),
      queryTimeoutMs: read.int('DATABASE_QUERY_TIMEOUT_MS', 5000, 100, 600_000),
      connectTimeoutMs: read.int('DATABASE_CONNECT_TIMEOUT_MS', 3000, 100, 600_000),
      startTimeoutMs: read.int('DATABASE_START_TIMEOUT_SECONDS', 60, 0, 86_400) * 1000,
    },
    bootstrapUser: parseBootstrapUser(env.MIXTAPE_BOOTSTRAP_USER),
    seedCatalog: read.bool('MIXTAPE_SEED_CATALOG', true),
    limits: {
      nameMaxLength: read.int('MIXTAPE_NAME_MAX_LENGTH', 200, 1, 10_000),
      songsMax: read.int('MIXTAPE_SONGS_MAX', 10_000, 0, 100_000),
      pageDefault: read.int('MIXTAPE_PAGE_DEFAULT', 20, 1, 10_000),
      pageMax: read.int('MIXTAPE_PAGE_MAX', 100, 1, 10_000),
      searchMaxLength: read.int('MIXTAPE_SEARCH_MAX_LENGTH', 200, 1, 10_000),
      bodyBytes: read.int('MIXTAPE_BODY_LIMIT', 1024 * 1024, 1024, 64 * 1024 * 1024),
      importBytes: read.int('MIXTAPE_IMPORT_LIMIT', 8 * 1024 * 1024, 1024, 64 * 1024 * 1024),
      playlistsPerUser: read.int('MIXTAPE_PLAYLISTS_PER_USER', 10_000, 1, 2 ** 31 - 1),
      linksMax: read.int('MIXTAPE_LINKS_MAX', 10, 1, 10_000),
      membersMax: read.int('MIXTAPE_MEMBERS_MAX', 100, 1, 100_000),
      sharedWithMax: read.int('MIXTAPE_SHARED_WITH_MAX', 10_000, 1, 10_000_000),
      editKeysPerUser: read.int('MIXTAPE_EDIT_KEYS_PER_USER', 1000, 1, 1_000_000),
      foldersMax: read.int('MIXTAPE_FOLDERS_MAX', 1000, 1, 100_000),
    },
    auth: {
      cacheSize: read.int('MIXTAPE_AUTH_CACHE_SIZE', 10_000, 1, 10_000_000),
      recheckMs: read.int('MIXTAPE_AUTH_RECHECK_SECONDS', 5, 0, 3600) * 1000,
      throttle: {
        perAddressAndName: read.int('MIXTAPE_AUTH_MAX_FAILURES', 10, 1, 1_000_000),
        perAddress: read.int('MIXTAPE_AUTH_MAX_FAILURES_PER_ADDRESS', 100, 1, 1_000_000),
        perName: read.int('MIXTAPE_AUTH_MAX_FAILURES_PER_NAME', 100, 1, 1_000_000),
        windowMs: read.int('MIXTAPE_AUTH_FAILURE_WINDOW_SECONDS', 300, 1, 86_400) * 1000,
        knownMs: read.int('MIXTAPE_AUTH_KNOWN_ADDRESS_SECONDS', 30 * 86_400, 1, 366 * 86_400) * 1000,
        attemptsPerSecond: read.int('MIXTAPE_AUTH_ATTEMPTS_PER_SECOND', 100, 1, 1_000_000),
        ipv6PrefixBits,
      },
      hashConcurrency: read.int('MIXTAPE_AUTH_HASH_CONCURRENCY', 2, 1, 256),
      hashQueue: read.int('MIXTAPE_AUTH_HASH_QUEUE', 32, 0, 100_000),
      hashWaitMs: read.int('MIXTAPE_AUTH_HASH_WAIT_MS', 2000, 1, 600_000),
    },
    images: {
      cacheBytes: read.int('MIXTAPE_IMAGE_CACHE_MB', 32, 0, 65_536) * 1024 * 1024,
      renders: read.int('MIXTAPE_IMAGE_RENDERS', 2, 1, 256),
      queue: read.int('MIXTAPE_IMAGE_QUEUE', 16, 0, 100_000),
    },
    playlistCacheBytes: read.int('MIXTAPE_PLAYLIST_CACHE_MB', 64, 0, 65_536) * 1024 * 1024,
    libraryCacheBytes: read.int('MIXTAPE_LIBRARY_CACHE_MB', 32, 0, 65_536) * 1024 * 1024,
    historyDays: read.int('MIXTAPE_HISTORY_DAYS', 30, 1, 36_500),
    search: {
      timeoutMs: read.int('MIXTAPE_SEARCH_TIMEOUT_MS', 2000, 10, 600_000),
      concurrency: read.int('MIXTAPE_SEARCH_CONCURRENCY', 4, 1, 256),
    },
    rules: {
      timeoutMs: read.int('MIXTAPE_RULES_TIMEOUT_MS', 2000, 10, 600_000),
    },
    live: {
      waitsPerUser: read.int('MIXTAPE_WAITS_PER_USER', 10, 1, 1000),
      streamMaxSeconds: read.int('MIXTAPE_STREAM_MAX_SECONDS', 900, 1, 86_400),
    },
    workers: {
      // One core is the event loop's; the threads take the others, at most four (one on a machine of one or two).
      threads: read.int('MIXTAPE_WORKER_THREADS', Math.min(4, Math.max(1, availableParallelism() - 1)), 1, 256),
      queue: read.int('MIXTAPE_WORKER_QUEUE', 64, 0, 100_000),
    },
    loadShedding: {
      maxEventLoopDelayMs: read.int('MIXTAPE_MAX_EVENT_LOOP_DELAY_MS', 200, 0, 600_000),
      maxEventLoopUtilization: read.int('MIXTAPE_MAX_EVENT_LOOP_UTILIZATION_PERCENT', 0, 0, 100) / 100,
    },
    server: {
      requestTimeoutMs: read.int('MIXTAPE_REQUEST_TIMEOUT_SECONDS', 30, 1, 3600) * 1000,
      headersTimeoutMs: read.int('MIXTAPE_HEADERS_TIMEOUT_SECONDS', 10, 1, 3600) * 1000,
      keepAliveTimeoutMs: read.int('MIXTAPE_KEEPALIVE_TIMEOUT_SECONDS', 5, 1, 3600) * 1000,
      maxConnections: read.int('MIXTAPE_MAX_CONNECTIONS', 4096, 1, 1_000_000),
      maxConnectionsPerAddress: read.int('MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS', 256, 1, 1_000_000),
      ipv6PrefixBits,
    },
    rateLimitPerMinute: read.int('MIXTAPE_RATE_LIMIT', 0, 0, 10_000_000),
    sharePerMinute: read.int('MIXTAPE_SHARE_PER_MINUTE', 120, 0, 10_000_000),
    redisUrl: parseRedisUrl(env.REDIS_URL),
    corsOrigins: read.list('MIXTAPE_CORS_ORIGINS'),
    trustProxy: parseTrustProxy(env.MIXTAPE_TRUST_PROXY),
    drainDelayMs: read.int('MIXTAPE_DRAIN_DELAY_SECONDS', 0, 0, 3600) * 1000,
    shutdownTimeoutMs: read.int('MIXTAPE_SHUTDOWN_TIMEOUT_SECONDS', 10, 0, 3600) * 1000,
    stopWithParent: env.npm_lifecycle_event !== undefined,
    exports: {
      publicUrl: parsePublicUrl(env.MIXTAPE_PUBLIC_URL),
      locationTemplate: parseLocationTemplate(read.string('MIXTAPE_PLAYLIST_LOCATION', DEFAULT_LOCATION)),
    },
    metricsToken: parseMetricsToken(env.MIXTAPE_METRICS_TOKEN),
  };
  if (config.limits.pageDefault > config.limits.pageMax) {
    throw new ConfigError(
      `MIXTAPE_PAGE_DEFAULT (${config.limits.pageDefault}) must not exceed MIXTAPE_PAGE_MAX (${config.limits.pageMax})`,
    );
  }
  if (config.server.headersTimeoutMs > config.server.requestTimeoutMs) {
    throw new ConfigError(
      `MIXTAPE_HEADERS_TIMEOUT_SECONDS (${config.server.headersTimeoutMs / 1000}) must not exceed MIXTAPE_REQUEST_TIMEOUT_SECONDS (${config.server.requestTimeoutMs / 1000})`,
    );
  }
  return deepFreeze(config);
}

function parseDatabaseUrl(url: string, poolSize = 10): DatabaseLocation {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      throw new ConfigError(`DATABASE_URL is not a valid postgres:// URL`);
    }
    return { dialect: 'postgres', url, poolSize };
  }
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (file === '')
      throw new ConfigError('DATABASE_URL names no SQLite file (use sqlite:./data/mixtape.db or sqlite::memory:)');
    return { dialect: 'sqlite', file, url };
  }
  throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres:// (got "${url.split(':')[0] ?? ''}:…")`);
}

function parseRedisUrl(value: string | undefined): string | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  // The value may hold a password: the message does not repeat it.
  if (url === undefined || !['redis:', 'rediss:'].includes(url.protocol) || url.hostname === '') {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL with a host (redis://127.0.0.1:6379)');
  }
  const database = url.pathname.replace(/^\//, '');
  if (database !== '' && !/^\d{1,2}$/.test(database)) {
    throw new ConfigError('REDIS_URL may end with a database number only (redis://127.0.0.1:6379/0)');
  }
  return text;
}

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function parseTrustProxy(value: string | undefined): Config['trustProxy'] {
  const text = value?.trim().toLowerCase() ?? '';
  if (['', 'false', 'no', 'off', '0'].includes(text)) return false;
  if (['true', 'yes', 'on'].includes(text)) {
    throw new ConfigError(
      'MIXTAPE_TRUST_PROXY=true would believe any X-Forwarded-For a client writes; name the proxies instead: ' +
        'a hop count (1 for one proxy in front) or their addresses (10.0.0.5,10.1.0.0/16)',
    );
  }
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops > 100) throw new ConfigError(`MIXTAPE_TRUST_PROXY must be at most 100 hops (got "${text}")`);
    return hops;
  }
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const goodBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits);
    if (!PROXY_RANGE_NAMES.includes(entry) && (family === 0 || !goodBits || extra !== undefined)) {
      throw new ConfigError(
        `MIXTAPE_TRUST_PROXY must be false, a hop count, or proxy addresses and ranges (got "${entry}")`,
      );
    }
  }
  return entries;
}

/** Where an exported entry points by default: the song on this service. */
export const DEFAULT_LOCATION = '{base}/v3/song/{id}';

function parsePublicUrl(value: string | undefined): string | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`MIXTAPE_PUBLIC_URL must be an http:// or https:// URL (got "${text}")`);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new ConfigError(
      `MIXTAPE_PUBLIC_URL must be an http:// or https:// URL without credentials, query or fragment (got "${text}")`,
    );
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function parseLocationTemplate(template: string): string {
  const names = [...template.matchAll(/\{([^}]*)\}/g)].map(([, name]) => name);
  const count = (name: string) => names.filter((n) => n === name).length;
  if (count('id') !== 1 || count('base') > 1 || names.length !== count('id') + count('base')) {
    throw new ConfigError(
      `MIXTAPE_PLAYLIST_LOCATION must contain {id} once, may contain {base} once, and no other {…} (got "${template}")`,
    );
  }
  // Imports match locations against the template: a digit or {base} right before {id} would make that costly.
  if (/[\s\p{Cc}]/u.test(template) || /(?:\d|\{base\})\{id\}/.test(template)) {
    throw new ConfigError(
      `MIXTAPE_PLAYLIST_LOCATION may hold no white space, and neither a digit nor {base} right before {id} (got "${template}")`,
    );
  }
  return template;
}

/** RFC 6750's token characters, long enough not to be guessed. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]{16,1024}=*$/;

function parseMetricsToken(value: string | undefined): string | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  // The value is a secret: the message does not repeat it.
  if (!BEARER_TOKEN.test(text)) {
    throw new ConfigError(
      'MIXTAPE_METRICS_TOKEN must be 16 to 1024 letters, digits and -._~+/ (openssl rand -hex 32 makes one)',
    );
  }
  return text;
}

function parseBootstrapUser(value: string | undefined): Config['bootstrapUser'] {
  if (value === undefined || value === '') return undefined;
  const colon = value.indexOf(':');
  if (colon <= 0 || colon === value.length - 1) {
    throw new ConfigError('MIXTAPE_BOOTSTRAP_USER must be name:password, both non-empty');
  }
  return { name: value.slice(0, colon), password: value.slice(colon + 1) };
}

function reader(env: Env) {
  const raw = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  return {
    string(name: string, fallback: string): string {
      return raw(name) ?? fallback;
    },
    int(name: string, fallback: number, min: number, max: number): number {
      const value = raw(name);
      if (value === undefined) return fallback;
      const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(n) || n < min || n > max) {
        throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${value}")`);
      }
      return n;
    },
    bool(name: string, fallback: boolean): boolean {
      const value = raw(name)?.toLowerCase();
      if (value === undefined) return fallback;
      if (['true', '1', 'yes', 'on'].includes(value)) return true;
      if (['false', '0', 'no', 'off'].includes(value)) return false;
      throw new ConfigError(`${name} must be true or false (got "${value}")`);
    },
    oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
      const value = raw(name)?.toLowerCase();
      if (value === undefined) return fallback;
      if ((allowed as readonly string[]).includes(value)) return value as T;
      throw new ConfigError(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
    },
    list(name: string): string[] {
      const value = raw(name);
      if (value === undefined) return [];
      return value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
