import http from 'node:http';
import autocannon from 'autocannon';

/** One HTTP request as a client would send it. */
export interface BenchRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** autocannon's hooks, for a request that depends on earlier answers (an edit's `If-Match`). */
  readonly setupRequest?: (request: BenchRequest) => BenchRequest;
  readonly onResponse?: (status: number, body: string, context: unknown, headers: Record<string, string>) => void;
}

export interface LoadOptions {
  readonly connections: number;
  readonly durationSeconds: number;
  /**
   * Each connection sends its own share of the requests (every `connections`-th) and never another's, so that no
   * two of them run at once: edits with `If-Match`, where the second of two at once answers 412.
   */
  readonly exclusive?: boolean | undefined;
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
 * starting point, so that at any moment the connections ask for different users and ids (or, `exclusive`, its own
 * share of the list). The list is built into request bytes once per connection, which keeps the load generator's
 * own cost per request low.
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
    setupClient(client) {
      const index = connection++;
      let mine: BenchRequest[];
      if (options.exclusive === true) {
        mine = requests.filter((_r, i) => i % options.connections === index);
        if (mine.length === 0) {
          throw new Error(`${options.connections} connections need at least as many requests, not ${requests.length}`);
        }
      } else {
        const offset = Math.floor((index * requests.length) / options.connections);
        mine = [...requests.slice(offset), ...requests.slice(0, offset)];
      }
      client.setRequests(mine.map((r) => ({ ...r, headers: { ...r.headers } })));
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

/**
 * Sends requests at a steady `rate` (open loop: a request leaves on schedule whether or not earlier ones have been
 * answered, over up to `connections` kept-alive sockets) and measures each from its scheduled time, so that a slow
 * answer shows in the latency instead of slowing the load down. autocannon's `overallRate` sends each second's
 * requests in one burst at the start of the second, which measures the burst rather than the rate.
 */
export async function measurePaced(
  url: string,
  requests: readonly BenchRequest[],
  options: { rate: number; connections: number; durationSeconds: number },
): Promise<Measurement> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const total = Math.round(options.rate * options.durationSeconds);
  const interval = 1000 / options.rate;
  const times: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  const start = performance.now();

  const send = (request: BenchRequest, from: number) =>
    new Promise<void>((resolve) => {
      const req = http.request(
        `${url}${request.path}`,
        { method: request.method, headers: request.headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => {
            times.push(performance.now() - from);
            const code = String(res.statusCode);
            statusCodes[code] = (statusCodes[code] ?? 0) + 1;
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(request.body);
    });

  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const scheduled = start + i * interval;
    const wait = scheduled - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    // Late, the time is counted from when the request should have left; early (by under a millisecond), from now.
    inFlight.push(send(requests[i % requests.length]!, Math.min(scheduled, performance.now())));
  }
  await Promise.all(inFlight);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  const sorted = Float64Array.from(times).sort();
  const non2xx = Object.entries(statusCodes)
    .filter(([code]) => !code.startsWith('2'))
    .reduce((sum, [, n]) => sum + n, 0);
  return {
    rps: times.length / elapsed,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    responses: times.length,
    non2xx,
    errors,
    statusCodes,
  };
}
