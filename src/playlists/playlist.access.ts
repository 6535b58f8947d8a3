import DataLoader from 'dataloader';
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import type { ChangeLog } from '../db/playlist-changes.js';
import { ApiError } from '../http/errors.js';
import {
  findDeletedPlaylist,
  isMember,
  playlistAccessRow,
  playlistAccessRows,
  type AccessRow,
} from './playlist.repository.js';

/** What a caller means to do with a playlist. */
export type Permission = 'read' | 'edit' | 'own';

/** A caller's standing towards a playlist: its owner, or a member its owner shared it with (DESIGN.md §12). */
export type Role = 'owner' | 'editor' | 'viewer';
/** A member's role. */
export type MemberRole = Exclude<Role, 'owner'>;

const ALLOWS: Readonly<Record<Role, readonly Permission[]>> = {
  owner: ['read', 'edit', 'own'],
  editor: ['read', 'edit'],
  viewer: ['read'],
};

/** Why a member may not do what they asked, by the permission they lacked. */
const NOT_ALLOWED: Readonly<Record<Permission, string>> = {
  read: 'You may not read this playlist.',
  edit: 'This playlist is shared with you as a viewer: you may read it, not change it. Its owner can make you an editor.',
  own: 'Only the owner of this playlist may delete it or manage its members and links.',
};

/**
 * Access granted, and what the database confirmed with it when it was read: the answer cache serves a kept answer of
 * this playlist only at this playlist version and catalog version, or (SQLite, when access was known without a read)
 * once it has caught up with the change log.
 */
export interface Grant {
  readonly id: number;
  readonly ownerId: number;
  /** The caller's role: a member's answers carry it, and the owner's name. */
  readonly role: Role;
  /** The owner's name, read with a member's grant; undefined for the owner. */
  readonly ownerName: string | undefined;
  /** The playlist's version (counted up by each edit), when access was read. */
  readonly version: number | undefined;
  /** The catalog's version, read in the same statement. */
  readonly catalog: number | undefined;
}

/** The most access reads one PostgreSQL statement makes. */
const ACCESS_READS_PER_STATEMENT = 256;

/** A member's standing, as remembered on SQLite. */
interface Membership {
  readonly ownerId: number;
  readonly role: MemberRole;
  readonly ownerName: string;
}

/** Memberships remembered on SQLite, in all. */
const MEMBERSHIPS_KEPT = 100_000;

/** Owners remembered on SQLite: a playlist's owner never changes, and the change log tells when it goes. */
const OWNERS_KEPT = 100_000;

export const NOT_FOUND = 'No such playlist.';
export const ALREADY_DELETED = 'This playlist is already deleted.';

/**
 * The one place that answers "may this user read, edit or own this playlist", asked first by every service method
 * that serves one playlist: a grant, or 404 (no such playlist, or one neither theirs nor shared with them: both cost
 * the same statements and read none of its songs), 403 (shared with them in a role that does not allow it) or 410
 * (deleted, to its owner and its members). Lists and searches read the caller's own library and memberships through
 * their keys, so they ask nothing per playlist.
 *
 * One indexed read of the playlist's row for this caller, as owner or member, with its version and the catalog
 * version (the cache's confirmation too); on PostgreSQL the reads of one turn of the event loop go as one statement.
 * On SQLite an owner seen before is known without a read (an owner never changes, and the change log makes it
 * forgotten once its playlist changes); every caller then reads the playlist or writes it, and answers `refusal`
 * when it is gone. A member seen before is known without a read too, once the change log is caught up with: every
 * membership write logs its playlist, so a removed member or a changed role takes effect at that user's next
 * request, on every instance; PostgreSQL reads the membership at every request.
 */
export function playlistAccess(db: Db, changes: ChangeLog | undefined) {
  const q = db.kysely;
  const owners = changes === undefined ? undefined : new LRUCache<number, number>({ max: OWNERS_KEPT });
  // SQLite: each playlist's members seen, by user. A membership can change (another role, or none), so these are
  // trusted only once the change log is caught up with, which forgets a playlist's members when any of its
  // memberships changes (a trigger logs it), and all of them when the log was too far behind.
  const members =
    changes === undefined
      ? undefined
      : new LRUCache<number, Map<number, Membership>>({
          maxSize: MEMBERSHIPS_KEPT,
          sizeCalculation: (byUser) => byUser.size + 1,
        });
  /** Counts the times the change log made owners or members forget. */
  let forgotten = 0;
  // A playlist's owner never changes and a remembered one that is gone is refused by the read or write that follows
  // (see `refusal`), so owners forget what the log names, and keep the rest when the log was too far behind.
  changes?.listen({
    changed: (ids) => {
      for (const id of ids) {
        owners?.delete(id);
        members?.delete(id);
      }
      forgotten += 1;
    },
    all: () => {
      members?.clear();
      forgotten += 1;
    },
  });

  /** SQLite: the member's remembered standing, once the change log is caught up with (no I/O when nothing changed). */
  async function rememberedMember(userId: number, id: number): Promise<Membership | undefined> {
    if (changes === undefined || members === undefined) return undefined;
    const caughtUp = changes.caughtUp();
    if (caughtUp instanceof Promise) await caughtUp;
    return members.get(id)?.get(userId);
  }

  function rememberMember(id: number, userId: number, membership: Membership): void {
    if (members === undefined) return;
    const byUser = members.get(id) ?? new Map<number, Membership>();
    byUser.set(userId, membership);
    // Set again, so that the cache counts the member just added.
    members.set(id, byUser);
  }

  /** 410 for the owner or a member of a deleted playlist, 404 for everyone and everything else. */
  async function refusal(userId: number, id: number, executor: Db['kysely'] = q): Promise<ApiError> {
    const deleted = await findDeletedPlaylist(executor, id);
    if (deleted === undefined) return ApiError.notFound(NOT_FOUND);
    if (deleted.owner_id === userId || (await isMember(executor, id, userId))) return ApiError.gone(ALREADY_DELETED);
    return ApiError.notFound(NOT_FOUND);
  }

  // PostgreSQL: the access reads of the requests that arrive in one turn of the event loop go as one statement, in one
  // round trip, each still read after its request arrived (nothing is kept between turns).
  const reads =
    db.dialect === 'postgres'
      ? new DataLoader<{ id: number; userId: number }, AccessRow | undefined, string>(
          async (pairs) => {
            const rows = await playlistAccessRows(q, pairs);
            const found = new Map(rows.map((row) => [`${String(row.id)}:${String(row.user_id)}`, row]));
            return pairs.map((pair) => found.get(`${pair.id}:${pair.userId}`));
          },
          {
            cache: false,
            maxBatchSize: ACCESS_READS_PER_STATEMENT,
            batchScheduleFn: (dispatch) => setImmediate(dispatch),
          },
        )
      : undefined;

  /** The caller's grant to the playlist; undefined when they neither own it nor are a member of it. */
  async function standing(userId: number, id: number): Promise<Grant | undefined> {
    // peek, then get only for the owner: another user's request leaves what is remembered as it was.
    if (owners?.peek(id) === userId) {
      owners.get(id);
      return { id, ownerId: userId, role: 'owner', ownerName: undefined, version: undefined, catalog: undefined };
    }
    const known = await rememberedMember(userId, id);
    if (known !== undefined) {
      return { id, ...known, version: undefined, catalog: undefined };
    }
    const generation = forgotten;
    const row = reads === undefined ? await playlistAccessRow(q, id, userId) : await reads.load({ id, userId });
    if (row === undefined) return undefined;
    const owner = row.owner_id === userId;
    // Not when the log told of a change since the read began: the playlist or the membership may be gone.
    if (generation === forgotten) {
      if (owner) owners?.set(id, userId);
      else rememberMember(id, userId, { ownerId: row.owner_id, role: row.role!, ownerName: row.owner_name });
    }
    return {
      id,
      ownerId: row.owner_id,
      role: owner ? 'owner' : row.role!,
      ownerName: owner ? undefined : row.owner_name,
      version: Number(row.version),
      catalog: Number(row.catalog_version),
    };
  }

  /** The grant if it allows `permission`; 403 for a member whose role does not. */
  function allowed(grant: Grant, permission: Permission): Grant {
    if (!ALLOWS[grant.role].includes(permission)) throw ApiError.forbidden(NOT_ALLOWED[permission]);
    return grant;
  }

  return {
    refusal,

    /**
     * The caller's access to a playlist's history for `permission` (`read` its versions and diffs, `edit` to restore
     * one): as to the playlist while it is there, and for its owner once it is deleted (`deleted: true`); 410 for its
     * members then (only its owner restores it), 404 else.
     */
    async requireHistoryAccess(
      userId: number,
      id: number,
      permission: 'read' | 'edit',
    ): Promise<{ readonly deleted: boolean; readonly grant: Grant | undefined }> {
      const found = await standing(userId, id);
      if (found !== undefined) return { deleted: false, grant: allowed(found, permission) };
      const deleted = await findDeletedPlaylist(q, id);
      if (deleted?.owner_id === userId) return { deleted: true, grant: undefined };
      throw await refusal(userId, id);
    },

    /** The caller's grant to this playlist for `permission`; throws 404, 403 or 410 otherwise. */
    async requireAccess(userId: number, id: number, permission: Permission): Promise<Grant> {
      const found = await standing(userId, id);
      if (found === undefined) throw await refusal(userId, id);
      return allowed(found, permission);
    },
  };
}

export type PlaylistAccess = ReturnType<typeof playlistAccess>;
