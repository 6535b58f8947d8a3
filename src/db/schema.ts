import type { ColumnType, Generated, Selectable } from 'kysely';

/** The tables every dialect has, as Kysely sees them. */
export interface Database {
  users: UserTable;
  songs: SongTable;
  playlists: PlaylistTable;
  playlist_songs: PlaylistSongTable;
  deleted_playlists: DeletedPlaylistTable;
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

export type UserRow = Selectable<UserTable>;
export type SongRow = Selectable<SongTable>;
