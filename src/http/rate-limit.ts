import { createRequire } from 'node:module';
import rateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyBaseLogger, FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import { Redis } from 'ioredis';
import { clientKey } from './client-address.js';
import { ApiError } from './errors.js';

export interface RateLimitSettings {
  /** Requests a minute per client address to every route; 0: no limit for the whole app. */
  readonly perMinute: number;
  readonly ipv6PrefixBits: number;
  /** The Redis that instances share the counts through; undefined: this instance counts on its own. */
  readonly redisUrl: string | undefined;
}

/**
 * A throttle of its own for some routes (their `onRequest` hook): at most `perMinute` requests a minute from each
 * client address to the routes that share its `name`, counted apart from the app's rate limit, in the same store.
 */
export type RouteThrottle = (name: string, perMinute: number) => onRequestAsyncHookHandler;

/**
 * At most `perMinute` requests a minute from each client address (an IPv6 client by its first `ipv6PrefixBits`
 * bits, as `clientKey` keys it); one more answers 429 with `Retry-After`. With a Redis, every instance counts in it,
 * so N instances allow what one does; while it does not answer, each instance counts on its own (see SharedRedis).
 *
 * Every request is counted before any other work, signed in or not: the plugin would add its hook to each route
 * after the route's own `onRequest` hooks (authentication), so it is added once here, to the whole app, instead.
 * Routes with `config: { rateLimit: false }` (the probes and `/metrics`) are not counted.
 *
 * Returns the maker of route throttles, which count through the same machinery and store.
 */
export async function registerRateLimit(app: FastifyInstance, settings: RateLimitSettings): Promise<RouteThrottle> {
  const { perMinute, redisUrl, ipv6PrefixBits } = settings;
  const shared = redisUrl === undefined ? undefined : new SharedRedis(redisUrl, app.log);
  if (shared !== undefined) {
    app.addHook('onClose', () => {
      shared.close();
    });
  }
  await app.register(rateLimit, {
    global: false,
    max: perMinute,
    timeWindow: 60_000,
    ipv6Subnet: ipv6PrefixBits,
    ...(shared === undefined ? {} : { store: shared.store() }),
    errorResponseBuilder: (_request, context) =>
      ApiError.tooManyRequests(context.ttl / 1000, `Too many requests; the limit is ${context.max} a minute.`),
  });
  const throttle: RouteThrottle = (name, max) => {
    // Its own keys: `name` and the client, so that its counts never mix with the app's (keyed by the client alone).
    const count = app.createRateLimit({
      max,
      timeWindow: 60_000,
      keyGenerator: (request) => `${name} ${clientKey(request.ip, ipv6PrefixBits)}`,
    });
    return async (request) => {
      const counted = await count(request);
      if (counted.isAllowed || !counted.isExceeded) return;
      throw ApiError.tooManyRequests(counted.ttl / 1000, `Too many requests; the limit here is ${max} a minute.`);
    };
  };
  if (perMinute === 0) {
    // Registered for the shared playlists' throttle alone, the only route throttle.
    const counted =
      shared === undefined
        ? 'counted by each instance on its own (set REDIS_URL to count across instances)'
        : `counted across instances through Redis at ${shared.where}`;
    app.log.info(
      { rateLimit: 0, shared: shared !== undefined },
      `no rate limit on API requests (MIXTAPE_RATE_LIMIT is 0); requests to shared playlists (/s/…) are limited per client address, ${counted}`,
    );
    return throttle;
  }
  const where =
    shared === undefined
      ? 'counts per instance (set REDIS_URL to count across instances)'
      : `is shared through Redis at ${shared.where}`;
  const limit = app.rateLimit();
  app.addHook('onRequest', async function (request, reply) {
    if (request.routeOptions.config.rateLimit === false) return;
    await limit.call(this, request, reply);
  });
  app.log.info(
    { rateLimit: perMinute, shared: shared !== undefined, ...(shared === undefined ? {} : { redis: shared.where }) },
    `the rate limit of ${perMinute} requests a minute per client ${where}`,
  );
  return throttle;
}

type StoreCallback = Parameters<FastifyRateLimitStore['incr']>[1];
type RouteParams = Parameters<FastifyRateLimitStore['child']>[0];

// The plugin's own stores: Redis (a Lua script that counts and expires in one step) and memory. They are not part
// of its exported interface, hence the paths; the plugin's version is pinned.
const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  nameSpace?: string,
) => FastifyRateLimitStore;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache?: number,
) => FastifyRateLimitStore;

interface Link {
  usable(): boolean;
  failed(error: Error): void;
}

/** Counts in Redis while it is usable, and in this instance's memory while it is not or when a count fails. */
class FallbackStore implements FastifyRateLimitStore {
  readonly #shared: FastifyRateLimitStore;
  readonly #local: FastifyRateLimitStore;
  readonly #link: Link;

  constructor(shared: FastifyRateLimitStore, local: FastifyRateLimitStore, link: Link) {
    this.#shared = shared;
    this.#local = local;
    this.#link = link;
  }

  incr(key: string, callback: StoreCallback, timeWindow: number, max: number): void {
    if (!this.#link.usable()) {
      this.#local.incr(key, callback, timeWindow, max);
      return;
    }
    this.#shared.incr(
      key,
      (error, result) => {
        if (error === null) {
          callback(null, result);
          return;
        }
        this.#link.failed(error);
        this.#local.incr(key, callback, timeWindow, max);
      },
      timeWindow,
      max,
    );
  }

  child(route: RouteParams): FastifyRateLimitStore {
    // A throttle made by `createRateLimit` is no route (its info is empty); its keys carry its name instead.
    if ((route as { routeInfo?: { url?: string } }).routeInfo?.url === undefined) return this;
    return new FallbackStore(this.#shared.child(route), this.#local.child(route), this.#link);
  }
}

/** Client addresses whose counts each instance keeps in memory while Redis does not answer. */
const LOCAL_CLIENTS = 5000;

/** How often a Redis that stopped answering on an open connection is asked again. */
const PROBE_MS = 1000;

/**
 * The connection to the Redis that instances share the rate limit through. A Redis that does not answer never
 * holds a request up or fails it: commands are not queued while disconnected and time out after 500 ms; from the
 * first failure, requests are counted in this instance's memory, with one warning, until Redis answers again
 * (ioredis reconnects by itself; an open connection that stopped answering is pinged each second), with one line.
 */
class SharedRedis {
  readonly where: string;
  readonly #redis: Redis;
  readonly #log: FastifyBaseLogger;
  #state: 'connecting' | 'up' | 'down' | 'closed' = 'connecting';
  #probe: NodeJS.Timeout | undefined;

  constructor(url: string, log: FastifyBaseLogger) {
    const parsed = new URL(url);
    // Never the password.
    this.where = `${parsed.hostname}:${parsed.port || '6379'}`;
    this.#log = log;
    this.#redis = new Redis(url, {
      enableOfflineQueue: false,
      connectTimeout: 1000,
      commandTimeout: 500,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    });
    this.#redis.on('ready', () => {
      this.#answers();
    });
    this.#redis.on('error', (error: Error) => {
      this.failed(error);
    });
    this.#redis.on('close', () => {
      this.failed(new Error('the connection closed'));
    });
  }

  /** Whether counts go to Redis now. */
  get usable(): boolean {
    return this.#state === 'up' && this.#redis.status === 'ready';
  }

  /** The store class for the plugin: Redis while it answers, this instance's memory otherwise. */
  store(): FastifyRateLimitStoreCtor {
    const redis = this.#redis;
    const link: Link = {
      usable: () => this.usable,
      failed: (error) => {
        this.failed(error);
      },
    };
    return class extends FallbackStore {
      constructor() {
        // Neither `continueExceeding` nor exponential backoff is used: a window is a plain minute.
        super(
          new RedisStore(false, false, redis, 'mixtape-rate-limit-'),
          new LocalStore(false, false, LOCAL_CLIENTS),
          link,
        );
      }
    };
  }

  /** Redis failed or did not answer in time: counts stay in this instance until it answers again. */
  failed(error: Error): void {
    if (this.#state === 'down' || this.#state === 'closed') return;
    this.#state = 'down';
    this.#log.warn(
      { redis: this.where, reason: error.message },
      `Redis at ${this.where} does not answer (${error.message}): the rate limit counts per instance until it does`,
    );
    this.#probe = setInterval(() => {
      if (this.#redis.status !== 'ready') return;
      this.#redis.ping().then(
        () => {
          this.#answers();
        },
        () => undefined,
      );
    }, PROBE_MS);
    this.#probe.unref();
  }

  #answers(): void {
    if (this.#state === 'up' || this.#state === 'closed') return;
    const was = this.#state;
    this.#state = 'up';
    clearInterval(this.#probe);
    if (was === 'down') {
      this.#log.info(
        { redis: this.where },
        `Redis at ${this.where} answers again: the rate limit is shared through it again`,
      );
    }
  }

  close(): void {
    this.#state = 'closed';
    clearInterval(this.#probe);
    this.#redis.disconnect();
  }
}
