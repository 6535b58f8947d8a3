import { request, type Agent } from 'node:http';

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

export interface Reply {
  readonly status: number;
  readonly ms: number;
  readonly body: string;
  readonly retryAfter: string | undefined;
}

/** A GET from a given loopback source address. */
export function getFrom(url: string, from: string, headers: Record<string, string>, agent?: Agent): Promise<Reply> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { localAddress: from, headers, agent, timeout: 30_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const retry = res.headers['retry-after'];
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body, retryAfter: retry });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
