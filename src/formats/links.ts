import type { ExportLinks } from './playlist-format.js';

/** The addresses written into a playlist file: its own URL, its songs' URLs, and their locations by the template. */
export function exportLinks(base: string, locationTemplate: string, playlistId: number): ExportLinks {
  return {
    playlist: `${base}/v3/playlist/${playlistId}`,
    song: (id) => `${base}/v3/song/${id}`,
    location: (id) => locationTemplate.replaceAll('{base}', base).replaceAll('{id}', String(id)),
  };
}

/**
 * The longest identifier or location that can name a song. The service writes far shorter ones; a longer text is
 * not looked at, so that matching costs at most this much per identifier whatever a file holds.
 */
export const SONG_LINK_MAX_LENGTH = 2048;

// White space and controls never appear in a URL or location the service writes (the template may hold none).
const NOT_IN_A_LINK = /[\s\p{Cc}]/u;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A song URL of this service from any base, its path read up to any query or fragment. */
const SONG_URL_PATH = /\/v3\/songs?\/(\d+)\/?$/;

/** Finds the song id an identifier or location names, or `undefined`. */
export type SongIdMatcher = (identifier: string) => number | undefined;

/**
 * Matches identifiers and locations to song ids: a song URL of this service from any base (`…/v3/song/22`,
 * `…/v3/songs/22`, with any query or fragment), or a location the template writes (any base in place of `{base}`).
 *
 * The cost is linear in the identifier: text longer than `SONG_LINK_MAX_LENGTH` or holding a line break or a
 * control is refused before any pattern runs, the song URL pattern has no `.*`, and the template's pattern is
 * anchored at both ends.
 */
export function songIdMatcher(locationTemplate: string): SongIdMatcher {
  const template = escapeRegExp(locationTemplate).replaceAll('\\{base\\}', '.*').replaceAll('\\{id\\}', '(\\d+)');
  const location = new RegExp(`^${template}$`);
  return (identifier) => {
    if (identifier.length > SONG_LINK_MAX_LENGTH || NOT_IN_A_LINK.test(identifier)) return undefined;
    const cut = identifier.search(/[?#]/);
    const path = cut === -1 ? identifier : identifier.slice(0, cut);
    return songId(SONG_URL_PATH.exec(path)?.[1]) ?? songId(location.exec(identifier)?.[1]);
  };
}

function songId(digits: string | undefined): number | undefined {
  if (digits === undefined) return undefined;
  const id = Number(digits);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
