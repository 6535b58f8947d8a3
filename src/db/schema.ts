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
  playlist_members: PlaylistMemberTable;
  member_events: MemberEventTable;
  playlist_links: PlaylistLinkTable;
}

export interface UserTable {
  id: Generated<number>;
  name: string;
  password_hash: string;
  playlist_count: ColumnType<number, number | undefined, number>;
  created_at: number;
  /** Counted up by triggers whenever one of the user's playlist search documents changes; a bigint on PostgreSQL. */
  library_version: ColumnType<number | string, never, never>;
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

/** A user besides its owner who may read (`viewer`) or also edit (`editor`) a playlist. */
export interface PlaylistMemberTable {
  playlist_id: number;
  user_id: number;
  owner_id: number;
  role: 'viewer' | 'editor';
  added_at: ColumnType<number | string, number, number>;
}

/** What the change feed tells a user about a membership: `shared` (added, or given another role) or `unshared`. */
export interface MemberEventTable {
  seq: Generated<number | string>;
  /** PostgreSQL: the writing transaction's id (set by the database); 0 on SQLite. */
  xid: Generated<number | string>;
  user_id: number;
  playlist_id: number;
  change: 'shared' | 'unshared';
  /** The playlist's version when it happened. */
  version: ColumnType<number | string, number, number>;
  at: ColumnType<number | string, number, number>;
}

/** A link anyone may open: only the SHA-256 digest (hex) of its token is kept. */
export interface PlaylistLinkTable {
  id: Generated<number>;
  playlist_id: number;
  owner_id: number;
  digest: string;
  created_at: ColumnType<number | string, number, number>;
  expires_at: ColumnType<number | string | null, number | null, number | null>;
}

export type UserRow = Selectable<UserTable>;
export type SongRow = Selectable<SongTable>;
