import { boundedWithShares } from '../concurrency/bounded.js';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { READERS, type FileFormat } from '../formats/formats.js';
import { songIdMatcher } from '../formats/links.js';
import { UnreadablePlaylist, type ImportPlaylist, type ImportTrack } from '../formats/playlist-format.js';
import { cleanText } from '../formats/text.js';
import { ApiError } from '../http/errors.js';
import { characterCount, normaliseText } from '../search/search-text.js';
import { findSongsByIds, findSongsByNormalisedTitles } from '../songs/song.repository.js';
import type { PlaylistAnswer } from './playlist.answers.js';
import type { UnmatchedTrack } from './playlist.schemas.js';
import type { PlaylistService } from './playlist.service.js';

export interface ImportOptions {
  /** The playlist's name; the file's title when left out. */
  readonly name?: string | undefined;
  /** `fail`: nothing is created when a track matches nothing (422); `skip`: such tracks are left out. */
  readonly unmatched: 'skip' | 'fail';
}

export interface ImportAnswer {
  readonly playlist: PlaylistAnswer & { id: number };
  readonly unmatched: UnmatchedTrack[];
}

/** A user's large requests of one kind that wait apart for their turn; one more is refused with 429. */
const PER_USER_WAITING = 32;

/** A track's text for an error message: `#3 "Artist - Title"`. */
const describe = (track: UnmatchedTrack): string => {
  const text = [track.artist, track.title].filter((t) => t !== undefined && t !== '').join(' - ');
  return `#${track.position} ${JSON.stringify(text === '' ? (track.identifier ?? '') : text)}`;
};

/**
 * Playlist files into playlists: the file is read by its format, each track matched to a catalog song, and the
 * playlist created by the same path as `POST /v3/playlist` (quota, group commit, search document).
 *
 * A track matches, first, the song an identifier or location names (a song URL of this service from any base, or
 * a location the configured template writes), if the catalog has it; otherwise the song whose title and artist are
 * the same once normalised as search normalises text (case, accents, compatibility forms, spaces), preferring one
 * whose album is the same too when the track gives one; among equals, the lowest song id.
 */
export function playlistImporter(db: Db, limits: Limits, playlists: PlaylistService, locationTemplate: string) {
  const songIdOf = songIdMatcher(locationTemplate);
  // Matching by title reads the catalog: a few imports at a time, one of them (running or waiting) a user's; the rest
  // of a user's burst waits apart.
  const refuse = () => ApiError.unavailable('The service is busy with other imports; try again shortly.', 1);
  const yours = () => ApiError.tooManyRequests(1, 'Your previous imports are still being read; wait for them first.');
  const imports = boundedWithShares(
    { limit: 2, queue: 64, waitMs: 10_000, refuse },
    { limit: 1, queue: PER_USER_WAITING, refuse: yours },
  );

  async function match(tracks: readonly ImportTrack[]): Promise<(number | undefined)[]> {
    const named = tracks.map((track) => track.identifiers.map(songIdOf));
    const known = new Set(
      (
        await findSongsByIds(
          db.kysely,
          named.flat().filter((id) => id !== undefined),
        )
      ).map((s) => s.id),
    );
    const ids = named.map((candidates) => candidates.find((id) => id !== undefined && known.has(id)));

    const wanted = tracks.map((track, i) =>
      ids[i] === undefined && track.title !== undefined && track.artist !== undefined
        ? {
            title: normaliseText(track.title),
            artist: normaliseText(track.artist),
            album: track.album === undefined ? '' : normaliseText(track.album),
          }
        : undefined,
    );
    const rows = await findSongsByNormalisedTitles(
      db.kysely,
      db.dialect,
      wanted.flatMap((w) => (w === undefined ? [] : [w.title])),
    );
    const byTitleAndArtist = new Map<string, { id: number; album: string }[]>();
    for (const row of rows) {
      const key = `${normaliseText(row.title)}\n${normaliseText(row.artist)}`;
      const list = byTitleAndArtist.get(key) ?? [];
      list.push({ id: row.id, album: normaliseText(row.album) });
      byTitleAndArtist.set(key, list);
    }
    return ids.map((id, i) => {
      const w = wanted[i];
      if (id !== undefined || w === undefined || w.title === '') return id;
      const candidates = byTitleAndArtist.get(`${w.title}\n${w.artist}`) ?? [];
      return (candidates.find((c) => w.album !== '' && c.album === w.album) ?? candidates[0])?.id;
    });
  }

  function readFile(format: FileFormat, text: string): ImportPlaylist {
    try {
      return READERS[format](text, { tracks: limits.songsMax });
    } catch (error) {
      if (error instanceof UnreadablePlaylist) throw ApiError.badRequest(error.message);
      throw error;
    }
  }

  function nameOf(file: ImportPlaylist, name: string | undefined): string {
    if (name !== undefined) return name;
    const title = cleanText(file.title ?? '').trim();
    if (title === '') throw ApiError.badRequest('The file has no title: name the playlist with ?name=.');
    if (characterCount(title) > limits.nameMaxLength) {
      throw ApiError.badRequest(
        `The file's title is longer than ${limits.nameMaxLength} characters: name the playlist with ?name=.`,
      );
    }
    return title;
  }

  return {
    /** Reads the file, matches its tracks and creates the playlist; 400 for a file that cannot be read. */
    async import(userId: number, format: FileFormat, text: string, options: ImportOptions): Promise<ImportAnswer> {
      // Reading the file takes the event loop too (milliseconds for a thousand tracks): it waits its turn as well.
      const { file, name, ids } = await imports(userId, async () => {
        const read = readFile(format, text);
        const named = nameOf(read, options.name);
        return { file: read, name: named, ids: await match(read.tracks) };
      });
      const unmatched: UnmatchedTrack[] = [];
      ids.forEach((id, i) => {
        if (id !== undefined) return;
        const track = file.tracks[i]!;
        const identifier = track.identifiers[0];
        unmatched.push({
          position: i + 1,
          ...(track.title === undefined ? {} : { title: cleanText(track.title) }),
          ...(track.artist === undefined ? {} : { artist: cleanText(track.artist) }),
          ...(track.album === undefined ? {} : { album: cleanText(track.album) }),
          ...(identifier === undefined ? {} : { identifier: cleanText(identifier) }),
        });
      });
      if (options.unmatched === 'fail' && unmatched.length > 0) {
        const shown = unmatched.slice(0, 20).map(describe).join(', ');
        const more = unmatched.length > 20 ? ` and ${unmatched.length - 20} more` : '';
        throw ApiError.unprocessable(
          `${unmatched.length === 1 ? 'This track matches' : 'These tracks match'} no song of the catalog: ${shown}${more}. Nothing was created.`,
        );
      }
      const songIds = ids.filter((id) => id !== undefined);
      const playlist = await playlists.create(userId, { name, songIds });
      return { playlist, unmatched };
    },
  };
}

export type PlaylistImporter = ReturnType<typeof playlistImporter>;
