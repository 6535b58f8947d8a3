import type { Db } from '../db/database.js';
import { historyBounds } from '../history/revision.repository.js';
import { batchedPerTurn } from '../db/batched.js';
import { ApiError } from '../http/errors.js';
import { RememberedStandings, type Freshness } from './freshness.js';
import {
  findMembership,
  playlistAccessRow,
  playlistAccessRowCounted,
  playlistAccessRows,
  type AccessRow,
} from './playlist-access.repository.js';
import { findDeletedPlaylist } from './playlist.repository.js';
import type { Role } from '../domain/roles.js';

// The policy: what each role may do, and what a caller who may not is told.
/** What a caller means to do with a playlist. */
export type Permission = 'read' | 'edit' | 'own';

/** What each role may do (README.md, Sharing). */
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

export const NOT_FOUND = 'No such playlist.';
export const ALREADY_DELETED = 'This playlist is already deleted.';
/** The 410 of a deleted playlist whose history was pruned with its delete. */
export const NO_LONGER_RESTORABLE = `${ALREADY_DELETED} Its history is no longer kept, so it cannot be restored.`;

/** A deleted playlist as a refusal needs it. */
export interface DeletedPlaylist {
  readonly id: number;
  readonly ownerId: number;
  /** Its newest kept version (its delete's, which a restore of that version undoes); undefined once pruned. */
  readonly newest: number | undefined;
}

/** The standing if its role allows `permission`; 403 for a member whose role does not. */
export function allowed<Standing extends { readonly role: Role }>(
  standing: Standing,
  permission: Permission,
): Standing {
  if (!ALLOWS[standing.role].includes(permission)) throw ApiError.forbidden(NOT_ALLOWED[permission]);
  return standing;
}

/**
 * Why a caller who neither owns nor is a member of a playlist that is there is refused it: 410 for the owner or a
 * member (`member`) of a deleted one (`deleted`), which tells the owner how to bring it back while its history is
 * kept and a member that only its owner can; 404 for everyone and everything else, so that a stranger learns nothing.
 */
export function refusal(userId: number, deleted: DeletedPlaylist | undefined, member: boolean): ApiError {
  if (deleted === undefined) return ApiError.notFound(NOT_FOUND);
  if (deleted.ownerId === userId) {
    if (deleted.newest === undefined) return ApiError.gone(NO_LONGER_RESTORABLE);
    return ApiError.gone(
      `${ALREADY_DELETED} You can restore it: POST /v3/playlist/${deleted.id}/restore with {"version": ${deleted.newest}} ` +
        `(its delete's version), or on the server \`mixtape playlist restore ${deleted.id}\`.`,
    );
  }
  if (member) return ApiError.gone(`${ALREADY_DELETED} Only its owner can restore it.`);
  return ApiError.notFound(NOT_FOUND);
}

// The one read behind access.
/**
 * Reads a caller's standing towards a playlist: its row, or undefined when they neither own it nor are a member.
 * With `count`, PostgreSQL also counts the playlist's songs in the same statement (`songCount`); SQLite never does.
 */
export type AccessReader = (
  id: number,
  userId: number,
  count?: boolean,
) => Promise<(AccessRow & { readonly songCount?: number }) | undefined>;

/**
 * The one repository read behind access: the playlist's owner, version and the catalog version, with the caller's
 * membership, in one indexed statement. On SQLite each request makes its own (a few microseconds, on the event
 * loop); on PostgreSQL the reads of the requests that arrive in one turn of the event loop go as one statement, in
 * one round trip, each still read after its request arrived (nothing is kept between turns). A read that counts the
 * songs (an edit's) goes alone, so that no other request waits for the count.
 */
export function accessReader(db: Db): AccessReader {
  const q = db.kysely;
  if (db.dialect !== 'postgres') return (id, userId) => playlistAccessRow(q, id, userId);
  const reads = batchedPerTurn((pairs: readonly { id: number; userId: number }[]) => playlistAccessRows(q, pairs));
  return async (id, userId, count = false) => {
    if (!count) return reads({ id, userId });
    const row = await playlistAccessRowCounted(q, id, userId);
    if (row === undefined) return undefined;
    const { song_count, ...rest } = row;
    return { ...rest, songCount: Number(song_count) };
  };
}

/** Access granted: the caller's standing towards the playlist. */
export interface Grant {
  readonly id: number;
  readonly ownerId: number;
  /** The caller's role: a member's answers carry it, and the owner's name. */
  readonly role: Role;
  /** The owner's name, for a member; undefined for the owner. */
  readonly ownerName: string | undefined;
}

/** A grant, with how many songs the playlist holds when the read that granted it counted them. */
type Counted = Grant & { readonly songCount?: number };

/**
 * Access to read granted, with the playlist as it is at this request: its version and the catalog's, which name the
 * one snapshot that answers it (see PlaylistCache): read with the access row, or (SQLite, a standing remembered)
 * known from the change log caught up with.
 */
export interface CurrentGrant extends Grant {
  /** The playlist's version (counted up by each edit). */
  readonly version: number;
  /** The catalog's version (counted up whenever an import changes a song's text). */
  readonly catalogVersion: number;
}

/**
 * A share link as a caller, once its token is proven (sharing/links.service.ts): it may read one playlist, the one it
 * was made for, as its owner made it (role `link`), and nothing else.
 */
export interface LinkCaller {
  readonly playlistId: number;
  readonly ownerId: number;
  /** The owner's name, which its answers carry. */
  readonly owner: string;
}

/** Who reads a playlist: a user, by id, or a share link. */
export type Reader = number | LinkCaller;

/** Access to read granted to a reader: a user's grant, or a link's (role `link`) on its one playlist. */
export type ReadGrant = CurrentGrant | (Omit<CurrentGrant, 'role'> & { readonly role: 'link' });

/**
 * The one place that answers "may this user read, edit or own this playlist", asked first by every service method
 * that serves one playlist: a grant, or 404 (no such playlist, or one neither theirs nor shared with them: both cost
 * the same statements and read none of its songs), 403 (shared with them in a role that does not allow it) or 410
 * (deleted, to its owner and its members). Lists and searches read the caller's own library and memberships through
 * their keys, so they ask nothing per playlist.
 *
 * The decision is the policy's (`allowed`, `refusal` above) over one repository read (`accessReader`): the
 * playlist's row for this caller, as owner or member, with its version and the catalog version. On SQLite a caller
 * seen before is known without a read (`RememberedStandings`), once the change log is caught up with (`Freshness`,
 * both in freshness.ts; the request's one catch-up); PostgreSQL reads at every request, batched per turn of the event
 * loop.
 */
export function playlistAccess(db: Db, freshness: Freshness) {
  const q = db.kysely;
  const read = accessReader(db);
  const remembered = freshness.logged ? new RememberedStandings(freshness) : undefined;

  /** 410 for the owner or a member of a deleted playlist, 404 for everyone and everything else. */
  async function refused(userId: number, id: number, executor: Db['kysely'] = q): Promise<ApiError> {
    const found = await findDeletedPlaylist(executor, id);
    if (found === undefined) return refusal(userId, undefined, false);
    const owner = found.owner_id === userId;
    // Only its owner is told the version a restore takes.
    const newest = owner ? (await historyBounds(executor, id))?.newest : undefined;
    const member = !owner && (await findMembership(executor, id, userId)) !== undefined;
    return refusal(userId, { id, ownerId: found.owner_id, newest }, member);
  }

  /**
   * The caller's grant to the playlist, with its versions when `current`; undefined when they neither own it nor are
   * a member of it. With `count`, a read that counts the playlist's songs as well (PostgreSQL) gives `songCount`.
   */
  async function standing(userId: number, id: number, current: true): Promise<CurrentGrant | undefined>;
  async function standing(userId: number, id: number, current: false, count?: boolean): Promise<Counted | undefined>;
  async function standing(
    userId: number,
    id: number,
    current: boolean,
    count = false,
  ): Promise<CurrentGrant | Counted | undefined> {
    if (remembered !== undefined) {
      // SQLite. A playlist's owner never changes, and a remembered one that is gone is refused by the read or write
      // that follows (see `refused`): without versions wanted, no catch-up (an edit's request reads none of the log).
      const owner = current ? undefined : remembered.find(userId, id);
      if (owner?.role === 'owner') return { id, ownerId: userId, role: 'owner', ownerName: undefined };
      // Catch up with the change log (without I/O when nothing was committed), which forgets what changed: a member's
      // standing and a playlist's version are trusted only then.
      const caughtUp = freshness.caughtUp()!;
      const catalogVersion = caughtUp instanceof Promise ? await caughtUp : caughtUp;
      const known = remembered.find(userId, id);
      if (known !== undefined) {
        const { version, ...grant } = known;
        return current ? { id, ...grant, version, catalogVersion } : { id, ...grant };
      }
    }
    const generation = freshness.generation;
    const row = await read(id, userId, count);
    if (row === undefined) return undefined;
    const owner = row.owner_id === userId;
    const version = Number(row.version);
    remembered?.remember(
      userId,
      id,
      { ownerId: row.owner_id, ownerName: row.owner_name, memberRole: owner ? null : row.role, version },
      generation,
    );
    const grant = {
      id,
      ownerId: row.owner_id,
      role: owner ? 'owner' : row.role!,
      ownerName: owner ? undefined : row.owner_name,
      version,
      catalogVersion: Number(row.catalog_version),
    } as const;
    return row.songCount === undefined ? grant : { ...grant, songCount: row.songCount };
  }

  async function requireCurrent(userId: number, id: number): Promise<CurrentGrant> {
    const found = await standing(userId, id, true);
    if (found === undefined) throw await refused(userId, id);
    return allowed(found, 'read');
  }

  return {
    refusal: refused,

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
      const found = await standing(userId, id, false);
      if (found !== undefined) return { deleted: false, grant: allowed(found, permission) };
      const deleted = await findDeletedPlaylist(q, id);
      if (deleted?.owner_id === userId) return { deleted: true, grant: undefined };
      throw await refused(userId, id);
    },

    /** The caller's grant to this playlist for `permission`; throws 404, 403 or 410 otherwise. */
    async requireAccess(userId: number, id: number, permission: Permission): Promise<Grant> {
      const found = await standing(userId, id, false);
      if (found === undefined) throw await refused(userId, id);
      return allowed(found, permission);
    },

    /**
     * The caller's grant to edit this playlist, as `requireAccess` gives it, with how many songs the playlist holds
     * when the read that granted it counted them in the same statement (PostgreSQL); undefined when none did (SQLite,
     * where a count is a read in process of its own, and a standing remembered makes no read).
     */
    async requireEdit(userId: number, id: number): Promise<{ grant: Grant; songCount: number | undefined }> {
      const found = await standing(userId, id, false, true);
      if (found === undefined) throw await refused(userId, id);
      return { grant: allowed(found, 'edit'), songCount: found.songCount };
    },

    /**
     * The caller's grant to read this playlist, with the versions of it and of the catalog that its answer is at
     * (the request's one catch-up with SQLite's change log when it is known without a read); 404 or 410 otherwise.
     */
    requireCurrent,

    /**
     * A reader's grant to read this playlist, with its versions, as `requireCurrent` gives a user's: a link reads only
     * its own playlist while it is there (its owner's standing gives the versions), and is told 404 for anything else.
     */
    async requireRead(reader: Reader, id: number): Promise<ReadGrant> {
      if (typeof reader === 'number') return requireCurrent(reader, id);
      const found = reader.playlistId === id ? await standing(reader.ownerId, id, true) : undefined;
      if (found === undefined) throw refusal(reader.ownerId, undefined, false);
      return { ...found, role: 'link', ownerName: reader.owner };
    },

    /** 410 or 404 for a reader whose read found the playlist gone: a link is told 404, as for a link that never was. */
    async readRefusal(reader: Reader, id: number): Promise<ApiError> {
      return typeof reader === 'number' ? refused(reader, id) : refusal(reader.ownerId, undefined, false);
    },
  };
}

export type PlaylistAccess = ReturnType<typeof playlistAccess>;
