/** The part of autocannon 9's programmatic API that the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }

    /** One connection. */
    interface Client extends EventEmitter {
      setRequests(requests: Request[]): void;
    }

    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Requests per second over all connections; each connection sends its share, then waits for the next second. */
      overallRate?: number;
      /** Seconds before a request counts as timed out. */
      timeout?: number;
      requests?: Request[];
      /** Called once per connection, before it connects. */
      setupClient?: (client: Client) => void;
    }

    interface Stats {
      average: number;
      total: number;
      p50: number;
      p99: number;
    }

    interface Result {
      requests: Stats;
      latency: Stats;
      /** Seconds. */
      duration: number;
      /** Connection errors, timeouts included. */
      errors: number;
      timeouts: number;
      non2xx: number;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      on(
        event: 'response',
        listener: (client: Client, statusCode: number, bytes: number, responseTimeMs: number) => void,
      ): this;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
