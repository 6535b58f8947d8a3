import { Type } from '@sinclair/typebox';
import type { FastifyError, onRequestHookHandler } from 'fastify';
import type { Limits } from '../config.js';
import { IMPORT_MEDIA_TYPES, importFormat, type FileFormat } from '../formats/formats.js';
import { decode } from '../http/body-parsers.js';
import { toApiError } from '../http/error-handler.js';
import { ApiError } from '../http/errors.js';
import { AUTHENTICATED_ERRORS, SECURITY, error, json } from '../http/responses.js';
import { routeWithPluralAlias, type TypedApp } from '../http/routes.js';
import type { PlaylistImporter } from './playlist-import.service.js';
import { nameRule } from './playlist.schemas.js';

export interface PlaylistImportRouteDeps {
  readonly importer: PlaylistImporter;
  readonly limits: Limits;
  readonly authenticate: onRequestHookHandler;
}

const ALL_TYPES = Object.values(IMPORT_MEDIA_TYPES).flat();
const UNSUPPORTED =
  'Send an XSPF (application/xspf+xml, application/xml, text/xml), JSPF (application/jspf+json) or M3U8 ' +
  '(audio/mpegurl, audio/x-mpegurl, application/vnd.apple.mpegurl, or text/plain starting with #EXTM3U, with the ' +
  'credential in the security header) playlist.';

const notAPlaylistFile = () => new ApiError(415, `The body is not a playlist file. ${UNSUPPORTED}`);
// Before the file's own reader, which would say what an empty document lacks rather than that nothing came.
const emptyBody = () =>
  ApiError.badRequest('The request body is empty: send the playlist file (XSPF, JSPF or M3U8) as the body.');

const FORMAT_NOTES: Record<FileFormat, string> = {
  xspf: 'An XSPF version 1 playlist; a DOCTYPE (and so any entity declaration) is refused.',
  jspf: 'A JSPF playlist: `{"playlist": {"title": …, "track": [{"title", "creator", "album", "identifier", "location"}]}}`.',
  m3u8: 'An extended M3U playlist in UTF-8, starting with `#EXTM3U`.',
};

/**
 * `POST /v3/playlist/import`: a playlist file (XSPF, JSPF, M3U8) into a new playlist, in a scope of its own parsers
 * and body limit (`limits.importBytes`, larger than other bodies).
 */
export function playlistImportRoutes(app: TypedApp, deps: PlaylistImportRouteDeps): void {
  const { importer, limits, authenticate } = deps;
  void app.register((scope: TypedApp, _options, done) => {
    // The framework's 413 names this route's limit; everything else goes on to the app's error handler as it is.
    scope.setErrorHandler((error: FastifyError) => {
      throw error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? toApiError(error, limits.importBytes) : error;
    });
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(ALL_TYPES, { parseAs: 'buffer' }, (_request, body, parsed) => {
      if ((body as Buffer).length === 0) {
        parsed(emptyBody());
        return;
      }
      try {
        parsed(null, decode(body as Buffer));
      } catch (failure) {
        parsed(failure as Error);
      }
    });
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, parsed) => {
      parsed((body as Buffer).length === 0 ? emptyBody() : notAPlaylistFile());
    });

    routeWithPluralAlias(scope, {
      method: 'POST',
      url: '/v3/playlist/import',
      bodyLimit: limits.importBytes,
      onRequest: authenticate,
      // Before the body is read: an import that the user's share would refuse is refused without receiving its file
      // (the handler's import is still bounded, as the share may fill meanwhile). The answer closes the connection:
      // kept alive, Node would go on reading the rest of the body, up to the request timeout, only to drop it.
      preParsing: (request, reply, _payload, done) => {
        const refusal = importer.overShare(request.caller.userId);
        if (refusal === undefined) {
          done();
          return;
        }
        reply.header('connection', 'close');
        done(refusal);
      },
      schema: {
        operationId: 'importplaylist',
        summary: 'Import a playlist file',
        tags: ['Your Library'],
        security: SECURITY,
        description:
          'Creates a playlist from an XSPF, JSPF or M3U8 file (by `Content-Type`), as `POST /v3/playlist` does. ' +
          'Each track is matched to the catalog by a song URL of this service in an identifier or location ' +
          '(`…/v3/song/{id}` from any host, as the exports write them), otherwise by title and artist, compared ' +
          'case- and accent-insensitively as search does (the album, when given, picks among several; then the ' +
          'lowest song id). Tracks that match nothing are left out and listed in `unmatched`, or with ' +
          '`?unmatched=fail` the answer is 422 and nothing is created.',
        querystring: Type.Object({
          name: Type.Optional(
            Type.String({ ...nameRule(limits), description: "The playlist's name; the file's title when left out" }),
          ),
          unmatched: Type.Unsafe<'skip' | 'fail'>({
            type: 'string',
            enum: ['skip', 'fail'],
            default: 'skip',
            description: '`skip` leaves out tracks that match no song; `fail` answers 422 and creates nothing',
          }),
        }),
        body: {
          content: Object.fromEntries(
            (Object.keys(IMPORT_MEDIA_TYPES) as FileFormat[]).flatMap((format) =>
              IMPORT_MEDIA_TYPES[format].map((type) => [
                type,
                { schema: { type: 'string', description: FORMAT_NOTES[format] } },
              ]),
            ),
          ),
        },
        response: {
          200: json('The created playlist, and the tracks that matched no song.', Type.Ref('importedPlaylist'), {
            Location: { type: 'string', description: 'The path of the new playlist.' },
          }),
          400: error(
            'The file cannot be read (not well-formed, a DOCTYPE, too deep, too many tracks or lines), it has no title and no `?name=` is given, or a bad parameter.',
          ),
          409: error("The caller's playlist quota is reached."),
          413: error(`The body is larger than ${limits.importBytes} bytes.`),
          415: error(
            `The body is not a playlist file, it is compressed, or it is text/plain without the security header. ${UNSUPPORTED}`,
          ),
          422: error('With `?unmatched=fail`: some tracks match no song; `errormsg` names them.'),
          ...AUTHENTICATED_ERRORS,
        },
      },
      handler: async (request, reply) => {
        const text = request.body;
        if (text === undefined || text === '') throw emptyBody();
        const format = importFormat(request.mediaType, typeof text === 'string' ? text : '');
        if (format === undefined || typeof text !== 'string') {
          throw notAPlaylistFile();
        }
        const { name, unmatched } = request.query;
        const answer = await importer.import(request.caller.userId, format, text, { name, unmatched });
        // Through the response schema's serializer, as every JSON answer that is not kept ready in bytes.
        return reply.header('location', `/v3/playlist/${answer.playlist.id}`).send(answer);
      },
    });
    done();
  });
}
