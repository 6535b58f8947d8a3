import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler, preValidationHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  GONE,
  NOT_FOUND,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  empty,
  error,
  json,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { Id } from '../http/schemas.js';
import { expiresAtSchema } from '../http/times.js';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import type { LinkService } from './links.service.js';

export interface LinkRouteDeps {
  readonly links: LinkService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
  /** The service's public base URL, when configured; otherwise a link's URL starts with the request's origin. */
  readonly publicUrl: string | undefined;
}

export const SHARING = ['Sharing'];

const createdAt = Type.String({ description: 'When the link was made: RFC 3339, UTC, with milliseconds' });
const expiresAt = Type.Union([Type.String(), Type.Null()], {
  description: 'When the link stops opening the playlist: RFC 3339, UTC, with milliseconds; null: never',
});
const Link = Type.Object({ id: Type.Integer({ description: 'Link id' }), createdAt, expiresAt });
const NewLink = Type.Object({
  id: Type.Integer({ description: 'Link id' }),
  url: Type.String({
    description:
      "The link anyone may open, with its secret token: shown in this answer only (the service keeps the token's digest, never the token).",
  }),
  createdAt,
  expiresAt,
});
const NewLinkBody = Type.Object(
  {
    expiresAt: expiresAtSchema(
      'When the link stops opening the playlist: an RFC 3339 date and time in the future (2030-01-31T18:00:00Z)',
    ),
  },
  { additionalProperties: false, description: 'The new link; `{}` (or no body) for one that never expires' },
);
const LinkParams = Type.Object({ playlistId: Id('Playlist id'), linkId: Id('Link id') });

const OWNER_ONLY = " Only the playlist's owner manages its links.";
const ALIAS_NOTE = ' Alias of the singular path.';

/** No body is `{}`: a link without expiry is `curl -X POST`, with or without a JSON Content-Type. */
const noBodyIsEmpty: preValidationHookHandler = (request, _reply, done) => {
  request.body ??= {};
  done();
};

/** A playlist's share links (API 1.5.0): made, listed and revoked by its owner, at the singular and plural paths. */
export function linkRoutes(app: TypedApp, deps: LinkRouteDeps): void {
  const { links, limits, authenticate, publicUrl } = deps;

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/playlist/:playlistId/links',
      onRequest: authenticate,
      config: { bodyOptional: true },
      preValidation: noBodyIsEmpty,
      schema: {
        operationId: 'createlink',
        summary: 'Share a playlist by a link',
        tags: SHARING,
        security: SECURITY,
        description:
          'Makes a link that opens the playlist for anyone, without an account: a web page, its JSON, its cover and its files, always its current version. The answer shows the URL this once.' +
          OWNER_ONLY,
        params: PlaylistParams,
        body: NewLinkBody,
        response: {
          200: json('The new link, with its URL.', NewLink),
          400: BAD_REQUEST,
          404: NOT_FOUND,
          409: error(`The playlist has ${limits.linksMax} live links already (\`MIXTAPE_LINKS_MAX\`).`),
          410: GONE,
          413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
          415: UNSUPPORTED_JSON_BODY,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request) => {
        const base = publicUrl ?? `${request.protocol}://${request.host}`;
        return links.create(request.caller.userId, request.params.playlistId, request.body.expiresAt, base);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/links',
      onRequest: authenticate,
      schema: {
        operationId: 'getlinks',
        summary: "List a playlist's links",
        tags: SHARING,
        security: SECURITY,
        description:
          "The playlist's live (not expired) links in the order they were made, without their URLs." + OWNER_ONLY,
        params: PlaylistParams,
        response: {
          200: json('The live links.', Type.Array(Link)),
          400: BAD_REQUEST,
          404: NOT_FOUND,
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: (request) => links.list(request.caller.userId, request.params.playlistId),
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'DELETE',
      url: '/v3/playlist/:playlistId/links/:linkId',
      onRequest: authenticate,
      schema: {
        operationId: 'deletelink',
        summary: 'Revoke a link',
        tags: SHARING,
        security: SECURITY,
        description:
          'Revokes a link: from its next request on, on every instance, it opens the same page as a link that never was.' +
          OWNER_ONLY,
        params: LinkParams,
        response: {
          200: empty('Revoked; the body is empty.'),
          400: BAD_REQUEST,
          404: error('No such playlist for this user, or the playlist has no such live link.'),
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        await links.revoke(request.caller.userId, request.params.playlistId, request.params.linkId);
        return reply.code(200).send();
      },
    },
    ALIAS_NOTE,
  );
}
