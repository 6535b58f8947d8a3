import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';

/** What came back on a raw connection, and when it closed. */
export interface RawExchange {
  /** Everything the server wrote, as latin1 text. */
  readonly text: string;
  /** The status of the first response, or 0 when none came. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Milliseconds from connecting to the close, or undefined when it was still open at the deadline. */
  readonly closedAfterMs: number | undefined;
  /** The socket error, if any (for example ECONNRESET). */
  readonly error: string | undefined;
}

/** Splits the first response of a raw exchange into its status, headers (lower-case names) and body. */
export function parseResponse(text: string): Pick<RawExchange, 'status' | 'headers' | 'body'> {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: '' };
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? NaN);
  const rest = text.slice(end + 4);
  return {
    status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0),
    headers,
    body: Number.isInteger(length) ? rest.slice(0, length) : rest,
  };
}

export interface RawOptions {
  readonly url: string;
  /** The bytes to send first. */
  readonly send: string | Buffer;
  /** The local address to connect from (127.0.0.x plays distinct clients). */
  readonly localAddress?: string;
  /** Give up waiting for the close after this long; the socket is destroyed then. */
  readonly deadlineMs: number;
  /** Called with the socket once connected, e.g. to keep writing. */
  readonly onConnect?: (socket: Socket) => void;
}

/** Opens a TCP connection, sends raw bytes, and collects what comes back until the server closes or the deadline. */
export function rawExchange(options: RawOptions): Promise<RawExchange> {
  const { hostname, port } = new URL(options.url);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect({ host: hostname, port: Number(port), localAddress: options.localAddress });
    let text = '';
    let error: string | undefined;
    let closedAfterMs: number | undefined;
    const finish = () => {
      clearTimeout(deadline);
      resolve({ text, ...parseResponse(text), closedAfterMs, error });
    };
    const deadline = setTimeout(() => {
      socket.removeAllListeners('close');
      socket.destroy();
      finish();
    }, options.deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => {
      closedAfterMs = Date.now() - started;
      finish();
    });
    socket.on('connect', () => {
      socket.write(options.send);
      options.onConnect?.(socket);
    });
  });
}

/** One GET on a new connection from `localAddress`: its status, body and how long it took. */
export function timedGet(
  url: string,
  headers: Record<string, string>,
  localAddress: string,
  timeoutMs = 10_000,
): Promise<{ status: number; body: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { headers, localAddress, agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
