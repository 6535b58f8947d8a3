import type { ServerResponse } from 'node:http';
import type { FastifyReply, onRequestHookHandler } from 'fastify';
import { AUTHENTICATED_ERRORS, SECURITY, error, json } from '../http/responses.js';
import type { TypedApp } from '../http/routes.js';
import type { StreamTickets } from '../live/tickets.js';
import { feedTypes, type ChangesPage as FeedPage, type FeedTypes } from './changes.service.js';
import {
  ChangesPage,
  ChangesQuery,
  ChangesStreamHeaders,
  ChangesStreamQuery,
  StreamTicket,
} from './history.schemas.js';

/** The change feed as the routes serve it, waiting for a change and streaming: live/live-changes.ts's, from app.ts. */
export interface LiveFeed {
  changes(
    userId: number,
    since: string | undefined,
    limit: number,
    types: FeedTypes,
    waitSeconds: number | undefined,
    connection?: ServerResponse,
  ): Promise<FeedPage>;
  stream(reply: FastifyReply, userId: number, since: string | undefined, types: FeedTypes): Promise<void>;
}

/** `GET /v3/changes`: the caller's change feed (API 1.4.0). */
export function changesRoutes(
  app: TypedApp,
  deps: { feed: LiveFeed; tickets: StreamTickets; authenticate: onRequestHookHandler },
): void {
  const { feed, tickets, authenticate } = deps;
  /** The stream's caller: by a ticket (`?ticket=`, for `EventSource`) or a credential, as every route. */
  const authenticateOrTicket: onRequestHookHandler = function (request, reply, done) {
    const { ticket } = request.query as { ticket?: unknown };
    if (typeof ticket !== 'string') {
      authenticate.call(this, request, reply, done);
      return;
    }
    tickets.redeem(ticket).then((caller) => {
      request.caller = caller;
      done();
    }, done);
  };
  app.route({
    method: 'GET',
    url: '/v3/changes',
    onRequest: authenticate,
    schema: {
      operationId: 'getchanges',
      summary: 'What changed in your playlists',
      tags: ['History'],
      security: SECURITY,
      description:
        'Without `since`, every playlist the caller has now (their own and those shared with them), one entry each; with `since` (the `next` of the last answer), the changes after it, oldest first, deletes included, and `shared` or `unshared` as the caller becomes a member of a playlist, gets another role or stops being one. Call again at once while `more` is true. Tokens work on every instance and never skip an acknowledged write. With `wait` (1.8.0) an empty answer waits for the next change instead.',
      querystring: ChangesQuery,
      response: {
        200: json('A page of changes and the token to continue from.', ChangesPage),
        400: error(
          'A bad parameter (`types` naming no kind of item), or a `since` token that is malformed, altered or another user’s.',
        ),
        410: error('The token is older than the history kept: sync again from the start (call without `since`).'),
        ...AUTHENTICATED_ERRORS,
      },
    },
    handler: async (request, reply) => {
      const { since, limit, wait, types } = request.query;
      const page = await feed.changes(request.caller.userId, since, limit, feedTypes(types), wait, reply.raw);
      return reply.header('cache-control', 'no-store').send(page);
    },
  });

  app.route({
    method: 'GET',
    url: '/v3/changes/stream',
    onRequest: authenticateOrTicket,
    schema: {
      operationId: 'streamchanges',
      summary: 'Your change feed as it happens (server-sent events)',
      tags: ['History'],
      security: SECURITY,
      description:
        'The change feed as `text/event-stream` (1.8.0), never compressed, each event written as a change commits on any instance: an event `changes` for each page of the feed (`id:` its `next`, `data:` the page as `GET /v3/changes` answers it), a `: ping` comment every 15 s, and after `MIXTAPE_STREAM_MAX_SECONDS` (900) a last event `end` whose `id:` is the token to resume from. Reconnecting with `Last-Event-ID` (which overrides `since`) loses and repeats nothing. Without either, the stream starts with every playlist the caller has, as the feed does; `since=now` starts from the current point.',
      querystring: ChangesStreamQuery,
      headers: ChangesStreamHeaders,
      response: {
        200: {
          description: 'The stream: events `changes`, then `end`.',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        },
        400: error(
          'A `since` or `Last-Event-ID` that is malformed, altered or another user’s, or a `types` naming no kind of item.',
        ),
        410: error('The token is older than the history kept: sync again from the start (call without `since`).'),
        ...AUTHENTICATED_ERRORS,
      },
    },
    handler: async (request, reply) => {
      const since = request.headers['last-event-id'] ?? request.query.since;
      await feed.stream(reply, request.caller.userId, since, feedTypes(request.query.types));
      return reply;
    },
  });

  app.route({
    method: 'POST',
    url: '/v3/changes/tickets',
    onRequest: authenticate,
    // A read token may open the stream, and so ask for its ticket.
    config: { readScope: true },
    schema: {
      operationId: 'createchangesticket',
      summary: 'A ticket to open your stream of changes from a browser',
      tags: ['History'],
      security: SECURITY,
      description:
        'A single-use ticket (1.8.0), valid 60 s, that `GET /v3/changes/stream?ticket=…` takes instead of a credential: a browser’s `EventSource` cannot send one. Used, expired or unknown, it is 401.',
      response: {
        200: json('The ticket and when it expires.', StreamTicket),
        ...AUTHENTICATED_ERRORS,
      },
    },
    handler: async (request, reply) =>
      reply.header('cache-control', 'no-store').send(await tickets.issue(request.caller.userId)),
  });
}
