/** Load on the service: autocannon, paced probes and floods, its event-loop figures, and a set-up's requests. */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import autocannon from 'autocannon';
import { PASSWORD } from './service.js';

/** One HTTP request as a client would send it; autocannon's hooks for one that depends on earlier answers. */
export interface BenchRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly setupRequest?: (request: BenchRequest) => BenchRequest;
  readonly onResponse?: (status: number, body: string, context: unknown, headers: Record<string, string>) => void;
}

/** Responses a second, ms over every response, and the answers by status; errors: failed connections, timeouts. */
export interface Measurement {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly responses: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly statusCodes: Readonly<Record<string, number>>;
}

/** The value below which `share` of the sorted values fall (nearest rank). */
export function percentile(sorted: ArrayLike<number>, share: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

export const round1 = (ms: number) => Math.round(ms * 10) / 10;

/** Times in ms and the answers by status (or error code); failures: answers other than 200, and none at all. */
export interface Latency {
  readonly count: number;
  readonly failures: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly statuses: Readonly<Record<string, number>>;
}

export function summarize(times: readonly number[], statuses: Readonly<Record<string, number>> = {}): Latency {
  const sorted = [...times].sort((a, b) => a - b);
  const failures = Object.entries(statuses).reduce((sum, [status, n]) => (status === '200' ? sum : sum + n), 0);
  const [p50, p99, max] = [percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.at(-1) ?? 0].map(round1);
  return { count: sorted.length, failures, p50: p50!, p99: p99!, max: max!, statuses };
}

const count = (statuses: Record<string, number>, key: string | number) => (statuses[key] = (statuses[key] ?? 0) + 1);

/**
 * Drives `url` with the requests for a while. Each connection walks the whole list from its own starting point (or,
 * `exclusive`, its own share of it, so that no two run at once: edits with `If-Match`), built into request bytes once
 * per connection; every response is timed (autocannon's histogram has whole ms and leaves out non-2xx answers).
 */
export async function measure(
  url: string,
  requests: readonly BenchRequest[],
  options: { connections: number; durationSeconds: number; exclusive?: boolean | undefined },
): Promise<Measurement> {
  const { connections, durationSeconds: duration, exclusive } = options;
  let connection = 0;
  const times: number[] = [];
  const instance = autocannon({
    ...{ url, connections, duration },
    setupClient(client) {
      const index = connection++;
      const offset = Math.floor((index * requests.length) / connections);
      const mine =
        exclusive === true
          ? requests.filter((_r, i) => i % connections === index)
          : [...requests.slice(offset), ...requests.slice(0, offset)];
      if (mine.length === 0) throw new Error(`${connections} connections need as many requests`);
      client.setRequests(mine.map((r) => ({ ...r, headers: { ...r.headers } })));
    },
  });
  instance.on('response', (_client, _status, _bytes, responseTimeMs) => times.push(responseTimeMs));
  const result = await instance;
  const sorted = Float64Array.from(times).sort();
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  const [p50, p99, responses] = [percentile(sorted, 0.5), percentile(sorted, 0.99), result.requests.total];
  const { non2xx, errors } = result;
  return { rps: responses / result.duration, p50, p99, responses, non2xx, errors, statusCodes };
}

/**
 * Sends the requests in turn at a steady `pace` a second (open loop, over up to `connections` kept-alive sockets, or a
 * new connection each with `fresh`, as a load balancer's health check opens one) and times each from when it was due,
 * so that a slow answer shows in the latency instead of slowing the load. On a thread of its own, so that the bench's
 * own work does not count as the service's delay. autocannon's `overallRate` sends each second's requests in one
 * burst at its start, which measures the burst rather than the rate.
 */
const PACED = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, requests, seconds, pace, connections, fresh } = workerData;
const agent = fresh ? false : new http.Agent({ keepAlive: true, maxSockets: connections });
let stopped = false;
parentPort.on('message', () => { stopped = true; });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const send = ({ method, path, headers, body }) => new Promise((resolve, reject) => {
  const request = http.request(url + path, { method, headers, agent }, (response) => {
    response.resume();
    response.on('end', () => resolve(response.statusCode));
  });
  request.on('error', reject);
  request.end(body);
});
(async () => {
  const times = [];
  const statuses = {};
  const pending = [];
  const start = performance.now();
  for (let i = 0; i < seconds * pace && !stopped; i++) {
    const due = start + (i * 1000) / pace;
    if (due > performance.now() + 1) await sleep(due - performance.now());
    const from = Math.min(due, performance.now());
    pending.push(send(requests[i % requests.length]).then(
      (status) => { statuses[status] = (statuses[status] ?? 0) + 1; times.push(performance.now() - from); },
      (error) => { const code = error.code || 'error'; statuses[code] = (statuses[code] ?? 0) + 1; },
    ));
  }
  await Promise.all(pending);
  if (agent) agent.destroy();
  parentPort.postMessage({ times, statuses, seconds: (performance.now() - start) / 1000 });
})();
`;

function pacedRun(url: string, requests: readonly BenchRequest[], seconds: number, pace: number, more = {}) {
  const plain = requests.map(({ method, path, headers, body }) => ({ method, path, headers, body }));
  const worker = new Worker(PACED, { eval: true, workerData: { url, requests: plain, seconds, pace, ...more } });
  type Done = { times: number[]; statuses: Record<string, number>; seconds: number };
  const done = new Promise<Done>((resolve, reject) => worker.once('message', resolve).once('error', reject));
  void done.finally(() => worker.terminate());
  return { done, stop: () => (worker.postMessage('stop'), done) };
}

/** A scenario at a steady `rate` over up to `connections` sockets, for `durationSeconds`. */
export async function measurePaced(
  url: string,
  requests: readonly BenchRequest[],
  { rate, connections, durationSeconds }: { rate: number; connections: number; durationSeconds: number },
): Promise<Measurement> {
  const { times, statuses, seconds } = await pacedRun(url, requests, durationSeconds, rate, { connections }).done;
  const sorted = Float64Array.from(times).sort();
  const failed = (code: string) => !/^\d+$/.test(code);
  const sum = (keep: (code: string) => boolean) =>
    Object.entries(statuses).reduce((n, [c, k]) => n + (keep(c) ? k : 0), 0);
  const [p50, p99, responses] = [percentile(sorted, 0.5), percentile(sorted, 0.99), times.length];
  const [non2xx, errors] = [sum((c) => !failed(c) && !c.startsWith('2')), sum(failed)];
  return { rps: times.length / seconds, p50, p99, responses, non2xx, errors, statusCodes: statuses };
}

/** Requests at a steady pace, each timed from when it was due: another user, or a health check. */
export interface Probe {
  readonly label: string;
  readonly paths: readonly string[];
  /** Requests a second. */
  readonly pace: number;
  readonly user?: string | undefined;
  /** A body makes them POSTs, of JSON unless `type` says otherwise. */
  readonly body?: string;
  readonly type?: string;
  /** Each request on a connection of its own, as a load balancer's health check opens one. */
  readonly fresh?: boolean;
}

/** Starts a probe for at most `seconds`: `done` when they have passed, `stop()` to end it sooner. */
export function paced(url: string, probe: Probe, seconds: number) {
  const headers: Record<string, string> = probe.user === undefined ? {} : auth(probe.user);
  if (probe.body !== undefined) headers['content-type'] = probe.type ?? 'application/json';
  const method = probe.body === undefined ? 'GET' : 'POST';
  const requests = probe.paths.map((path) => ({ method, path, headers, body: probe.body }) as const);
  const run = pacedRun(url, requests, seconds, probe.pace, { connections: Infinity, fresh: probe.fresh === true });
  const summary = run.done.then(({ times, statuses }) => summarize(times, statuses));
  return { done: summary, stop: () => run.stop().then(() => summary) };
}

/** `connections` loops sending `request(n)` for `seconds`, as fast as answers come: answers a second, their times. */
export async function flood(connections: number, seconds: number, request: (n: number) => Promise<Response | Answer>) {
  const [times, statuses] = [[] as number[], {} as Record<string, number>];
  let n = 0;
  const started = performance.now();
  const loop = async () => {
    while (performance.now() < started + seconds * 1000) {
      const sent = performance.now();
      try {
        const answer = await request(n++);
        if (answer instanceof Response) await answer.arrayBuffer();
        count(statuses, answer.status);
        times.push(performance.now() - sent);
      } catch (error) {
        count(statuses, (error as { cause?: { code?: string } }).cause?.code ?? 'error');
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  const latency = summarize(times, statuses);
  return { perSecond: round1(latency.count / ((performance.now() - started) / 1000)), latency };
}

/** A figure of the service's /metrics text, or undefined. */
export const metric = (text: string, name: string) => {
  const found = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
  return found === undefined ? undefined : Number(found);
};

export const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();

/**
 * The service's event-loop delay as prom-client gives it (`nodejs_eventloop_lag_{mean,p99,max}_seconds`, reset at
 * each scrape), in ms, every `intervalMs` until the function returned is called; `at` in seconds from the start. The
 * monitor samples every 10 ms: that much of each figure is its resolution.
 */
export function sampleLoop(url: string, intervalMs: number) {
  const samples: { at: number; mean: number; p99: number; max: number }[] = [];
  const state = { running: true };
  const started = performance.now();
  const loop = (async () => {
    await scrape(url).catch(() => ''); // the window starts now
    while (state.running) {
      await sleep(intervalMs);
      const text = await scrape(url).catch(() => '');
      const lag = (name: string) => 1000 * (metric(text, `nodejs_eventloop_lag_${name}_seconds`) ?? NaN);
      if (text !== '')
        samples.push({ at: (performance.now() - started) / 1000, mean: lag('mean'), p99: lag('p99'), max: lag('max') });
    }
  })();
  return async () => {
    state.running = false;
    await loop;
    return samples;
  };
}

/** Basic credentials in the standard header, as clients generated from the OpenAPI description send them. */
export const auth = (name: string, password = PASSWORD) => ({
  authorization: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`,
});

export interface Answer {
  readonly status: number;
  readonly text: string;
  readonly ms: number;
}

/** One request as `user`, timed to its answer's end; a body other than a string goes as JSON. */
export async function call(
  url: string,
  user: string,
  method: string,
  path: string,
  body?: unknown,
  type = 'application/json',
  extra: Readonly<Record<string, string>> = {},
) {
  const started = performance.now();
  const headers = { ...auth(user), ...extra, ...(body === undefined ? {} : { 'content-type': type }) };
  const data = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(`${url}${path}`, { method, headers, body: data });
  const text = await response.text();
  return { status: response.status, text, ms: performance.now() - started } as Answer;
}

export function ok(answer: Answer, what: string): Answer {
  if (answer.status !== 200) throw new Error(`${what}: status ${answer.status}: ${answer.text.slice(0, 300)}`);
  return answer;
}

/**
 * One request by `node:http`, its whole answer as sent (nothing decompressed) and when it had arrived in full (`at`,
 * performance.now()): an answer to copy, or a time to the last byte.
 */
export function send(url: string, r: Omit<BenchRequest, 'method'> & { method?: string; agent?: http.Agent | false }) {
  return new Promise<{ status: number; headers: Record<string, string>; body: Buffer; at: number }>(
    (resolve, reject) => {
      const request = http.request(
        `${url}${r.path}`,
        { method: r.method, headers: r.headers, agent: r.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const join = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : (v ?? ''));
            const headers = Object.entries(res.headers).map(([k, v]): [string, string] => [k, join(v)]);
            const body = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, headers: Object.fromEntries(headers), body, at: performance.now() });
          });
        },
      );
      request.setTimeout(60_000, () => request.destroy(new Error('no answer in 60 s')));
      request.on('error', reject).end(r.body);
    },
  );
}

export const TEN_SONGS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

/** A create of a set-up, sent again after a pause while the service sheds it (503) or holds a sign-in back (429). */
export async function create(
  url: string,
  user: string,
  body: object,
): Promise<{ id: number; songs: { id: number }[] }> {
  for (let attempt = 1; ; attempt++) {
    const answer = await call(url, user, 'POST', '/v3/playlist', body);
    if (answer.status === 200) return JSON.parse(answer.text) as { id: number; songs: { id: number }[] };
    if ((answer.status !== 503 && answer.status !== 429) || attempt === 20) ok(answer, `${user}'s create`);
    await sleep(200 * attempt);
  }
}

/** `count` calls of `work(i)`, `connections` at a time. */
export async function inTurn(count: number, connections: number, work: (i: number) => Promise<unknown>) {
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < count; i = next++) await work(i);
  };
  await Promise.all(Array.from({ length: connections }, loop));
}
