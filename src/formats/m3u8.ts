import {
  UnreadablePlaylist,
  type ExportLinks,
  type ExportPlaylist,
  type ImportPlaylist,
  type ImportTrack,
  type ReadLimits,
} from './playlist-format.js';
import { wholeFile, type PlaylistLayout } from './layout.js';
import { cleanText } from './text.js';

/**
 * The playlist as extended M3U in UTF-8 (M3U8): `#EXTM3U`, `#PLAYLIST:` with its name, then per song
 * `#EXTINF:<seconds>,<artist> - <title>` (-1 when the length is unknown), `#EXTALB:` with its album when known,
 * and its location. Text has no line breaks (see cleanText), so no field can start a line of its own.
 */
export const m3u8Layout: PlaylistLayout = (playlist, links) => ({
  head: `#EXTM3U\n#PLAYLIST:${cleanText(playlist.name)}\n`,
  track(track) {
    const lines = [`#EXTINF:${track.duration ?? -1},${cleanText(track.artist)} - ${cleanText(track.title)}`];
    if (track.album !== '') lines.push(`#EXTALB:${cleanText(track.album)}`);
    lines.push(cleanText(links.location(track.id)));
    return `${lines.join('\n')}\n`;
  },
  separator: '',
  tail: '',
});

export function writeM3u8(playlist: ExportPlaylist, links: ExportLinks): Buffer {
  return wholeFile(m3u8Layout(playlist, links), playlist.tracks);
}

/** Whether the text starts as an M3U8 playlist does (a byte order mark aside). */
export function looksLikeM3u8(text: string): boolean {
  return /^\uFEFF?#EXTM3U[ \t]*(?:\r\n|\n|\r|$)/.test(text);
}

/** `#EXTINF:<duration>[ attributes],<text>`: the text after the first comma outside quoted attribute values. */
function extinfText(line: string): string {
  let quoted = false;
  for (let i = '#EXTINF:'.length; i < line.length; i++) {
    const c = line[i];
    if (c === '"') quoted = !quoted;
    else if (c === ',' && !quoted) return line.slice(i + 1).trim();
  }
  return '';
}

/**
 * The playlist an M3U8 file describes. Each entry is its location line; the `#EXTINF` (and `#EXTALB`) lines
 * before it give its artist, title and album. At most `limits.tracks` entries and 8 lines per allowed track.
 */
export function readM3u8(text: string, limits: ReadLimits): ImportPlaylist {
  if (!looksLikeM3u8(text)) throw new UnreadablePlaylist('The M3U8 playlist must start with an #EXTM3U line.');
  const maxLines = 8 * limits.tracks + 64;
  const tracks: ImportTrack[] = [];
  let title: string | undefined;
  let info: { title?: string; artist?: string; album?: string } = {};
  let lines = 0;
  for (const match of text.replace(/^\uFEFF/, '').matchAll(/[^\r\n]*(?:\r\n|\n|\r|$)/g)) {
    if (match[0] === '') break;
    if (++lines > maxLines) throw new UnreadablePlaylist(`The M3U8 playlist has more than ${maxLines} lines.`);
    const line = match[0].trim();
    if (line === '' || lines === 1) continue;
    if (line.startsWith('#')) {
      if (line.startsWith('#PLAYLIST:')) title = line.slice('#PLAYLIST:'.length).trim();
      else if (line.startsWith('#EXTALB:')) info.album = line.slice('#EXTALB:'.length).trim();
      else if (line.startsWith('#EXTINF:')) {
        const described = extinfText(line);
        const dash = described.indexOf(' - ');
        info =
          dash < 0
            ? { title: described }
            : { artist: described.slice(0, dash).trim(), title: described.slice(dash + 3).trim() };
      }
      continue;
    }
    if (tracks.length >= limits.tracks)
      throw new UnreadablePlaylist(`The playlist has more than ${limits.tracks} tracks.`);
    tracks.push({ identifiers: [line], ...info });
    info = {};
  }
  return title === undefined ? { tracks } : { title, tracks };
}
