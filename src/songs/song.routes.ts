import { Type } from '@sinclair/typebox';
import type { onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { PAGE_HEADERS, setPageHeaders } from '../http/paging.js';
import { AUTHENTICATED_ERRORS, BAD_REQUEST, SEARCHING_ERRORS, SECURITY, error, json } from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import { Id, pageQuerySchema } from '../http/schemas.js';
import type { SongService } from './song.service.js';

export const CatalogSong = Type.Object(
  {
    id: Type.Integer({ description: 'Song id, to use in `songIds`' }),
    title: Type.String(),
    artist: Type.String(),
    album: Type.String(),
    genre: Type.String(),
    duration: Type.Union([Type.Integer({ description: 'Length in seconds' }), Type.Null()]),
    added: Type.String({
      format: 'date-time',
      description:
        "When the song came into the catalog (1.8.0), which smart playlists' `added` rules compare: RFC 3339, UTC, with milliseconds",
    }),
  },
  { $id: 'catalogSong', title: 'catalogSong' },
);

const catalogSongRef = Type.Ref('catalogSong');

/** The song catalog (API 1.2.0): find the ids to put in a playlist. */
export function songRoutes(
  app: TypedApp,
  deps: { songs: SongService; limits: Limits; authenticate: onRequestHookHandler },
): void {
  const { songs, limits, authenticate } = deps;

  routeWithPluralAlias(app, {
    method: 'GET',
    url: '/v3/song',
    onRequest: authenticate,
    schema: {
      operationId: 'getsongs',
      summary: 'List or search the song catalog',
      tags: ['Catalog'],
      security: SECURITY,
      description:
        'Lists the song catalog by id, optionally filtered by words in the title, artist, album or genre, or (1.8.0) only the songs changed after a catalog version (`changedSince`: a `catalog` item of the change feed says when to ask).',
      querystring: Type.Composite([
        pageQuerySchema(
          limits,
          'Words that must all appear, case- and accent-insensitively, in the title, artist, album or genre',
        ),
        Type.Object({
          changedSince: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: Number.MAX_SAFE_INTEGER,
              description:
                'Only the songs whose title, artist, album, genre or duration changed after this catalog version (1.8.0): the `catalog` of the last feed item you took in',
            }),
          ),
        }),
      ]),
      response: {
        200: json('A page of songs.', Type.Array(catalogSongRef), PAGE_HEADERS),
        400: error('A bad parameter, or `changedSince` with `search`.'),
        ...SEARCHING_ERRORS,
      },
    },
    handler: async (request, reply) => {
      const page = await songs.list(request.caller.userId, request.query);
      setPageHeaders(request, reply, request.query, page.total, { changedSince: request.query.changedSince });
      return page.items;
    },
  });

  routeWithPluralAlias(app, {
    method: 'GET',
    url: '/v3/song/:songId',
    onRequest: authenticate,
    schema: {
      operationId: 'getsong',
      summary: 'Get a song of the catalog',
      tags: ['Catalog'],
      security: SECURITY,
      description: 'Returns one song of the catalog.',
      params: Type.Object({ songId: Id('Song id') }),
      response: {
        200: json('The song.', catalogSongRef),
        400: BAD_REQUEST,
        404: error('No song has this id.'),
        ...AUTHENTICATED_ERRORS,
      },
    },
    handler: async (request) => songs.get(request.params.songId),
  });
}
