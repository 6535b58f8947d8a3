import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import type { ChangeLog } from '../db/playlist-changes.js';
import { ApiError } from '../http/errors.js';
import { findDeletedPlaylist, ownedPlaylistVersion } from './playlist.repository.js';

/** What a caller means to do with a playlist. */
export type Permission = 'read' | 'edit' | 'own';

/** A caller's standing towards a playlist; sharing adds roles (a viewer, an editor) and what each allows. */
type Role = 'owner';
const ALLOWS: Readonly<Record<Role, readonly Permission[]>> = { owner: ['read', 'edit', 'own'] };

/**
 * Access granted, and what the database confirmed with it when it was read: the answer cache serves a kept answer of
 * this playlist only at this playlist version and catalog version, or (SQLite, when access was known without a read)
 * once it has caught up with the change log.
 */
export interface Grant {
  readonly id: number;
  readonly ownerId: number;
  /** The playlist's version (counted up by each edit), when access was read. */
  readonly version: number | undefined;
  /** The catalog's version, read in the same statement. */
  readonly catalog: number | undefined;
}

/** Owners remembered on SQLite: a playlist's owner never changes, and the change log tells when it goes. */
const OWNERS_KEPT = 100_000;

export const NOT_FOUND = 'No such playlist.';
export const ALREADY_DELETED = 'This playlist is already deleted.';

/**
 * The one place that answers "may this user read, edit or own this playlist", asked first by every service method
 * that serves one playlist: a grant, or 404 (no such playlist, or another user's: both cost the same statements and
 * read none of its songs) or 410 (its owner deleted it). Lists and searches read the caller's own library through
 * its key (owner), so they ask nothing per playlist.
 *
 * PostgreSQL: one indexed read of the playlist's row for this owner, with its version and the catalog version (the
 * cache's confirmation too). SQLite: an owner seen before is known without a read (an owner never changes, and the
 * change log makes it forgotten once its playlist changes); every caller then reads the playlist or writes it, and
 * answers `refusal` when it is gone.
 */
export function playlistAccess(db: Db, changes: ChangeLog | undefined) {
  const q = db.kysely;
  const owners = changes === undefined ? undefined : new LRUCache<number, number>({ max: OWNERS_KEPT });
  /** Counts the times the change log made owners forget. */
  let forgotten = 0;
  // A playlist's owner never changes and a remembered one that is gone is refused by the read or write that follows
  // (see `refusal`), so owners forget what the log names, and keep the rest when the log was too far behind.
  changes?.listen({
    changed: (ids) => {
      for (const id of ids) owners?.delete(id);
      forgotten += 1;
    },
    all: () => undefined,
  });

  /** 410 for the owner of a deleted playlist, 404 for everyone and everything else. */
  async function refusal(userId: number, id: number, executor: Db['kysely'] = q): Promise<ApiError> {
    const deleted = await findDeletedPlaylist(executor, id);
    return deleted?.owner_id === userId ? ApiError.gone(ALREADY_DELETED) : ApiError.notFound(NOT_FOUND);
  }

  function allowed(role: Role, permission: Permission): boolean {
    return ALLOWS[role].includes(permission);
  }

  /** The caller's role towards the playlist and what the database confirmed with it; undefined when none. */
  async function standing(userId: number, id: number): Promise<{ role: Role; grant: Grant } | undefined> {
    // peek, then get only for the owner: another user's request leaves what is remembered as it was.
    if (owners?.peek(id) === userId) {
      owners.get(id);
      return { role: 'owner', grant: { id, ownerId: userId, version: undefined, catalog: undefined } };
    }
    const generation = forgotten;
    const row = await ownedPlaylistVersion(q, id, userId);
    if (row === undefined) return undefined;
    // Not when the log told of a change since the read began: the playlist may be gone.
    if (generation === forgotten) owners?.set(id, userId);
    const grant = { id, ownerId: userId, version: Number(row.version), catalog: Number(row.catalog_version) };
    return { role: 'owner', grant };
  }

  return {
    refusal,

    /**
     * The caller's access to a playlist's history for `permission` (`read` its versions and diffs, `edit` to restore
     * one): as to the playlist while it is there, and for its owner once it is deleted (`deleted: true`); 404 else.
     */
    async requireHistoryAccess(
      userId: number,
      id: number,
      permission: 'read' | 'edit',
    ): Promise<{ readonly deleted: boolean }> {
      const found = await standing(userId, id);
      if (found !== undefined) {
        if (!allowed(found.role, permission)) throw await refusal(userId, id);
        return { deleted: false };
      }
      const deleted = await findDeletedPlaylist(q, id);
      if (deleted?.owner_id === userId) return { deleted: true };
      throw ApiError.notFound(NOT_FOUND);
    },

    /** The caller's grant to this playlist for `permission`; throws 404 or 410 otherwise. */
    async requireAccess(userId: number, id: number, permission: Permission): Promise<Grant> {
      const found = await standing(userId, id);
      if (found === undefined || !allowed(found.role, permission)) throw await refusal(userId, id);
      return found.grant;
    },
  };
}

export type PlaylistAccess = ReturnType<typeof playlistAccess>;
