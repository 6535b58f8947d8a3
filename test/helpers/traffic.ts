import { request as httpRequest, type Agent, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Small HTTP clients for the fault and abuse tests: every call bounded in time. */

export interface Answer {
  readonly status: number;
  readonly ms: number;
  readonly headers: Headers;
  readonly body: string;
}

/** One request; a network error or a timeout gives status 0 with the error's name in `body`. */
export async function call(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {},
): Promise<Answer> {
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: init.method ?? 'GET',
      headers: {
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(init.timeoutMs ?? 20_000),
    });
    const body = await response.text();
    return { status: response.status, ms: performance.now() - started, headers: response.headers, body };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { status: 0, ms: performance.now() - started, headers: new Headers(), body: cause ?? String(error) };
  }
}

export const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms);
  });

/** Polls `check` every 200 ms until it returns true or `timeoutMs` passes; returns whether it did. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(200);
  }
  return false;
}

/** True when the body is the service's one error body. */
export function isErrorBody(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { errormsg?: unknown; logdata?: { entry?: unknown; date?: unknown } };
    return (
      typeof parsed.errormsg === 'string' &&
      Number.isSafeInteger(parsed.logdata?.entry) &&
      Number.isSafeInteger(parsed.logdata?.date)
    );
  } catch {
    return false;
  }
}

/** What `send` answers: the status, the headers and the body as text. */
export interface Sent {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Call {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** The loopback source address to send from (`localAddress`). */
  readonly from?: string;
  /** A keep-alive agent; none: a connection of its own (HTTPS always has one, with any certificate accepted). */
  readonly agent?: Agent;
  readonly timeoutMs?: number;
}

/** One request over node:http or node:https; rejects on a network error or after the timeout (30 s). */
export function send(url: string, call: Call = {}): Promise<Sent> {
  const body = call.body === undefined ? undefined : JSON.stringify(call.body);
  const headers: Record<string, string> = {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...call.headers,
  };
  const secure = url.startsWith('https:');
  const timeoutMs = call.timeoutMs ?? 30_000;
  const options = {
    method: call.method ?? 'GET',
    headers,
    timeout: timeoutMs,
    ...(call.from === undefined ? {} : { localAddress: call.from }),
    ...(secure ? { rejectUnauthorized: false, agent: false as const } : { agent: call.agent ?? false }),
  };
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.once('error', reject);
      res.once('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text });
      });
    };
    const req = secure ? httpsRequest(url, options, onResponse) : httpRequest(url, options, onResponse);
    req.once('timeout', () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end(body);
  });
}

export interface Reply {
  readonly status: number;
  readonly ms: number;
  readonly body: string;
  readonly retryAfter: string | undefined;
}

/** A GET from a given loopback source address. */
export async function getFrom(
  url: string,
  from: string,
  headers: Record<string, string>,
  agent?: Agent,
): Promise<Reply> {
  const started = performance.now();
  const sent = await send(url, { from, headers, ...(agent === undefined ? {} : { agent }) });
  const retryAfter = sent.headers['retry-after'];
  return { status: sent.status, ms: performance.now() - started, body: sent.body, retryAfter };
}

/**
 * The status of one import of `file` (XSPF, with `?unmatched=fail`) as `security`, its answer read whole; 0 when the
 * request failed (a reset connection, a timeout of 60 s). For floods of imports.
 */
export async function importStatus(url: string, security: string, file: string): Promise<number> {
  return fetch(`${url}/v3/playlist/import?unmatched=fail`, {
    method: 'POST',
    headers: { security, 'content-type': 'application/xspf+xml' },
    body: file,
    signal: AbortSignal.timeout(60_000),
  }).then(
    async (response) => {
      await response.arrayBuffer();
      return response.status;
    },
    () => 0,
  );
}
