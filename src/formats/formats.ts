import Negotiator from 'negotiator';
import { jspfLayout, readJspf, writeJspf } from './jspf.js';
import { filePieces, type FilePieces, type PlaylistLayout } from './layout.js';
import { looksLikeM3u8, m3u8Layout, readM3u8, writeM3u8 } from './m3u8.js';
import type { ExportLinks, ExportPlaylist, PlaylistReader, PlaylistWriter } from './playlist-format.js';
import { readXspf, writeXspf, xspfLayout } from './xspf.js';

/** The one place that picks a playlist format by name or media type. */

export const EXPORT_FORMATS = ['json', 'xspf', 'jspf', 'm3u8'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type FileFormat = Exclude<ExportFormat, 'json'>;

export const XSPF_TYPE = 'application/xspf+xml';
export const JSPF_TYPE = 'application/jspf+json';
export const M3U8_TYPES = ['audio/mpegurl', 'audio/x-mpegurl', 'application/vnd.apple.mpegurl'] as const;

/** Each format's media types, the first the one answered with when only the format is named. */
export const MEDIA_TYPES: Readonly<Record<ExportFormat, readonly string[]>> = {
  json: ['application/json'],
  xspf: [XSPF_TYPE],
  jspf: [JSPF_TYPE],
  m3u8: M3U8_TYPES,
};

export const WRITERS: Readonly<Record<FileFormat, PlaylistWriter>> = {
  xspf: writeXspf,
  jspf: writeJspf,
  m3u8: writeM3u8,
};

const LAYOUTS: Readonly<Record<FileFormat, PlaylistLayout>> = {
  xspf: xspfLayout,
  jspf: jspfLayout,
  m3u8: m3u8Layout,
};

/**
 * The bytes `WRITERS` writes, in pieces written a few hundred tracks a turn of the event loop (see filePieces): how a
 * long playlist is exported without holding the loop.
 */
export function writePieces(format: FileFormat, playlist: ExportPlaylist, links: ExportLinks): Promise<FilePieces> {
  return filePieces(LAYOUTS[format](playlist, links), playlist.tracks);
}

export const READERS: Readonly<Record<FileFormat, PlaylistReader>> = {
  xspf: readXspf,
  jspf: readJspf,
  m3u8: readM3u8,
};

/** Every media type the export answers with, JSON first: it wins whenever `Accept` ranks several alike. */
const OFFERED = EXPORT_FORMATS.flatMap((format) => MEDIA_TYPES[format]);
const FORMAT_OF = new Map(EXPORT_FORMATS.flatMap((format) => MEDIA_TYPES[format].map((type) => [type, format])));

/** The format and media type `Accept` prefers; undefined when it accepts none of them (406). */
export function negotiateExport(accept: string): { format: ExportFormat; mediaType: string } | undefined {
  const mediaType = new Negotiator({ headers: { accept } }).mediaType(OFFERED);
  const format = mediaType === undefined ? undefined : FORMAT_OF.get(mediaType);
  return format === undefined ? undefined : { format, mediaType: mediaType! };
}

/** The media types an import reads, by format (`text/plain` is M3U8 only when it starts with `#EXTM3U`). */
export const IMPORT_MEDIA_TYPES: Readonly<Record<FileFormat, readonly string[]>> = {
  xspf: [XSPF_TYPE, 'application/xml', 'text/xml'],
  jspf: [JSPF_TYPE],
  m3u8: [...M3U8_TYPES, 'application/x-mpegurl', 'text/plain'],
};

const IMPORT_FORMAT_OF = new Map(
  (Object.keys(IMPORT_MEDIA_TYPES) as FileFormat[]).flatMap((format) =>
    IMPORT_MEDIA_TYPES[format].map((type) => [type, format] as const),
  ),
);

/** The format of an import body by its media type (`request.mediaType`) and, for `text/plain`, its first line. */
export function importFormat(type: string | undefined, text: string): FileFormat | undefined {
  if (type === undefined) return undefined;
  const format = IMPORT_FORMAT_OF.get(type);
  if (type === 'text/plain' && !looksLikeM3u8(text)) return undefined;
  return format;
}
