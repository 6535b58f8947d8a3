import type { FileFormat } from '../formats/formats.js';
import { ApiError } from '../http/errors.js';
import type { PlaylistFile, PlaylistFiles } from '../playlists/playlist-files.service.js';
import type { CoverFacts, PlaylistService } from '../playlists/playlist.service.js';
import type { LinkService, OpenedLink } from './links.service.js';
import { playlistSummary, renderSharePage, songLength } from './share-page.render.js';

/**
 * What a live link shows: the playlist's current version, read through the playlist service with the link as the
 * reader (the access module grants a link `read` on its one playlist, role `link`), so the answers are the API's own
 * and its cache serves them. A playlist deleted between the link's lookup and the read shows nothing (undefined), as
 * a link that never was.
 */
export function sharedPlaylists(links: LinkService, playlists: PlaylistService, files: PlaylistFiles) {
  /** The read's answer, or undefined when the playlist went meanwhile (the access module's 404 or 410). */
  async function unlessGone<T>(read: Promise<T>): Promise<T | undefined> {
    try {
      return await read;
    } catch (error) {
      if (error instanceof ApiError && (error.statusCode === 404 || error.statusCode === 410)) return undefined;
      throw error;
    }
  }

  return {
    /** What the token opens, or undefined (see LinkService.open: every token costs the same). */
    open: (token: string): Promise<OpenedLink | undefined> => links.open(token),

    /** The page's HTML; `path` is the page's own path, which the cover and the files hang under. */
    async page(link: OpenedLink, path: string): Promise<string | undefined> {
      const playlist = await unlessGone(playlists.exportable(link, link.playlistId));
      if (playlist === undefined) return undefined;
      return renderSharePage({
        name: playlist.name,
        owner: link.owner,
        path,
        songs: playlist.tracks.map((track, i) => ({
          number: i + 1,
          title: track.title,
          artist: track.artist,
          album: track.album,
          length: songLength(track.duration),
        })),
        summary: playlistSummary(playlist.tracks.map((track) => track.duration)),
      });
    },

    /** The playlist's JSON as the API gives it (`playlistwithsongs`), with `owner`: the owner's name. */
    async json(link: OpenedLink): Promise<Buffer | undefined> {
      const answer = await unlessGone(playlists.get(link, link.playlistId));
      return answer?.body;
    },

    /** The playlist as a file, as `GET /v3/playlist/{id}?format=` writes it; `origin` as there. */
    file(link: OpenedLink, format: FileFormat, origin: string): Promise<PlaylistFile | undefined> {
      return unlessGone(files.get(link, link.playlistId, format, origin));
    },

    /** What the cover is drawn from. */
    cover(link: OpenedLink): Promise<CoverFacts | undefined> {
      return unlessGone(playlists.coverFacts(link, link.playlistId));
    },
  };
}

export type SharedPlaylists = ReturnType<typeof sharedPlaylists>;
