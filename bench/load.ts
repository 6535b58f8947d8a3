import autocannon from 'autocannon';

/** One HTTP request as a client would send it. */
export interface BenchRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

export interface LoadOptions {
  readonly connections: number;
  readonly durationSeconds: number;
  /** Requests per second over all connections; unset means as fast as the connections go. */
  readonly overallRate?: number;
}

export interface Measurement {
  /** Responses per second over the run. */
  readonly rps: number;
  /** Latency percentiles in milliseconds, over every response. */
  readonly p50: number;
  readonly p99: number;
  readonly responses: number;
  readonly non2xx: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  /** Responses by status code, to tell what went wrong when `non2xx` is not 0. */
  readonly statusCodes: Readonly<Record<string, number>>;
}

/** The response time below which `share` of the sorted times fall (nearest rank). */
function percentile(sorted: Float64Array, share: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

/**
 * Drives `url` with the requests for a while and measures it. Each connection walks the whole list from its own
 * starting point, so that at any moment the connections ask for different users and ids. The list is built into
 * request bytes once per connection, which keeps the load generator's own cost per request low.
 */
export async function measure(
  url: string,
  requests: readonly BenchRequest[],
  options: LoadOptions,
): Promise<Measurement> {
  let connection = 0;
  // autocannon's own histogram has whole milliseconds and leaves out non-2xx answers; these are exact and complete.
  const times: number[] = [];
  const instance = autocannon({
    url,
    connections: options.connections,
    duration: options.durationSeconds,
    ...(options.overallRate === undefined ? {} : { overallRate: options.overallRate }),
    setupClient(client) {
      const offset = Math.floor((connection++ * requests.length) / options.connections);
      const rotated = [...requests.slice(offset), ...requests.slice(0, offset)];
      client.setRequests(rotated.map((r) => ({ ...r, headers: { ...r.headers } })));
    },
  });
  instance.on('response', (_client, _status, _bytes, responseTimeMs) => {
    times.push(responseTimeMs);
  });
  const result = await instance;
  const sorted = Float64Array.from(times).sort();
  return {
    rps: result.requests.total / result.duration,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    responses: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
  };
}
