/** What every playlist format writes and reads. */

/** A song of a playlist as the formats write it: what the catalog knows of it. */
export interface ExportTrack {
  readonly id: number;
  readonly title: string;
  readonly artist: string;
  readonly album: string;
  /** Seconds, when the catalog knows it. */
  readonly duration: number | null;
  /** The name of who added the entry, when it is known and may be shown (JSPF writes it). */
  readonly addedBy?: string | undefined;
  /** When the entry was added (epoch ms), when it is known (JSPF writes it). */
  readonly addedAt?: number | undefined;
}

/** A playlist as the formats write it: its songs in order, repeats kept. */
export interface ExportPlaylist {
  readonly id: number;
  readonly name: string;
  readonly tracks: readonly ExportTrack[];
}

/** The addresses a written playlist carries. */
export interface ExportLinks {
  /** The playlist's own URL on this service. */
  readonly playlist: string;
  /** The song's URL on this service: the identifier that an import resolves. */
  song(id: number): string;
  /** Where a player finds the song: the configured location template. */
  location(id: number): string;
}

/** A track read from a file: whatever it says about the song, to be matched to the catalog. */
export interface ImportTrack {
  /** Identifiers and locations (URLs) that may name a catalog song. */
  readonly identifiers: readonly string[];
  readonly title?: string;
  readonly artist?: string;
  readonly album?: string;
}

/** A playlist read from a file. */
export interface ImportPlaylist {
  readonly title?: string;
  readonly tracks: readonly ImportTrack[];
}

/** How much a reader takes before it gives up. */
export interface ReadLimits {
  /** Tracks in the file. */
  readonly tracks: number;
}

/** A file that is not a playlist this format can read; the message says why, for the client. */
export class UnreadablePlaylist extends Error {
  override name = 'UnreadablePlaylist';
}

export type PlaylistWriter = (playlist: ExportPlaylist, links: ExportLinks) => Buffer;
export type PlaylistReader = (text: string, limits: ReadLimits) => ImportPlaylist;
