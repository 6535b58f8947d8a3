import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  FORBIDDEN,
  GONE,
  NOT_FOUND,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  empty,
  error,
  json,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import { SHARING } from './links.routes.js';
import type { MembersService } from './members.service.js';
import { MemberBody, MemberParams } from './members.schemas.js';

export interface MembersRouteDeps {
  readonly members: MembersService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

const ALIAS_NOTE = ' Alias of the singular path.';
const memberList = Type.Array(Type.Ref('member'));

/** A playlist's members (API 1.5.0): list them, add one or change a role, remove one; at the singular and plural paths. */
export function membersRoutes(app: TypedApp, deps: MembersRouteDeps): void {
  const { members, limits, authenticate } = deps;

  routeWithPluralAlias(
    app,
    {
      method: 'GET',
      url: '/v3/playlist/:playlistId/members',
      onRequest: authenticate,
      schema: {
        operationId: 'getplaylistmembers',
        summary: "List a playlist's members",
        tags: SHARING,
        security: SECURITY,
        description:
          'Returns who shares the playlist: its owner first, then its members by name, each with their role. For its owner and its members.',
        params: PlaylistParams,
        response: {
          200: json('The owner, then the members by name.', memberList),
          400: BAD_REQUEST,
          404: NOT_FOUND,
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const list = await members.list(request.caller.userId, request.params.playlistId);
        return reply.header('cache-control', 'no-store').send(list);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'PUT',
      url: '/v3/playlist/:playlistId/members/:user',
      onRequest: authenticate,
      schema: {
        operationId: 'putplaylistmember',
        summary: 'Share a playlist with a user, or change their role',
        tags: SHARING,
        security: SECURITY,
        description:
          'Makes the user a member of one of the caller’s playlists with this role (`viewer` reads it, `editor` also edits it), or gives a member this role. Their change feed says `shared`.',
        params: MemberParams,
        body: MemberBody,
        response: {
          200: json('The owner, then the members by name, after the change.', memberList),
          400: error(
            'A bad id or body (a role other than `viewer` and `editor`), or the user is the playlist’s owner.',
          ),
          403: FORBIDDEN,
          404: error('No such playlist for this user, or no user of that name.'),
          409: error(
            `The playlist has ${limits.membersMax} members already, or the user has ${limits.sharedWithMax} ` +
              'playlists shared with them already: the most either may have.',
          ),
          410: GONE,
          413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
          415: UNSUPPORTED_JSON_BODY,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { playlistId, user } = request.params;
        const list = await members.put(request.caller.userId, playlistId, user, request.body.role);
        return reply.header('cache-control', 'no-store').send(list);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'DELETE',
      url: '/v3/playlist/:playlistId/members/:user',
      onRequest: authenticate,
      schema: {
        operationId: 'deleteplaylistmember',
        summary: 'Stop sharing a playlist with a user',
        tags: SHARING,
        security: SECURITY,
        description:
          'Removes a member of one of the caller’s playlists; a member may also remove themselves. Their change feed says `unshared`.',
        params: MemberParams,
        response: {
          200: empty('Removed; the body is empty.'),
          400: error('A bad id, or the user is the playlist’s owner.'),
          403: FORBIDDEN,
          404: error('No such playlist for this user, no user of that name, or the user is not a member.'),
          410: GONE,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { playlistId, user } = request.params;
        await members.remove(request.caller.userId, playlistId, user);
        return reply.code(200).send();
      },
    },
    ALIAS_NOTE,
  );
}
