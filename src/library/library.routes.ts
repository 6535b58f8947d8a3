import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { answerCoding, sendEncoded } from '../http/compression.js';
import { sendNotModified, sendRevalidated, setRevalidation } from '../http/conditional.js';
import { JSON_TYPE, REVALIDATE } from '../http/responses.js';
import {
  AUTHENTICATED_ERRORS,
  BAD_REQUEST,
  GONE,
  IF_NONE_MATCH_HEADER,
  SECURITY,
  UNSUPPORTED_JSON_BODY,
  empty,
  error,
  json,
  notModified,
  revalidatedJson,
} from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import {
  FolderAnswer,
  FolderParams,
  LibraryTree,
  PlaceBody,
  folderEditSchema,
  newFolderSchema,
} from './library.schemas.js';
import { FOLDER_DEPTH_MAX, libraryEtag, type LibraryService } from './library.service.js';

export interface LibraryRouteDeps {
  readonly library: LibraryService;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

export const FOLDERS = ['Folders'];
const ALIAS_NOTE = ' Alias of the singular path.';
const TREE_ETAG = 'Strong validator of the tree: it changes with its `version`.';

/** The 409 of a folder write, and the 404 and 422 of every write that places an item. */
const conflict = (limits: Limits) =>
  error(
    `The folder would be inside itself, or nest deeper than ${FOLDER_DEPTH_MAX}, or you have ${limits.foldersMax} folders already (\`errormsg\` says which).`,
  );
const BAD_ANCHOR = error('`after` or `before` names an item that is not in that folder (or the top level).');
const NO_FOLDER = error('No such folder of yours (`errormsg` names the field).');

/**
 * Each user's folders and own order of the playlists they may read (API 1.10.0): the tree, folders made, renamed,
 * moved and removed, and a playlist filed; at the singular and plural paths.
 */
export function libraryRoutes(app: TypedApp, deps: LibraryRouteDeps): void {
  const { library, limits, authenticate } = deps;
  const bodyErrors = {
    413: error(`The body is larger than ${limits.bodyBytes} bytes.`),
    415: UNSUPPORTED_JSON_BODY,
  };

  app.route({
    method: 'GET',
    url: '/v3/library',
    onRequest: authenticate,
    schema: {
      operationId: 'getlibrary',
      summary: 'Your folders and playlists, in your order',
      tags: FOLDERS,
      security: SECURITY,
      description:
        'The caller’s tree (1.10.0): their folders and the playlists they may read (their own and those shared with them, with `owner` and `role`), in their own order; a playlist not filed yet is at the end of the top level. `version` changes whenever anything it shows changes; the change feed with `types=library` says so.',
      headers: Type.Object({
        'if-none-match': Type.Optional(Type.String(IF_NONE_MATCH_HEADER['if-none-match'])),
      }),
      response: {
        200: revalidatedJson('The tree.', LibraryTree, TREE_ETAG),
        304: notModified('The tree has not changed since the ETag sent in `If-None-Match`.', TREE_ETAG),
        ...AUTHENTICATED_ERRORS,
      },
    },
    handler: async (request, reply) => {
      // The version first, one row: a copy that is current is told so from it alone, and a kept answer is served
      // only at it.
      const userId = request.caller.userId;
      const version = await library.version(userId);
      const revalidation = { etag: libraryEtag(userId, version), cacheControl: REVALIDATE };
      const notModified = sendNotModified(request, reply, revalidation);
      if (notModified !== undefined) return notModified;
      const answer = await library.answer(userId, version);
      const etag = libraryEtag(userId, answer.version);
      const coding = answerCoding(request, answer.body.length);
      if (coding === undefined) return sendRevalidated(request, reply, { body: answer.body, etag });
      // Compressed once for its version, not for each request.
      const body = await library.encoded(answer, coding);
      setRevalidation(reply, { etag, cacheControl: REVALIDATE }).type(JSON_TYPE);
      return sendEncoded(reply, body, coding);
    },
  });

  routeWithPluralAlias(
    app,
    {
      method: 'POST',
      url: '/v3/folder',
      onRequest: authenticate,
      schema: {
        operationId: 'postfolder',
        summary: 'Make a folder',
        tags: FOLDERS,
        security: SECURITY,
        description: `Makes a folder of the caller’s (1.10.0) at the top level or in \`parent\`, placed after or before an item of it (neither: at the end). Folders nest ${FOLDER_DEPTH_MAX} deep; a user has at most ${limits.foldersMax}.`,
        body: newFolderSchema(limits),
        response: {
          200: json('The new folder.', FolderAnswer),
          400: BAD_REQUEST,
          404: NO_FOLDER,
          409: conflict(limits),
          422: BAD_ANCHOR,
          ...bodyErrors,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { name, parent, after, before } = request.body;
        const made = await library.createFolder(request.caller.userId, { name, parent: parent ?? null, after, before });
        return reply.header('cache-control', 'no-store').send(made);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'PATCH',
      url: '/v3/folder/:folderId',
      onRequest: authenticate,
      schema: {
        operationId: 'patchfolder',
        summary: 'Rename or move a folder',
        tags: FOLDERS,
        security: SECURITY,
        description:
          'Renames one of the caller’s folders, or moves it (1.10.0): into `parent` (`null`: the top level; absent: where it is), after or before an item there (neither: at the end). A folder moved into itself or a folder inside it, or deeper than folders nest, is 409.',
        params: FolderParams,
        body: folderEditSchema(limits),
        response: {
          200: json('The folder after the change.', FolderAnswer),
          400: BAD_REQUEST,
          404: NO_FOLDER,
          409: conflict(limits),
          422: BAD_ANCHOR,
          ...bodyErrors,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const body = request.body;
        const edited = await library.editFolder(request.caller.userId, request.params.folderId, {
          name: body.name,
          parent: body.parent,
          after: body.after,
          before: body.before,
        });
        return reply.header('cache-control', 'no-store').send(edited);
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'DELETE',
      url: '/v3/folder/:folderId',
      onRequest: authenticate,
      schema: {
        operationId: 'deletefolder',
        summary: 'Remove a folder, keeping what it holds',
        tags: FOLDERS,
        security: SECURITY,
        description:
          'Removes one of the caller’s folders only (1.10.0): its folders and playlists take its place in its parent, in the same order.',
        params: FolderParams,
        response: {
          200: empty('Removed; the body is empty.'),
          400: BAD_REQUEST,
          404: error('No such folder of yours.'),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        await library.removeFolder(request.caller.userId, request.params.folderId);
        return reply.code(200).send();
      },
    },
    ALIAS_NOTE,
  );

  routeWithPluralAlias(
    app,
    {
      method: 'PUT',
      url: '/v3/playlist/:playlistId/place',
      onRequest: authenticate,
      schema: {
        operationId: 'putplaylistplace',
        summary: 'File a playlist in one of your folders',
        tags: FOLDERS,
        security: SECURITY,
        description:
          'Files a playlist the caller may read (their own, or one shared with them) in one of their folders, or at the top level (`"folder": null`), after or before an item there (neither: at the end) (1.10.0). Only the caller’s tree changes: another member files it in their own.',
        params: PlaylistParams,
        body: PlaceBody,
        response: {
          200: empty('Filed; the body is empty.'),
          400: BAD_REQUEST,
          404: error('No such playlist for this user, or no such folder of theirs (`errormsg` says which).'),
          410: GONE,
          422: BAD_ANCHOR,
          ...bodyErrors,
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const { folder, after, before } = request.body;
        await library.place(request.caller.userId, request.params.playlistId, folder, { after, before });
        return reply.code(200).send();
      },
    },
    ALIAS_NOTE,
  );
}
