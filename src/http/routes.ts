import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RouteGenericInterface,
  RouteOptions,
} from 'fastify';
import type { Server } from 'node:http';
import { documentedPath } from './openapi.js';
import { ALIAS_TAG } from './responses.js';

/**
 * The app as the features' routes see it: a handler's params, query, headers and body have the types of the route's
 * TypeBox schemas. Types only: validation and serialization stay with the app's own compilers.
 */
export type TypedApp = FastifyInstance<
  Server,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A request as the handler of a route with this schema has it, for the functions it hands the request to. */
export type TypedRequest<Schema extends FastifySchema> = FastifyRequest<
  RouteGenericInterface,
  Server,
  RawRequestDefaultExpression,
  Schema,
  TypeBoxTypeProvider
>;

/**
 * The resources whose paths also answer in the plural: `/v3/playlist…` at `/v3/playlists…`, `/v3/song…` at
 * `/v3/songs…`, `/v3/folder…` at `/v3/folders…`, `/v3/token…` at `/v3/tokens…`.
 */
type Resource = 'playlist' | 'song' | 'folder' | 'token';

/** A documented route on a `/v3/playlist…`, `/v3/song…`, `/v3/folder…` or `/v3/token…` path. */
export type PlaylistPathRoute<Schema extends FastifySchema> = RouteOptions<
  Server,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  Schema,
  TypeBoxTypeProvider
> & {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: `/v3/${Resource}${string}`;
  schema: Schema & { operationId: string; summary: string; description: string };
};

/**
 * Registers a route on its `/v3/playlist…` (or `/v3/song…`, `/v3/folder…`, `/v3/token…`) path and again on the plural
 * alias `/v3/playlists…` (`/v3/songs…`, `/v3/folders…`, `/v3/tokens…`) that the getting-started examples use. The alias is documented as the same operation: `operationId` with `Plural`, the
 * alias tag (listed last, folded on /docs), a summary naming the singular operation, and the description followed by
 * `aliasNote`.
 */
export function routeWithPluralAlias<const Schema extends FastifySchema>(
  app: TypedApp,
  route: PlaylistPathRoute<Schema>,
  aliasNote = ' Alias of the singular path.',
): void {
  const { method, url, schema } = route;
  const alias: PlaylistPathRoute<Schema> = {
    ...route,
    url: url.replace(/^\/v3\/(playlist|song|folder|token)/, '/v3/$1s') as PlaylistPathRoute<Schema>['url'],
    schema: {
      ...schema,
      operationId: `${schema.operationId}Plural`,
      summary: `Alias of ${method} ${documentedPath(url)}`,
      tags: [ALIAS_TAG],
      description: `${schema.description}${aliasNote}`,
    },
  };
  app.route(route);
  app.route(alias);
}
