import type { ColumnType, Generated, Selectable } from 'kysely';
import type { ChangeKind, MemberChange } from '../domain/change-kinds.js';
import type { MemberRole } from '../domain/roles.js';

/** The tables every dialect has, as Kysely sees them. */
export interface Database {
  users: UserTable;
  songs: SongTable;
  playlists: PlaylistTable;
  playlist_songs: PlaylistSongTable;
  playlist_entry_origins: PlaylistEntryOriginTable;
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
  edit_keys: EditKeyTable;
  smart_sources: SmartSourceTable;
  stream_tickets: StreamTicketTable;
  catalog_changes: CatalogChangeTable;
  folders: FolderTable;
  library_placements: LibraryPlacementTable;
  library_changes: LibraryChangeTable;
  app_tokens: AppTokenTable;
}

/**
 * A user's app token (migration 2026-12-16-app-tokens), by the SHA-256 of the token: its name, scope, and when it was
 * made, expires and was last used (Unix ms). Revoking it deletes the row.
 */
export interface AppTokenTable {
  /** A bigint on PostgreSQL, read with Number(). */
  id: Generated<number | string>;
  user_id: number;
  name: string;
  scope: 'read' | 'write';
  digest: string;
  created_at: ColumnType<number | string, number, never>;
  expires_at: ColumnType<number | string, number, never>;
  last_used_at: ColumnType<number | string | null, number | null | undefined, number>;
}

/** A user's folder (migration 2026-12-15-library): in `parent_id` (null: the top level), placed by `order_key`. */
export interface FolderTable {
  /** A bigint on PostgreSQL, read with Number(). */
  id: Generated<number | string>;
  user_id: number;
  parent_id: ColumnType<number | string | null, number | null, number | null>;
  name: string;
  /** Compared as bytes, as entries' keys (playlists/entry-order.ts); one order per parent with the placements. */
  order_key: string;
  created_at: ColumnType<number | string, number, never>;
}

/** Where a user filed a playlist they may read: in `folder_id` (null: the top level), by `order_key`. */
export interface LibraryPlacementTable {
  user_id: number;
  playlist_id: number;
  folder_id: ColumnType<number | string | null, number | null, number | null>;
  order_key: string;
}

/**
 * The version of a user's tree of folders and playlists, one row per user replaced by each change: `seq` is the
 * version, and the change feed's position (with `xid` on PostgreSQL).
 */
export interface LibraryChangeTable {
  user_id: number;
  seq: ColumnType<number | string, number | string, number | string>;
  /** PostgreSQL: the writing transaction's id (set by the database); 0 on SQLite. */
  xid: ColumnType<number | string, never, number | string>;
  at: ColumnType<number | string, number, number>;
}

/**
 * A merged edit sent with a key, by its user, on a playlist: when, the results it answered (compact, or JSON: see
 * playlists/edits/edit-keys.repository.ts), and a digest of the request (null on keys kept before migration
 * 2026-12-10-edit-keys-and-song-count).
 */
export interface EditKeyTable {
  playlist_id: number;
  user_id: number;
  key: string;
  at: ColumnType<number | string, number, number>;
  results: string;
  digest: ColumnType<string | null, string | null | undefined, string | null>;
  /** The version its write made; null when it changed nothing (or kept before migration 2026-12-13-edit-key-writes). */
  version: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** The name its applied renames left; null when none applied. */
  renamed: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A ticket for the stream of changes, by its SHA-256: whose, and until when (Unix ms). */
export interface StreamTicketTable {
  digest: string;
  user_id: number;
  expires_at: ColumnType<number | string, number, number>;
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
  /** When the song came into the catalog (Unix ms): set by the import that adds it, never changed after. */
  added: ColumnType<number | string, number, never>;
  /** The fields as search normalises them (search-text.ts `normaliseText`): what smart playlist rules compare. */
  norm_title: string;
  norm_artist: string;
  norm_album: string;
  norm_genre: string;
  /** The catalog version its last change of title, artist, album, genre or duration made (set by a trigger); 0 if none. */
  changed_in: ColumnType<number | string, never, never>;
}

export interface PlaylistTable {
  id: Generated<number>;
  owner_id: number;
  name: string;
  created_at: number;
  /** 1 when created, counted up by each edit; a bigint on PostgreSQL, read with Number(). */
  version: ColumnType<number | string, number | undefined, number>;
  /** The entry id its next new slot gets (see migration 2026-12-06-entries); a bigint on PostgreSQL. */
  next_entry: ColumnType<number | string, number | undefined, number>;
  /** A smart playlist's rules (smart/rules.ts `Rules`, as JSON); null for a hand-made playlist. */
  rules: ColumnType<string | null, string | null | undefined, string | null>;
  /** What a smart playlist's answers say beside its rules (JSON; see migration 2026-12-09-smart-rights). */
  rules_status: ColumnType<string | null, string | null | undefined, string | null>;
  /** What a smart playlist's songs were worked out from at its last refresh (JSON; same migration). */
  smart_inputs: ColumnType<string | null, string | null | undefined, string | null>;
}

/**
 * A playlist a smart playlist's rules name (`source_id`) and that smart playlist (`playlist_id`): a row for each, while
 * the smart playlist exists (see migration 2026-12-08-smart-sources).
 */
export interface SmartSourceTable {
  source_id: number;
  playlist_id: number;
}

/** A slot of a playlist: its entry (an id of its own in the playlist), its order key and its song. */
export interface PlaylistSongTable {
  playlist_id: number;
  entry: ColumnType<number | string, number, number>;
  /** Compared as bytes: see playlists/entry-order.ts. */
  ord: string;
  song_id: number;
}

/** Who made each entry of a playlist, and when (migration 2026-12-14-entry-origins): written once, never changed. */
export interface PlaylistEntryOriginTable {
  playlist_id: number;
  entry: ColumnType<number | string, number, number>;
  /** A user's id; bigint on PostgreSQL. */
  added_by: ColumnType<number | string, number, number>;
  /** Epoch milliseconds. */
  added_at: ColumnType<number | string, number, number>;
}

export interface DeletedPlaylistTable {
  id: number;
  owner_id: number;
  deleted_at: number;
  /** The playlist's `next_entry` when it was deleted. */
  next_entry: ColumnType<number | string, number | undefined, number>;
  /** A smart playlist's rules when it was deleted (an undelete brings them back); null for a hand-made one. */
  rules: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A playlist's search text (its name and its songs' titles, artists and genres, normalised), kept by owner. */
export interface PlaylistDocumentTable {
  owner_id: number;
  playlist_id: number;
  doc: string;
}

/** One row, counted up whenever a song's title, artist, album, genre or duration changes. */
export interface CatalogVersionTable {
  id: number;
  version: number;
  /** How many songs the catalog holds, kept by triggers on `songs`; a bigint on PostgreSQL. */
  songs: ColumnType<number | string, never, never>;
}

/** A catalog import that changed songs, as the change feed lists it: the catalog version it reached, and when. */
export interface CatalogChangeTable {
  seq: Generated<number | string>;
  /** PostgreSQL: the writing transaction's id (set by the database); 0 on SQLite. */
  xid: Generated<number | string>;
  /** One import's row: replaced by each of its transactions. */
  import_id: string;
  version: ColumnType<number | string, number, number>;
  at: ColumnType<number | string, number, number>;
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
  change: ChangeKind;
  name: string;
  song_count: number;
  splice_at: number | null;
  splice_deleted: number | null;
  songs: string;
  /** The entries of `songs`, one for each, joined the same way; empty for revisions written before entries. */
  entries: ColumnType<string, string | undefined, string>;
  chain: number;
  /** A smart playlist's rules at this version (JSON text); null for a hand-made one (and before 1.7.0). */
  rules: ColumnType<string | null, string | null | undefined, string | null>;
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
  role: MemberRole;
  added_at: ColumnType<number | string, number, number>;
}

/** What the change feed tells a user about a membership: `shared` (added, or given another role) or `unshared`. */
export interface MemberEventTable {
  seq: Generated<number | string>;
  /** PostgreSQL: the writing transaction's id (set by the database); 0 on SQLite. */
  xid: Generated<number | string>;
  user_id: number;
  playlist_id: number;
  change: MemberChange;
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
