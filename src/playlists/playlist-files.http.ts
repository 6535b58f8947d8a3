import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { EXPORT_FORMATS, MEDIA_TYPES, negotiateExport, type ExportFormat } from '../formats/formats.js';
import { contentDisposition } from '../formats/text.js';
import { ApiError } from '../http/errors.js';
import { error, revalidatedJson } from '../http/responses.js';
import type { TypedRequest } from '../http/routes.js';
import type { PlaylistFile, PlaylistFiles } from './playlist-files.service.js';
import type { PlaylistParams } from './playlist.schemas.js';

/** How `GET /v3/playlist/{playlist-id}` answers in another format than its JSON: the schemas and the choice. */

export const FILE_ETAG =
  "Strong validator of this playlist in this format and coding (a compressed answer's names it: `\"…-gzip\"`), made as every form's is from the playlist's version, the catalog's, the format and the caller's role: it changes when the playlist or the catalog does. Any form's current tag works in the `If-Match` of an edit.";

export const PlaylistFileQuery = Type.Object({
  format: Type.Optional(
    Type.Unsafe<ExportFormat>({
      type: 'string',
      enum: [...EXPORT_FORMATS],
      description:
        'The format, for links and browsers: wins over `Accept`, and the answer is a download (`Content-Disposition: attachment`).',
    }),
  ),
});

export const PLAYLIST_FILE_HEADERS = {
  Vary: { type: 'string' as const, description: '`security, Authorization, Accept`: the answer depends on them.' },
  'Content-Disposition': {
    type: 'string' as const,
    description:
      "With `?format=`: `attachment; filename=\"<name>.<ext>\"`, an ASCII file name from the playlist's name, and when the name has more than ASCII, `filename*=UTF-8''<name>.<ext>` with the real name (RFC 6266, RFC 8187).",
  },
};

const text = (description: string) => ({ schema: { type: 'string', description } });

const uris = (description: string) => Type.Array(Type.String(), { description });

/** What `writeJspf` writes, so that a generated client types the parsed JSPF. */
const JSPF = Type.Object(
  {
    playlist: Type.Object({
      title: Type.String({ description: "The playlist's name" }),
      identifier: Type.String({ description: "The playlist's URL" }),
      track: Type.Array(
        Type.Object({
          location: uris("The song's URL"),
          identifier: uris("The song's catalog URL"),
          title: Type.String(),
          creator: Type.String({ description: 'The artist' }),
          album: Type.Optional(Type.String()),
          duration: Type.Optional(Type.Integer({ minimum: 0, description: 'Milliseconds' })),
        }),
      ),
    }),
  },
  { description: 'JSPF, the JSON form of XSPF that ListenBrainz uses; durations in milliseconds.' },
);

/** The answer's media types besides JSON. */
export const PLAYLIST_FILES_CONTENT = {
  'application/xspf+xml': text(
    'XSPF version 1 (https://xspf.org/spec); durations in milliseconds. A text answer: openapi-fetch needs `parseAs: "text"`.',
  ),
  'application/jspf+json': { schema: JSPF },
  ...Object.fromEntries(
    MEDIA_TYPES.m3u8.map((type) => [
      type,
      text(
        'Extended M3U in UTF-8: `#EXTM3U`, `#PLAYLIST:`, `#EXTINF:<seconds>,<artist> - <title>`, `#EXTALB:`, and a location per entry. A text answer: openapi-fetch needs `parseAs: "text"`.',
      ),
    ]),
  ),
};

/** The 200 answer: the playlist as JSON (its schema) or as a file. */
export function playlistOrFile(schema: TSchema) {
  const answer = revalidatedJson(
    'The playlist, as JSON or as the file asked for.',
    schema,
    FILE_ETAG,
    PLAYLIST_FILE_HEADERS,
  );
  return { ...answer, content: { ...answer.content, ...PLAYLIST_FILES_CONTENT } };
}

export const NOT_ACCEPTABLE = error('`Accept` names none of JSON, XSPF, JSPF and M3U8.');

/** Whether the answer is the JSON that `Accept` allows without negotiating (the common and fastest case). */
export function plainJson(format: ExportFormat | undefined, accept: string | undefined): boolean {
  return format === undefined && (accept === undefined || accept === '*/*' || accept === 'application/json');
}

/**
 * The owner's playlist in the format `?format=` names (then as a download) or else `Accept` prefers, with its media
 * type; 406 when `Accept` names none. `send` answers it, or 304, with its ETag.
 */
export async function playlistFileAnswer(
  request: TypedRequest<{ params: typeof PlaylistParams; querystring: typeof PlaylistFileQuery }>,
  reply: FastifyReply,
  files: PlaylistFiles,
): Promise<{ file: PlaylistFile; type: string }> {
  const { format } = request.query;
  const negotiated = format === undefined ? negotiateExport(request.headers.accept ?? '*/*') : undefined;
  const chosen = format ?? negotiated?.format;
  if (chosen === undefined) {
    throw new ApiError(
      406,
      'Accept names no format of this playlist: application/json, application/xspf+xml, application/jspf+json or audio/mpegurl.',
    );
  }
  const origin = `${request.protocol}://${request.host}`;
  const file = await files.get(request.caller.userId, request.params.playlistId, chosen, origin);
  // A format's name is its file extension.
  if (format !== undefined) {
    reply.header('content-disposition', contentDisposition(file.name, format));
  }
  // The media type `Accept` chose (M3U8 goes by three names: the one the client asked for), else the format's first.
  return { file, type: `${negotiated?.mediaType ?? MEDIA_TYPES[chosen][0]!}; charset=utf-8` };
}
