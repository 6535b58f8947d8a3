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

/** Objects and arrays nested deeper than this are refused before the body is parsed. */
const MAX_NESTING = 16;

/** The track extension ListenBrainz's JSPF uses for who added a track and when. */
export const TRACK_EXTENSION = 'https://musicbrainz.org/doc/jspf#track';

/** A track's `extension`: `added_by` and `added_at` (RFC 3339) where known; none when neither is. */
function trackExtension(t: { readonly addedBy?: string | undefined; readonly addedAt?: number | undefined }) {
  if (t.addedBy === undefined && t.addedAt === undefined) return {};
  const added = {
    ...(t.addedBy === undefined ? {} : { added_by: cleanText(t.addedBy) }),
    ...(t.addedAt === undefined ? {} : { added_at: new Date(t.addedAt).toISOString() }),
  };
  return { extension: { [TRACK_EXTENSION]: added } };
}

/**
 * The playlist as JSPF, the JSON form of XSPF (https://xspf.org/jspf) that ListenBrainz uses: `location` and
 * `identifier` of a track are arrays, durations are milliseconds, who added a track and when in ListenBrainz's track
 * extension. The text is what `JSON.stringify` writes of `{"playlist": {"title", "identifier", "track": [...]}}`, a
 * track at a time.
 */
export const jspfLayout: PlaylistLayout = (playlist, links) => ({
  head:
    `{"playlist":{"title":${JSON.stringify(cleanText(playlist.name))},` +
    `"identifier":${JSON.stringify(cleanText(links.playlist))},"track":[`,
  track: (t) =>
    JSON.stringify({
      location: [cleanText(links.location(t.id))],
      identifier: [cleanText(links.song(t.id))],
      title: cleanText(t.title),
      creator: cleanText(t.artist),
      ...(t.album === '' ? {} : { album: cleanText(t.album) }),
      ...(t.duration === null ? {} : { duration: t.duration * 1000 }),
      ...trackExtension(t),
    }),
  separator: ',',
  tail: ']}}',
});

export function writeJspf(playlist: ExportPlaylist, links: ExportLinks): Buffer {
  return wholeFile(jspfLayout(playlist, links), playlist.tracks);
}

/** Throws when the JSON text nests arrays and objects deeper than the limit (strings skipped). */
function checkNesting(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_NESTING) throw new UnreadablePlaylist(`The JSPF document nests deeper than ${MAX_NESTING}.`);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function optionalString(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new UnreadablePlaylist(`${where} must be a string.`);
  return value.trim();
}

/** A URI or a list of them (JSPF says a list; some writers use one string). */
function uris(value: unknown, where: string): string[] {
  if (value === undefined || value === null) return [];
  const list: unknown[] = Array.isArray(value) ? value : [value];
  return list.map((item) => {
    if (typeof item !== 'string') throw new UnreadablePlaylist(`${where} must be a string or a list of strings.`);
    return item.trim();
  });
}

/** The playlist a JSPF document describes: `{"playlist": {"title": …, "track": [{…}]}}`. */
export function readJspf(text: string, limits: ReadLimits): ImportPlaylist {
  checkNesting(text);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new UnreadablePlaylist('The JSPF document is not valid JSON.');
  }
  const playlist = isObject(document) ? document.playlist : undefined;
  if (!isObject(playlist)) throw new UnreadablePlaylist('The JSPF document has no "playlist" object.');
  const title = optionalString(playlist.title, '"playlist.title"');
  const list = playlist.track ?? [];
  if (!Array.isArray(list)) throw new UnreadablePlaylist('"playlist.track" must be a list of tracks.');
  if (list.length > limits.tracks) throw new UnreadablePlaylist(`The playlist has more than ${limits.tracks} tracks.`);
  const tracks = list.map((item: unknown, i): ImportTrack => {
    const where = `"playlist.track[${i}]`;
    if (!isObject(item)) throw new UnreadablePlaylist(`${where}" must be an object.`);
    return {
      identifiers: [...uris(item.location, `${where}.location"`), ...uris(item.identifier, `${where}.identifier"`)],
      title: optionalString(item.title, `${where}.title"`),
      artist: optionalString(item.creator, `${where}.creator"`),
      album: optionalString(item.album, `${where}.album"`),
    };
  });
  return title === undefined ? { tracks } : { title, tracks };
}
