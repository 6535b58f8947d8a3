/**
 * The work that runs on the worker threads (see worker-pool.ts): pure functions of their input, whose cost grows with
 * a request's body or a playlist's length. This module is what each thread loads; the event loop never runs it.
 */
import { READERS, type FileFormat } from '../formats/formats.js';
import { UnreadablePlaylist, type ImportPlaylist } from '../formats/playlist-format.js';
import { diffPlaylists, type Operation, type PlaylistVersion } from '../history/diff.js';
import { diffEntries, type EntriesVersion, type EntryDiffOp } from '../history/entries-diff.js';
import { normaliseText } from '../domain/search-text.js';

export interface ReadFileInput {
  readonly format: FileFormat;
  readonly text: string;
  /** Tracks past which the file is refused. */
  readonly tracks: number;
}

/** A track's title, artist and album as search compares them (empty when absent). */
export interface NormalisedTrack {
  readonly title: string;
  readonly artist: string;
  readonly album: string;
}

export type ReadFileOutput =
  { readonly file: ImportPlaylist; readonly normalised: readonly NormalisedTrack[] } | { readonly unreadable: string };

/** A playlist file read by its format, with each track's text normalised for matching; why, when it is unreadable. */
export function readFile({ format, text, tracks }: ReadFileInput): ReadFileOutput {
  let file: ImportPlaylist;
  try {
    file = READERS[format](text, { tracks });
  } catch (error) {
    if (error instanceof UnreadablePlaylist) return { unreadable: error.message };
    throw error;
  }
  const normalised = file.tracks.map((track) => ({
    title: track.title === undefined ? '' : normaliseText(track.title),
    artist: track.artist === undefined ? '' : normaliseText(track.artist),
    album: track.album === undefined ? '' : normaliseText(track.album),
  }));
  return { file, normalised };
}

export interface DiffInput {
  readonly from: PlaylistVersion;
  readonly to: PlaylistVersion;
}

/** The JSON Patch from one version to another (history/diff.ts). */
export function diff({ from, to }: DiffInput): Operation[] {
  return diffPlaylists(from, to);
}

export interface EntriesDiffInput {
  readonly from: EntriesVersion;
  readonly to: EntriesVersion;
}

/** The merged edit's ops from one version's entries to another's (history/entries-diff.ts). */
export function entriesDiff({ from, to }: EntriesDiffInput): EntryDiffOp[] {
  return diffEntries(from, to);
}

/** Every task by name, as the pool runs them. */
export const TASKS = { readFile, diff, entriesDiff } as const;
export type TaskName = keyof typeof TASKS;
