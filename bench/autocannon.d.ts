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
      /** Called once per connection, before it connects. */
      setupClient?: (client: Client) => void;
    }
    interface Result {
      requests: { total: number };
      /** Seconds. */
      duration: number;
      /** Connection errors, timeouts included. */
      errors: number;
      non2xx: number;
      statusCodeStats: Record<string, { count: number }>;
    }
    interface Instance extends EventEmitter, PromiseLike<Result> {
      on(event: 'response', listener: (client: Client, status: number, bytes: number, ms: number) => void): this;
    }
  }
  function autocannon(options: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
