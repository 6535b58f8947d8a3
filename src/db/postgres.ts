import { createRequire } from 'node:module';
import { sql } from 'kysely';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type PgModule from 'pg';
import type { DatabaseConfig } from '../config.js';
import { isConnectionBroken } from './faults.js';

type PostgresConfig = Extract<DatabaseConfig, { dialect: 'postgres' }>;

const require = createRequire(import.meta.url);

/** The PostgreSQL driver, loaded only when PostgreSQL is used, so that a SQLite service starts sooner. */
function loadPg(): typeof PgModule {
  const pg = require('pg') as typeof PgModule;
  // int8 (counts, bigint ids) as numbers: every id the service hands out stays below 2^53.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10));
  return pg;
}

/**
 * Marks a statement of fixed text to run as a named prepared statement on PostgreSQL: written first in its SQL,
 * `sql`${prepared('playlist-access')} SELECT …``, so that each connection has the server parse and plan it once
 * instead of at every execution. Only for statements whose text is the same at every call (their values are all
 * parameters, lists as arrays): the driver refuses a name used for another text. For the statements of every
 * request: prepared, the access read let a `get` be answered 46% more often a second at 16 connections
 * (bench/results/HISTORY.md). A comment, which SQLite ignores.
 */
export const prepared = (name: string) => sql.raw(`${PREPARED_MARK}${name} */`);

const PREPARED_MARK = '/* prepared: ';

/** `text` marked as `prepared` marks it: run under `name` on PostgreSQL, once parsed and planned per connection. */
export const preparedText = (name: string, text: string): string => `${PREPARED_MARK}${name} */ ${text}`;

/** The name a statement marked with `prepared` runs under; undefined for any other statement. */
function preparedName(text: string): string | undefined {
  if (!text.startsWith(PREPARED_MARK)) return undefined;
  const end = text.indexOf(' */', PREPARED_MARK.length);
  return end === -1 ? undefined : `mixtape-${text.slice(PREPARED_MARK.length, end)}`;
}

/**
 * A connection as Kysely uses it, which remembers a fault that left it unusable (a lost socket, a read that timed
 * out while the server kept the statement) and hands it back to the pool as broken, so that the pool closes it
 * instead of lending it again. Once broken, its queries fail at once with the same error: a transaction's
 * ROLLBACK then reports the fault that ended it rather than a fault of its own.
 */
class GuardedClient implements PostgresPoolClient {
  #broken: Error | undefined;

  readonly #client: PgModule.PoolClient;

  constructor(client: PgModule.PoolClient) {
    this.#client = client;
  }

  // Kysely passes a cursor only for streamed queries, which the service does not use.
  query<R>(text: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    text: string | PostgresCursor<R>,
    parameters?: readonly unknown[],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof text !== 'string') throw new Error('streamed queries are not supported');
    if (this.#broken !== undefined) return Promise.reject(this.#broken);
    const values = (parameters ?? []) as unknown[];
    const name = preparedName(text);
    const query = name === undefined ? this.#client.query(text, values) : this.#client.query({ name, text, values });
    return (query as unknown as Promise<PostgresQueryResult<R>>).catch((error: unknown) => {
      if (isConnectionBroken(error)) this.#broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    });
  }

  release(): void {
    this.#client.release(this.#broken);
  }
}

export interface PostgresPoolOptions {
  /** A pooled connection failed outside a query (a server restart, a terminated backend, the network). */
  readonly onConnectionError: (error: Error) => void;
}

/**
 * The pool behind Kysely, with every wait bounded: connecting or waiting for a free connection
 * (`connectTimeoutMs`), each statement on the server (`statement_timeout`) and on the client (a read that gets no
 * answer, as from a server that hangs or a network that drops packets without a reset), and TCP keep-alive on
 * every socket. A failed connection never ends the process: its error is reported and the pool replaces it.
 */
export function openPostgresPool(config: PostgresConfig, options: PostgresPoolOptions): PostgresPool {
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolSize,
    connectionTimeoutMillis: config.connectTimeoutMs,
    // The server cancels a statement that runs too long; the client gives up a little later on a server that is
    // not answering at all.
    statement_timeout: config.queryTimeoutMs,
    query_timeout: config.queryTimeoutMs + 500,
    idle_in_transaction_session_timeout: config.queryTimeoutMs * 2,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // Without these listeners a connection's error would end the process: the pool's for idle connections, each
  // client's for connections lent out and waiting between two statements of a transaction.
  pool.on('error', options.onConnectionError);
  pool.on('connect', (client) => {
    client.on('error', options.onConnectionError);
  });
  return {
    async connect() {
      return new GuardedClient(await pool.connect());
    },
    end: () => pool.end(),
    options: pool.options,
  };
}
