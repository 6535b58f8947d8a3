import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ExportLinks, ExportPlaylist, ExportTrack } from './playlist-format.js';

/**
 * A playlist file as its format lays it out: the text before the tracks, each track's text, what goes between two
 * tracks, and the text after them. The file is these in order.
 */
export interface FileLayout {
  readonly head: string;
  track(track: ExportTrack): string;
  readonly separator: string;
  readonly tail: string;
}

/** A format's layout of one playlist with its links. */
export type PlaylistLayout = (playlist: ExportPlaylist, links: ExportLinks) => FileLayout;

/** The whole file at once. */
export function wholeFile(layout: FileLayout, tracks: readonly ExportTrack[]): Buffer {
  return Buffer.from(layout.head + tracks.map((track) => layout.track(track)).join(layout.separator) + layout.tail);
}

/**
 * Tracks written in one turn of the event loop: about 2 ms in XSPF, the costliest format, so that a file of 10 000
 * songs (bench/long-files.ts) leaves the loop free every 2 ms instead of holding it for the whole file.
 */
export const TRACKS_PER_PIECE = 500;

/** A file's bytes as pieces, in order, and their length in all. */
export interface FilePieces {
  readonly parts: Buffer[];
  readonly length: number;
}

/**
 * The file's bytes as `wholeFile` writes them, in pieces of `TRACKS_PER_PIECE` tracks each written in a turn of the
 * event loop of its own (one piece, and no wait, up to that many tracks). A piece ends with a track, so no character
 * is split between two.
 */
export async function filePieces(layout: FileLayout, tracks: readonly ExportTrack[]): Promise<FilePieces> {
  const parts: Buffer[] = [];
  let length = 0;
  let text = layout.head;
  for (let start = 0; start < tracks.length; start += TRACKS_PER_PIECE) {
    if (start > 0) {
      const part = Buffer.from(text);
      parts.push(part);
      length += part.length;
      text = layout.separator;
      await nextTurn();
    }
    const piece = tracks.slice(start, start + TRACKS_PER_PIECE).map((track) => layout.track(track));
    text += piece.join(layout.separator);
  }
  const last = Buffer.from(text + layout.tail);
  parts.push(last);
  return { parts, length: length + last.length };
}
