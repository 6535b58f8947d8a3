import type { ExportLinks } from './playlist-format.js';

/** The addresses written into a playlist file: its own URL, its songs' URLs, and their locations by the template. */
export function exportLinks(base: string, locationTemplate: string, playlistId: number): ExportLinks {
  return {
    playlist: `${base}/v3/playlist/${playlistId}`,
    song: (id) => `${base}/v3/song/${id}`,
    location: (id) => locationTemplate.replaceAll('{base}', base).replaceAll('{id}', String(id)),
  };
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Patterns that find a song id in an identifier or location: a song URL of this service from any base
 * (`…/v3/song/22`, `…/v3/songs/22`), and a location the template writes (any base in place of `{base}`).
 */
export function songIdPatterns(locationTemplate: string): RegExp[] {
  const template = escapeRegExp(locationTemplate).replaceAll('\\{base\\}', '.*').replaceAll('\\{id\\}', '(\\d+)');
  return [/\/v3\/songs?\/(\d+)\/?(?:[?#].*)?$/, new RegExp(`^${template}$`)];
}

/** The song id an identifier names, if any pattern finds one. */
export function songIdIn(identifier: string, patterns: readonly RegExp[]): number | undefined {
  for (const pattern of patterns) {
    const digits = pattern.exec(identifier)?.[1];
    if (digits === undefined) continue;
    const id = Number(digits);
    if (Number.isSafeInteger(id) && id > 0) return id;
  }
  return undefined;
}
