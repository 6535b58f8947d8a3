/**
 * The baseline: a bare `node:http` server that answers every request with one canned answer from memory, captured
 * from the real service. What the service does beyond this (routing, authentication, validation, the database,
 * serialisation, logging) is what the ratio measures. Run as a child process; the parent sets the answer over IPC.
 */
import { createServer } from 'node:http';

/** An answer as the parent sends it: the body in base64, since IPC messages are JSON. */
export interface CannedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly bodyBase64: string;
}

export type BaselineMessage = { readonly type: 'listening'; readonly port: number } | { readonly type: 'answering' };

let answer = { status: 200, headers: {} as Readonly<Record<string, string>>, body: Buffer.alloc(0) };

const server = createServer((request, response) => {
  // The body is read in full before answering, as the service does.
  request.resume();
  request.once('end', () => {
    response.writeHead(answer.status, answer.headers);
    response.end(answer.body);
  });
});

const tell = (message: BaselineMessage) => process.send?.(message);

process.on('message', (message: CannedAnswer) => {
  answer = { status: message.status, headers: message.headers, body: Buffer.from(message.bodyBase64, 'base64') };
  tell({ type: 'answering' });
});
// The parent is gone: nothing left to serve.
process.once('disconnect', () => {
  server.close();
  server.closeAllConnections();
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address !== null && typeof address === 'object') tell({ type: 'listening', port: address.port });
});
