import type { ExportConfig } from '../config.js';
import { writePieces, type ExportFormat } from '../formats/formats.js';
import { exportLinks } from '../formats/links.js';
import { playlistEtag, type PlaylistAnswer } from './playlist.render.js';
import type { Reader } from './playlist.access.js';
import type { PlaylistService } from './playlist.service.js';

/** A playlist in one format: its bytes, their strong ETag, and its name (for the download's file name). */
export interface PlaylistFile extends PlaylistAnswer {
  readonly name: string;
}

/**
 * The playlist in a format. JSON is `get`'s answer (rendered from the snapshot the cache keeps, its ETag from
 * versions); the files (XSPF, JSPF, M3U8) are written from a fresh read of the playlist and its songs' catalog data,
 * so a catalog change or a delete shows at once; each has a strong ETag made as the JSON's is (`playlistEtag`), from
 * the version of the playlist and of the catalog the read found. `requestOrigin` is the base URL the file's links start
 * with when no public URL is set. A long playlist's file is written a few hundred tracks a turn of the event loop
 * (`writePieces`), then joined once.
 */
export function playlistFiles(playlists: PlaylistService, config: ExportConfig) {
  return {
    async get(reader: Reader, id: number, format: ExportFormat, requestOrigin: string): Promise<PlaylistFile> {
      if (format === 'json') return playlists.get(reader, id);
      const playlist = await playlists.exportable(reader, id);
      const links = exportLinks(config.publicUrl ?? requestOrigin, config.locationTemplate, id);
      const { parts, length } = await writePieces(format, playlist, links);
      const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
      return { body: bytes, etag: playlistEtag(playlist.at, format, playlist.role), name: playlist.name };
    },
  };
}

export type PlaylistFiles = ReturnType<typeof playlistFiles>;
