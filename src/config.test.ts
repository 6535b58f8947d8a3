import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('stops with its parent only when run by npm (npm start, npx), which sets npm_lifecycle_event', () => {
    expect(loadConfig({}).stopWithParent).toBe(false);
    expect(loadConfig({ npm_lifecycle_event: 'start' }).stopWithParent).toBe(true);
    expect(loadConfig({ npm_lifecycle_event: 'npx' }).stopWithParent).toBe(true);
  });

  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      logLevel: 'info',
      database: {
        dialect: 'sqlite',
        file: './data/mixtape.db',
        queryTimeoutMs: 5000,
        connectTimeoutMs: 3000,
        startTimeoutMs: 60_000,
      },
      seedCatalog: true,
      bootstrapUser: undefined,
      rateLimitPerMinute: 0,
      corsOrigins: [],
      limits: {
        nameMaxLength: 200,
        songsMax: 10_000,
        pageDefault: 20,
        pageMax: 100,
        searchMaxLength: 200,
        bodyBytes: 1_048_576,
        importBytes: 8_388_608,
        playlistsPerUser: 10_000,
        membersMax: 100,
        sharedWithMax: 10_000,
        editKeysPerUser: 1000,
        foldersMax: 1000,
      },
      auth: {
        recheckMs: 5000,
        throttle: {
          perAddressAndName: 10,
          perAddress: 100,
          perName: 100,
          windowMs: 300_000,
          knownMs: 30 * 86_400_000,
          attemptsPerSecond: 100,
          ipv6PrefixBits: 64,
        },
        hashConcurrency: 2,
        hashQueue: 32,
        hashWaitMs: 2000,
      },
      images: { cacheBytes: 32 * 1024 * 1024, renders: 2, queue: 16 },
      server: {
        requestTimeoutMs: 30_000,
        headersTimeoutMs: 10_000,
        keepAliveTimeoutMs: 5000,
        maxConnections: 4096,
        maxConnectionsPerAddress: 256,
        ipv6PrefixBits: 64,
      },
    });
    expect(config.exports).toEqual({ publicUrl: undefined, locationTemplate: '{base}/v3/song/{id}' });
    expect(config.metricsToken).toBeUndefined();
    expect(Object.isFrozen(config.limits)).toBe(true);
  });

  it('reads one IPv6 prefix for the connection caps and the sign-in throttle', () => {
    const config = loadConfig({ MIXTAPE_IPV6_PREFIX: '56' });
    expect(config.server.ipv6PrefixBits).toBe(56);
    expect(config.auth.throttle.ipv6PrefixBits).toBe(56);
  });

  it('reads the metrics token, and refuses a short or malformed one without repeating it', () => {
    const token = 'b2c4e6f8a0c2e4f6-._~+/AZaz09==';
    expect(loadConfig({ MIXTAPE_METRICS_TOKEN: ` ${token} ` }).metricsToken).toBe(token);
    expect(loadConfig({ MIXTAPE_METRICS_TOKEN: '' }).metricsToken).toBeUndefined();
    for (const bad of ['short-secret-15', 'sixteen chars and a space', 'sixteen-chars-quote"', 'x'.repeat(1025)]) {
      expect(() => loadConfig({ MIXTAPE_METRICS_TOKEN: bad })).toThrow(/^MIXTAPE_METRICS_TOKEN must be 16 to 1024/);
      let message = '';
      try {
        loadConfig({ MIXTAPE_METRICS_TOKEN: bad });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).not.toContain(bad);
    }
  });

  it('reads the public base URL and the location template of playlist files', () => {
    const config = loadConfig({
      MIXTAPE_PUBLIC_URL: 'https://Music.Example.com:443/mixtape/',
      MIXTAPE_PLAYLIST_LOCATION: 'https://cdn.example.com/{id}.mp3?via={base}',
    });
    expect(config.exports).toEqual({
      publicUrl: 'https://music.example.com/mixtape',
      locationTemplate: 'https://cdn.example.com/{id}.mp3?via={base}',
    });
  });

  it('reads database URLs of both kinds', () => {
    expect(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).database).toMatchObject({ file: ':memory:' });
    expect(loadConfig({ DATABASE_URL: 'postgresql://u@h:5432/d' }).database).toMatchObject({ dialect: 'postgres' });
    expect(loadConfig({ MIXTAPE_BOOTSTRAP_USER: 'ann:pa:ss' }).bootstrapUser).toEqual({
      name: 'ann',
      password: 'pa:ss',
    });
    expect(loadConfig({ MIXTAPE_CORS_ORIGINS: 'https://a.example, https://b.example' }).corsOrigins).toEqual([
      'https://a.example',
      'https://b.example',
    ]);
  });

  it('stops on a bad setting with a message that names it', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ PORT: '80a' }, /^PORT /],
      [{ PORT: '70000' }, /^PORT /],
      [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL /],
      [{ DATABASE_URL: 'sqlite:' }, /^DATABASE_URL /],
      [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL /],
      [{ MIXTAPE_SEED_CATALOG: 'maybe' }, /^MIXTAPE_SEED_CATALOG /],
      [{ MIXTAPE_BOOTSTRAP_USER: 'nopassword' }, /^MIXTAPE_BOOTSTRAP_USER /],
      [{ MIXTAPE_PAGE_DEFAULT: '50', MIXTAPE_PAGE_MAX: '10' }, /^MIXTAPE_PAGE_DEFAULT /],
      [{ MIXTAPE_IMAGE_RENDERS: '0' }, /^MIXTAPE_IMAGE_RENDERS /],
      [{ MIXTAPE_IMAGE_CACHE_MB: '-1' }, /^MIXTAPE_IMAGE_CACHE_MB /],
      [{ MIXTAPE_REQUEST_TIMEOUT_SECONDS: '0' }, /^MIXTAPE_REQUEST_TIMEOUT_SECONDS /],
      [{ MIXTAPE_REQUEST_TIMEOUT_SECONDS: '5' }, /^MIXTAPE_HEADERS_TIMEOUT_SECONDS \(10\) must not exceed/],
      [{ MIXTAPE_KEEPALIVE_TIMEOUT_SECONDS: 'x' }, /^MIXTAPE_KEEPALIVE_TIMEOUT_SECONDS /],
      [{ MIXTAPE_MAX_CONNECTIONS: '0' }, /^MIXTAPE_MAX_CONNECTIONS /],
      [{ MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS: '-5' }, /^MIXTAPE_MAX_CONNECTIONS_PER_ADDRESS /],
      [{ MIXTAPE_IPV6_PREFIX: '129' }, /^MIXTAPE_IPV6_PREFIX must be an integer from 32 to 128/],
      [{ MIXTAPE_IPV6_PREFIX: '/64' }, /^MIXTAPE_IPV6_PREFIX /],
      [{ MIXTAPE_PUBLIC_URL: 'music.example.com' }, /^MIXTAPE_PUBLIC_URL /],
      [{ MIXTAPE_PUBLIC_URL: 'ftp://music.example.com' }, /^MIXTAPE_PUBLIC_URL /],
      [{ MIXTAPE_PUBLIC_URL: 'https://music.example.com/?a=1' }, /^MIXTAPE_PUBLIC_URL /],
      [{ MIXTAPE_PLAYLIST_LOCATION: '{base}/song' }, /^MIXTAPE_PLAYLIST_LOCATION /],
      [{ MIXTAPE_PLAYLIST_LOCATION: '{base}/{title}/{id}' }, /^MIXTAPE_PLAYLIST_LOCATION /],
      [{ MIXTAPE_PLAYLIST_LOCATION: '{base}/a b/{id}' }, /^MIXTAPE_PLAYLIST_LOCATION /],
      [{ MIXTAPE_PLAYLIST_LOCATION: '{base}/{id}/{id}' }, /^MIXTAPE_PLAYLIST_LOCATION must contain \{id\} once/],
      [{ MIXTAPE_PLAYLIST_LOCATION: '{base}/{id}?from={base}' }, /^MIXTAPE_PLAYLIST_LOCATION must contain/],
      [{ MIXTAPE_PLAYLIST_LOCATION: '{base}{id}' }, /^MIXTAPE_PLAYLIST_LOCATION may hold .* nor \{base\} right before/],
      [{ MIXTAPE_PLAYLIST_LOCATION: 'https://cdn/track-0{id}' }, /^MIXTAPE_PLAYLIST_LOCATION may hold/],
      [{ REDIS_URL: '127.0.0.1:6379' }, /^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
      [{ REDIS_URL: 'http://127.0.0.1:6379' }, /^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
      [{ REDIS_URL: 'redis://127.0.0.1:6379/cache' }, /^REDIS_URL may end with a database number/],
    ];
    for (const [env, message] of cases) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(message);
    }
  });

  it('reads REDIS_URL, and never repeats it in an error (it may hold a password)', () => {
    expect(loadConfig({}).redisUrl).toBeUndefined();
    expect(loadConfig({ REDIS_URL: ' redis://:secret@cache.internal:6380/2 ' }).redisUrl).toBe(
      'redis://:secret@cache.internal:6380/2',
    );
    expect(loadConfig({ REDIS_URL: 'rediss://cache.internal' }).redisUrl).toBe('rediss://cache.internal');
    expect(() => loadConfig({ REDIS_URL: 'https://:secret@cache.internal' })).not.toThrow(/secret/);
    expect(() => loadConfig({ REDIS_URL: 'https://:secret@cache.internal' })).toThrow(ConfigError);
  });
});
