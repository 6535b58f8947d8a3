import { generateNKeysBetween } from 'fractional-indexing';
import type { BenchUser, CatalogSong, DatasetMeta, PlaylistBatch, SharingRows } from './dataset.js';

/** Where a data set lives: a SQLite file or a PostgreSQL database. */
export interface DatasetStore {
  /** What the service's DATABASE_URL must be to serve this data set. */
  readonly databaseUrl: string;
  /** For messages: the file, or the database. */
  readonly location: string;
  /** The metadata of a complete generation, or undefined (nothing there, or an interrupted generation). */
  readMeta(): Promise<DatasetMeta | undefined>;
  /** Throws away whatever is there and starts an empty database with the service's schema. */
  create(): Promise<DatasetWriter>;
  /**
   * Removes what an earlier run added (the create scenario's playlists), so that every run starts from the
   * generated rows; returns how many playlists it removed.
   */
  reset(meta: DatasetMeta): Promise<number>;
  /** Bytes on disk. */
  size(): Promise<number>;
}

/** Bulk writes into an empty database, in this order. */
export interface DatasetWriter {
  insertUsers(users: readonly BenchUser[], passwordHash: string, createdAt: number): Promise<void>;
  insertSongs(songs: readonly CatalogSong[]): Promise<void>;
  insertPlaylists(batch: PlaylistBatch): Promise<void>;
  /** Memberships (all viewers) and links, once the playlists are in. */
  insertSharing(rows: SharingRows): Promise<void>;
  /** Builds what was deferred and restores the normal settings; calls `onPhase` as each step begins. */
  finish(onPhase: (phase: string) => void): Promise<void>;
  /** Stores the metadata, last, so that an interrupted generation is never taken for a complete one; closes. */
  storeMeta(meta: DatasetMeta): Promise<void>;
}

/**
 * The edit scenario appends songs to the ten-song playlists: a reset cuts them back to their first ten entries, puts
 * their version back to 1 and writes their search documents again.
 */
export const EDITED_PLAYLIST_SONGS = 10;

/** The tables whose secondary indexes are dropped during the bulk load and rebuilt after it, from their own DDL. */
export const BULK_TABLES = ['playlists', 'playlist_songs', 'playlist_documents'] as const;

/** The table, next to the service's, that holds a `DatasetMeta` as JSON. */
export const META_TABLE = 'bench_dataset';

const orderKeys: string[] = [];

/**
 * The order key (`playlist_songs.ord`) of the slot at `position` of a generated playlist: the keys the service gives
 * a new playlist's slots (fractional-indexing's `a0`, `a1`, …); its entry is `position + 1`.
 */
export function orderKey(position: number): string {
  if (position >= orderKeys.length)
    orderKeys.push(...generateNKeysBetween(orderKeys.at(-1) ?? null, null, position + 1 - orderKeys.length));
  return orderKeys[position]!;
}

/** Each playlist's `next_entry` in a batch: one past its last entry. */
export function nextEntries(batch: PlaylistBatch): number[] {
  const counts = new Map<number, number>();
  for (const id of batch.entryPlaylistIds) counts.set(id, (counts.get(id) ?? 0) + 1);
  return batch.ids.map((id) => (counts.get(id) ?? 0) + 1);
}
