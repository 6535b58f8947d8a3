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

export type UserRow = Selectable<UserTable>;
export type SongRow = Selectable<SongTable>;
