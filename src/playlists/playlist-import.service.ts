import { setImmediate as nextTurn } from 'node:timers/promises';
import { boundedWithShares } from '../concurrency/bounded.js';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { readCatalogVersion } from '../db/playlist-changes.js';
import type { FileFormat } from '../formats/formats.js';
import { songIdMatcher } from '../formats/links.js';
import type { ImportPlaylist, ImportTrack } from '../formats/playlist-format.js';
import { cleanText } from '../formats/text.js';
import { ApiError } from '../http/errors.js';
import { nameProblem } from '../http/name-characters.js';
import { characterCount, normaliseText } from '../domain/search-text.js';
import { readFile as readPlaylistFile, type NormalisedTrack } from '../workers/tasks.js';
import type { WorkerPool } from '../workers/worker-pool.js';
import { findSongsByIds, findSongsByNormalisedTitles, type CatalogSong } from '../songs/song.repository.js';
import type { PlaylistWithSongs, UnmatchedTrack } from './playlist.schemas.js';
import type { PlaylistService } from './playlist.service.js';

export interface ImportOptions {
  /** The playlist's name; the file's title when left out. */
  readonly name?: string | undefined;
  /** `fail`: nothing is created when a track matches nothing (422); `skip`: such tracks are left out. */
  readonly unmatched: 'skip' | 'fail';
}

export interface ImportAnswer {
  readonly playlist: PlaylistWithSongs;
  readonly unmatched: UnmatchedTrack[];
}

/** Files read on the event loop up to this size (see readFile). */
const INLINE_CHARS = 64 * 1024;
const INLINE_XSPF_CHARS = 512;

/** A user's large requests of one kind that wait apart for their turn; one more is refused with 429. */
const PER_USER_WAITING = 32;

/**
 * Tracks (or ids, or titles) handled in one turn of the event loop while a file is matched: a few milliseconds of it,
 * so that a file of 10 000 tracks never holds the loop for long (bench/long-files.ts).
 */
const TRACKS_PER_TURN = 1000;

/** `each` of every item, `TRACKS_PER_TURN` items a turn of the event loop (up to that many at once). */
async function inTurns<T, R>(items: readonly T[], each: (item: T, index: number) => R): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += TRACKS_PER_TURN) {
    if (start > 0) await nextTurn();
    const end = Math.min(items.length, start + TRACKS_PER_TURN);
    for (let i = start; i < end; i++) results.push(each(items[i]!, i));
  }
  return results;
}

/** `read` of each slice of `TRACKS_PER_TURN` keys, in turn, a turn of the event loop between two. */
async function readInTurns<K>(keys: readonly K[], read: (slice: K[]) => Promise<void>): Promise<void> {
  for (let start = 0; start < keys.length; start += TRACKS_PER_TURN) {
    if (start > 0) await nextTurn();
    await read(keys.slice(start, start + TRACKS_PER_TURN));
  }
}

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
export function playlistImporter(
  db: Db,
  limits: Limits,
  playlists: PlaylistService,
  locationTemplate: string,
  workers: WorkerPool,
) {
  const songIdOf = songIdMatcher(locationTemplate);
  // Matching by title reads the catalog: a few imports at a time, one of them (running or waiting) a user's; the rest
  // of a user's burst waits apart.
  const refuse = () => ApiError.unavailable('The service is busy with other imports; try again shortly.', 1);
  const yours = () => ApiError.tooManyRequests(1, 'Your previous imports are still being read; wait for them first.');
  const imports = boundedWithShares(
    { limit: 2, queue: 64, waitMs: 10_000, refuse },
    { limit: 1, queue: PER_USER_WAITING, refuse: yours },
  );

  /**
   * The catalog song each track matches, or undefined; `normalised` is each track's text as search compares it. A
   * long file is matched `TRACKS_PER_TURN` tracks (or ids, or titles) a turn of the event loop: the ids read from
   * its links, then the songs read by id, then by title, each slice's rows normalised as they come.
   */
  async function match(
    tracks: readonly ImportTrack[],
    normalised: readonly NormalisedTrack[],
  ): Promise<(CatalogSong | undefined)[]> {
    const named = await inTurns(tracks, (track) => track.identifiers.map(songIdOf));
    const known = new Map<number, CatalogSong>();
    const ids = [...new Set(named.flat().filter((id) => id !== undefined))];
    await readInTurns(ids, async (slice) => {
      for (const song of await findSongsByIds(db.kysely, slice)) known.set(song.id, song);
    });
    const byId = named.map((candidates) =>
      candidates.map((id) => (id === undefined ? undefined : known.get(id))).find((song) => song !== undefined),
    );

    const wanted = tracks.map((track, i) =>
      byId[i] === undefined && track.title !== undefined && track.artist !== undefined ? normalised[i] : undefined,
    );
    const titles = [...new Set(wanted.flatMap((w) => (w === undefined || w.title === '' ? [] : [w.title])))];
    const byTitleAndArtist = new Map<string, { song: CatalogSong; album: string }[]>();
    await readInTurns(titles, async (slice) => {
      for (const { album, ...song } of await findSongsByNormalisedTitles(db.kysely, db.dialect, slice)) {
        const key = `${normaliseText(song.title)}\n${normaliseText(song.artist)}`;
        const list = byTitleAndArtist.get(key) ?? [];
        list.push({ song, album: normaliseText(album) });
        byTitleAndArtist.set(key, list);
      }
    });
    // Among equals, the lowest song id, whichever slice read each.
    for (const list of byTitleAndArtist.values()) if (list.length > 1) list.sort((a, b) => a.song.id - b.song.id);
    return inTurns(byId, (found, i) => {
      const w = wanted[i];
      if (found !== undefined || w === undefined || w.title === '') return found;
      const candidates = byTitleAndArtist.get(`${w.title}\n${w.artist}`) ?? [];
      return (candidates.find((c) => w.album !== '' && c.album === w.album) ?? candidates[0])?.song;
    });
  }

  /**
   * The file read, and its tracks' text normalised, where it costs the event loop least (bench/file-reading.ts,
   * docs/benchmarks.md): an XSPF file on a worker thread, as its XML reader costs more than the round trip from
   * the smallest files on; JSPF and M3U8 on the event loop up to 64 KiB, as a round trip (the tracks cloned back)
   * costs more than reading them, and on a thread past that.
   */
  async function readFile(format: FileFormat, text: string) {
    const input = { format, text, tracks: limits.songsMax };
    const onThread = format === 'xspf' ? text.length > INLINE_XSPF_CHARS : text.length > INLINE_CHARS;
    // A turn first: a burst of one user's files waits in their share instead of running back to back, and a long
    // file's body, decoded in this turn, is not also copied to a thread in it.
    await nextTurn();
    const read = onThread ? await workers.run('readFile', input) : readPlaylistFile(input);
    if ('unreadable' in read) throw ApiError.badRequest(read.unreadable);
    return read;
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
    // The rule of a name sent as `?name=`, but for the control characters cleanText removed.
    const problem = nameProblem(title);
    if (problem !== undefined) throw ApiError.badRequest(`The file's title ${problem}: name the playlist with ?name=.`);
    return title;
  }

  return {
    /**
     * The 429 that the user's share of imports would answer now (one import in progress and as many waiting as it
     * holds), or undefined, so that the route refuses such an import before reading its body. Only a saving: the
     * share may fill between this and the import, which the share then refuses as ever.
     */
    overShare(userId: number): ApiError | undefined {
      return imports.isFull(userId) ? yours() : undefined;
    },

    /** Reads the file, matches its tracks and creates the playlist; 400 for a file that cannot be read. */
    async import(userId: number, format: FileFormat, text: string, options: ImportOptions): Promise<ImportAnswer> {
      // The file is read on a worker thread, but within the user's share: a burst of one user's files waits apart.
      const { file, name, catalogVersion, songs } = await imports(userId, async () => {
        const read = await readFile(format, text);
        const named = nameOf(read.file, options.name);
        // Read before the songs: the created playlist's answer is labelled with it.
        const catalogVersion = await readCatalogVersion(db.kysely);
        return { file: read.file, name: named, catalogVersion, songs: await match(read.file.tracks, read.normalised) };
      });
      const unmatched: UnmatchedTrack[] = [];
      songs.forEach((song, i) => {
        if (song !== undefined) return;
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
      const matched = songs.filter((song) => song !== undefined);
      // The songs were read to match them: the create takes them as they are.
      const songIds = matched.map((song) => song.id);
      const { id } = await playlists.create(userId, { name, songIds }, { songs: matched, catalogVersion });
      // A long playlist's answer is written in a turn of its own, not after the create's own work in the same one.
      if (matched.length > TRACKS_PER_TURN) await nextTurn();
      const songsAnswered = matched.map((song) => ({ id: song.id, title: song.title, artist: song.artist }));
      return { playlist: { id, name, songs: songsAnswered }, unmatched };
    },
  };
}

export type PlaylistImporter = ReturnType<typeof playlistImporter>;
