import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { ServerConfig } from '../config.js';
import { clientKey } from './client-address.js';
import { loggedUrl } from './logged-url.js';
import { errorBody, newEntry } from './errors.js';
import { requestId } from './request-id.js';

/**
 * What happens on a connection before, or instead of, a request that Fastify routes: the timeouts, the caps on open
 * connections, and the answers to requests that Node's HTTP server refuses (the parser's errors, an `Expect` it
 * cannot meet). Each answer written here is the one error body, and its entry number is logged.
 */

// Node checks request and header timeouts only this often (30 s unless set), so a timeout can overrun by this much.
const CONNECTIONS_CHECKING_INTERVAL_MS = 1000;
// A refused connection is closed once the client has closed its side, or after this long.
const REFUSED_LINGER_MS = 1000;
const REFUSED_RETRY_AFTER_SECONDS = 5;

/** The latest request on each connection, to tell whether the request that failed has already been answered. */
type Latest = WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>;

/**
 * The Fastify options that enforce the timeouts and answer parser errors, and `install`, which puts the connection
 * caps in front of the server that Fastify created with them.
 */
export function connectionHandling(config: ServerConfig) {
  const latest: Latest = new WeakMap();
  const http: ServerOptions = {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    // An HTTP/1.1 request without Host gets the error body from the app instead of Node's empty 400.
    requireHostHeader: false,
  };
  return {
    // Fastify sets its own requestTimeout and keepAliveTimeout on the server after creating it with `http`.
    options: {
      http,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      clientErrorHandler: clientErrorHandler(latest),
    },
    install(server: Server, log: FastifyBaseLogger): void {
      limitConnections(server, config, log, latest);
      server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
        refuseExpectation(req, res, log);
      });
    },
  };
}

/** The error body and the headers of an answer that no Fastify reply writes; the connection is closed after it. */
function errorAnswer(message: string, entry: number, reqId: string, headers: Record<string, string> = {}) {
  const body = JSON.stringify(errorBody(message, entry));
  return {
    body,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'X-Request-Id': reqId,
      Connection: 'close',
      ...headers,
    },
  };
}

/** A complete HTTP/1.1 response with the error body, for a socket that no Fastify reply owns. */
function rawAnswer(
  status: number,
  message: string,
  entry: number,
  reqId: string,
  headers: Record<string, string> = {},
): string {
  const answer = errorAnswer(message, entry, reqId, headers);
  const lines = Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${lines.join('')}\r\n${answer.body}`;
}

/**
 * The `checkExpectation` event: a request whose `Expect` names anything but `100-continue`, which Node would answer
 * with a bare 417. It gets the error body, its request id and a log line. The connection is closed, as the body
 * the client may be holding back for the expectation is never read.
 */
function refuseExpectation(req: IncomingMessage, res: ServerResponse, log: FastifyBaseLogger): void {
  const entry = newEntry();
  const reqId = requestId(req);
  const expect = String(req.headers.expect).slice(0, 200);
  log.info(
    {
      reqId,
      entry,
      method: req.method,
      url: loggedUrl(req.url ?? ''),
      status: 417,
      expect,
      remoteAddress: req.socket.remoteAddress,
    },
    'expectation refused',
  );
  const message = 'The service meets no expectation but 100-continue; send the request without this Expect header.';
  const answer = errorAnswer(message, entry, reqId);
  res.writeHead(417, answer.headers).end(answer.body);
}

const PARSER_ANSWERS: Record<string, { status: number; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: 'The request took too long to arrive; send it again, faster.' },
  HPE_HEADER_OVERFLOW: { status: 431, message: 'The request headers are too large.' },
};
const MALFORMED = {
  status: 400,
  message: 'The request is not valid HTTP/1.1 (its request line, a header, a line end or a chunk is malformed).',
};

/**
 * Fastify's `clientErrorHandler`: timeouts and requests the HTTP parser refuses get 408, 431 or 400 with the error
 * body when nothing has been answered to them yet, then the connection is closed.
 */
function clientErrorHandler(latest: Latest) {
  return function (this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, message } = (error.code === undefined ? undefined : PARSER_ANSWERS[error.code]) ?? MALFORMED;
    const current = latest.get(socket);
    const answered = current !== undefined && !current.req.complete && current.res.headersSent;
    const entry = newEntry();
    const reqId = randomUUID();
    this.log.info(
      { reqId, entry, status, code: error.code, remoteAddress: socket.remoteAddress, answered },
      answered ? 'client error after the answer; closing' : 'client error',
    );
    if (socket.writable && !answered) socket.write(rawAnswer(status, message, entry, reqId));
    socket.destroy();
  };
}

/**
 * Counts open connections, in all and per client (`clientKey` of the socket address: an IPv6 client by its /64), and
 * answers one over either cap with 503 and `Retry-After` before the HTTP machinery sees it. Installed in front of
 * Node's own `connection` listener. Also notes each connection's latest request for `clientErrorHandler`.
 */
function limitConnections(server: Server, config: ServerConfig, log: FastifyBaseLogger, latest: Latest): void {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    latest.set(req.socket, { req, res });
  });

  const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  let open = 0;
  const perAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const remoteAddress = socket.remoteAddress ?? '';
    const address = clientKey(remoteAddress, config.ipv6PrefixBits);
    const fromAddress = perAddress.get(address) ?? 0;
    if (open >= config.maxConnections || fromAddress >= config.maxConnectionsPerAddress) {
      const entry = newEntry();
      const reqId = randomUUID();
      const which = open >= config.maxConnections ? 'all' : 'address';
      log.warn(
        { reqId, entry, status: 503, remoteAddress, client: address, open, fromAddress },
        'connection refused: too many open',
      );
      const retryAfter = { 'Retry-After': String(REFUSED_RETRY_AFTER_SECONDS) };
      refuse(socket, rawAnswer(503, refusal(which), entry, reqId, retryAfter));
      return;
    }
    open++;
    perAddress.set(address, fromAddress + 1);
    socket.once('close', () => {
      open--;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left === 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
    for (const listener of listeners) listener.call(server, socket);
  });
}

function refusal(which: 'all' | 'address'): string {
  return which === 'all'
    ? 'The service has too many open connections; try again shortly.'
    : 'Too many open connections from your address; close some or try again shortly.';
}

/**
 * Writes the answer and half-closes. What the client sent is read and dropped, so that closing does not reset the
 * connection before the client has read the answer.
 */
function refuse(socket: Socket, answer: string): void {
  socket.on('error', () => undefined);
  const timer = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
  timer.unref();
  socket.once('end', () => socket.destroy());
  socket.once('close', () => {
    clearTimeout(timer);
  });
  socket.end(answer);
  socket.resume();
}
