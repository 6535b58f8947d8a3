import type { ColumnType, Generated, Selectable } from 'kysely';

/** The tables every dialect has, as Kysely sees them. */
export interface Database {
  users: UserTable;
  songs: SongTable;
  playlists: PlaylistTable;
  playlist_songs: PlaylistSongTable;
  deleted_playlists: DeletedPlaylistTable;
  playlist_documents: PlaylistDocumentTable;
  catalog_version: CatalogVersionTable;
  /** SQLite only. */
  playlist_changes: PlaylistChangeTable;
  sign_in_budgets: SignInBudgetTable;
  playlist_revisions: PlaylistRevisionTable;
  service_keys: ServiceKeyTable;
}

export interface UserTable {
  id: Generated<number>;
  name: string;
  password_hash: string;
  playlist_count: ColumnType<number, number | undefined, number>;
  created_at: number;
}

export interface SongTable {
  id: Generated<number>;
  title: string;
  artist: string;
  album: string;
  genre: string;
  duration: number | null;
  search_doc: string;
}

export interface PlaylistTable {
  id: Generated<number>;
  owner_id: number;
  name: string;
  created_at: number;
  /** 1 when created, counted up by each edit; a bigint on PostgreSQL, read with Number(). */
  version: ColumnType<number | string, number | undefined, number>;
}

export interface PlaylistSongTable {
  playlist_id: number;
  position: number;
  song_id: number;
}

export interface DeletedPlaylistTable {
  id: number;
  owner_id: number;
  deleted_at: number;
}

/** A playlist's search text (its name and its songs' titles, artists and genres, normalised), kept by owner. */
export interface PlaylistDocumentTable {
  owner_id: number;
  playlist_id: number;
  doc: string;
}

/** One row, counted up whenever a song's title, artist, album or duration changes. */
export interface CatalogVersionTable {
  id: number;
  version: number;
}

/** Deleted and edited playlist ids in the order of those changes (the last 10 000). */
export interface PlaylistChangeTable {
  seq: Generated<number>;
  playlist_id: number;
}

/**
 * A failed sign-in budget and its failures until `expires_at` (Unix ms), or an address known for a name until then
 * (failures 0); `key` is the kind and a digest of what is counted (see credentials/budget.repository.ts).
 */
export interface SignInBudgetTable {
  key: string;
  failures: number;
  /** A bigint on PostgreSQL, read with Number(). */
  expires_at: ColumnType<number | string, number, number>;
}

/**
 * One revision of a playlist (see migration 2026-11-30-playlist-history): its songs whole (`splice_at` null) or as
 * one splice of the version before. Bigints on PostgreSQL are read with Number().
 */
export interface PlaylistRevisionTable {
  seq: Generated<number | string>;
  /** PostgreSQL: the writing transaction's id (set by the database); 0 on SQLite. */
  xid: Generated<number | string>;
  playlist_id: number;
  owner_id: number;
  version: ColumnType<number | string, number, number>;
  at: ColumnType<number | string, number, number>;
  by_id: number;
  change: string;
  name: string;
  song_count: number;
  splice_at: number | null;
  splice_deleted: number | null;
  songs: string;
  chain: number;
}

/** Keys every instance shares. */
export interface ServiceKeyTable {
  name: string;
  key: string;
}

export type UserRow = Selectable<UserTable>;
export type SongRow = Selectable<SongTable>;
