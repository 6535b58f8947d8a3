import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { INSUFFICIENT_SCOPE } from '../http/auth.js';
import { ApiError } from '../http/errors.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  HEADERS,
  PASSWORD_SECURITY,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  empty,
  error,
  json,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { AppToken, NewToken, NewTokenBody, TokenParams } from './tokens.schemas.js';
import { TOKENS_MAX, type TokenService } from './tokens.service.js';

export interface TokenRouteDeps {
  readonly tokens: TokenService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

export const TOKENS = ['App tokens'];
const ALIAS_NOTE = ' Alias of the singular path.';

/**
 * The caller's app tokens (API 1.11.0): made and listed with the password only (`passwordOnly`: the hook refuses a
 * token), revoked with the password or by the token itself, of either scope (`readScope`); at the singular and plural
 * paths.
 */
export function tokenRoutes(app: TypedApp, deps: TokenRouteDeps): void {
  const { tokens, limits, authenticate } = deps;

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/token',
      onRequest: authenticate,
      config: { passwordOnly: true },
      schema: {
        operationId: 'posttoken',
        summary: 'Make an app token',
        tags: TOKENS,
        security: PASSWORD_SECURITY,
        description: `Makes a token for one app (1.11.0), with the password: the app sends it as \`Authorization: Bearer …\` instead of the password, and acts as the user within its \`scope\`. The answer shows the token this once. It expires at \`expiresAt\`, at most a year ahead (the default); a user has at most ${TOKENS_MAX} live tokens.`,
        body: NewTokenBody,
        response: {
          200: json('The new token, with its secret.', NewToken),
          400: BAD_REQUEST,
          409: error(`You have ${TOKENS_MAX} live tokens already: revoke one first.`),
          413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
          415: UNSUPPORTED_JSON_BODY,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { name, scope, expiresAt } = request.body;
        const made = await tokens.create(request.caller.userId, name, scope, expiresAt);
        return reply.header('cache-control', 'no-store').send(made);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/token',
      onRequest: authenticate,
      config: { passwordOnly: true },
      schema: {
        operationId: 'gettokens',
        summary: 'List your app tokens',
        tags: TOKENS,
        security: PASSWORD_SECURITY,
        description:
          'The caller’s live (not expired, not revoked) tokens, oldest first, without their secret, each with when it was last used (to the minute); with the password only (1.11.0).',
        response: {
          200: json('The live tokens.', Type.Array(AppToken)),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) =>
        reply.header('cache-control', 'no-store').send(await tokens.list(request.caller.userId)),
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'DELETE',
      url: '/v3/token/:tokenId',
      onRequest: authenticate,
      config: { readScope: true },
      schema: {
        operationId: 'deletetoken',
        summary: 'Revoke an app token',
        tags: TOKENS,
        security: SECURITY,
        description:
          'Revokes a token (1.11.0): from its next request on, on every instance, it is refused (401). With the password any of the caller’s tokens, with a token (of either scope) that token only.',
        params: TokenParams,
        response: {
          200: empty('Revoked; the body is empty.'),
          400: BAD_REQUEST,
          403: error(
            'A token revoking another token: that takes the password (`WWW-Authenticate: Bearer error="insufficient_scope"`).',
            HEADERS.wwwAuthenticate,
          ),
          404: error('You have no live token with this id.'),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { caller } = request;
        const { tokenId } = request.params;
        if (caller.via === 'token' && caller.tokenId !== tokenId) {
          throw new ApiError(
            403,
            'A token may revoke only itself; revoking another token takes the password.',
            INSUFFICIENT_SCOPE,
          );
        }
        await tokens.revoke(caller.userId, tokenId);
        return reply.code(200).send();
      },
    },
    ALIAS_NOTE,
  );
}
