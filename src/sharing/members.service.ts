import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import type { Grant } from '../playlists/playlist.access.js';
import type { PlaylistService } from '../playlists/playlist.service.js';
import { UserError, userName } from '../users/user-name.js';
import { findUserByName } from '../users/user.repository.js';
import { findMembership } from '../playlists/playlist-access.repository.js';
import { countSharedPlaylists, lockPlaylist } from '../playlists/playlist.repository.js';
import {
  countMembers,
  countMemberships,
  deleteMember,
  playlistMembers,
  putMember,
  recordMemberEvent,
} from './members.repository.js';
import type { Member } from './members.schemas.js';
import type { MemberRole } from '../domain/roles.js';
import { libraryChanged } from '../library/library.repository.js';

export const NO_SUCH_USER = 'No such user.';

/** Names in an order people read, the same on every database (whose collations differ); code points break ties. */
const collator = new Intl.Collator('en', { sensitivity: 'variant' });
const byName = (a: { name: string }, b: { name: string }) =>
  collator.compare(a.name, b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * A playlist's members (README.md, Sharing): who besides its owner may read (viewer) or also edit (editor) it. Every method
 * asks the access module first, so that a stranger learns nothing of the playlist nor of the user named; each
 * membership write records, in its transaction, what the member's change feed says of it.
 */
export function membersService(db: Db, playlists: PlaylistService, limits: Limits) {
  const q = db.kysely;
  const { access } = playlists;

  /** The user of that name; undefined for a name no user has (or can have). */
  async function userNamed(name: string): Promise<{ id: number; name: string } | undefined> {
    let stored: string;
    try {
      stored = userName(name);
    } catch (error) {
      if (error instanceof UserError) return undefined;
      throw error;
    }
    return findUserByName(q, stored);
  }

  async function list(userId: number, grant: Grant): Promise<Member[]> {
    const { owner, members } = await playlistMembers(q, grant.id);
    // Deleted since access was granted (or its owner removed, and their playlists with them).
    if (owner === undefined) throw await access.refusal(userId, grant.id);
    return [
      { user: owner, role: 'owner' },
      ...members.sort(byName).map((member): Member => ({ user: member.name, role: member.role })),
    ];
  }

  /** Runs a membership write among the caller's writes; refused as the playlist is once it is gone. */
  async function write(userId: number, id: number, work: (trx: Db['kysely'], version: number) => Promise<void>) {
    await playlists.asWrite(userId, () =>
      db.write(async (trx) => {
        const version = await lockPlaylist(trx, db.dialect, id);
        if (version === undefined) throw await access.refusal(userId, id, trx);
        await work(trx, version);
      }),
    );
  }

  return {
    /** The playlist's owner, then its members by name; for whoever may read it. */
    async list(userId: number, id: number): Promise<Member[]> {
      return list(userId, await access.requireAccess(userId, id, 'read'));
    },

    /** Adds the user as a member or gives them this role (the owner's right); answers the list after it. */
    async put(userId: number, id: number, name: string, role: MemberRole): Promise<Member[]> {
      const grant = await access.requireAccess(userId, id, 'own');
      const target = await userNamed(name);
      if (target === undefined) throw ApiError.notFound(NO_SUCH_USER);
      if (target.id === grant.ownerId) {
        throw ApiError.badRequest('The owner has every right to their playlist already; share it with another user.');
      }
      await write(userId, id, async (trx, version) => {
        const current = await findMembership(trx, id, target.id);
        if (current === role) return;
        if (current === undefined && (await countMembers(trx, id)) >= limits.membersMax) {
          throw ApiError.conflict(
            `This playlist has ${limits.membersMax} members already, the most it may have; remove one to make room.`,
          );
        }
        // Current playlists only, as the list counts them: a deleted one keeps its members for a restore, and a member
        // cannot leave it. Through the key (member, playlist); the memberships alone, fewer reads, are enough below it.
        if (
          current === undefined &&
          (await countMemberships(trx, target.id)) >= limits.sharedWithMax &&
          (await countSharedPlaylists(trx, target.id)) >= limits.sharedWithMax
        ) {
          throw ApiError.conflict(
            `${target.name} has ${limits.sharedWithMax} playlists shared with them already, the most one user may have.`,
          );
        }
        const at = Date.now();
        await putMember(trx, { playlistId: id, userId: target.id, ownerId: grant.ownerId, role, at });
        await recordMemberEvent(trx, { userId: target.id, playlistId: id, change: 'shared', version, at });
        await libraryChanged(trx, db.dialect, { users: [target.id] });
      });
      await playlists.membersChanged(id, grant.ownerId, userId, 'shared', target.id);
      return list(userId, grant);
    },

    /**
     * Removes a member: the owner's right, and each member's for themselves (the one right read from the
     * membership itself rather than the access module: it is the membership that is given up).
     */
    async remove(userId: number, id: number, name: string): Promise<void> {
      const grant = await access.requireAccess(userId, id, 'read');
      const target = await userNamed(name);
      const leaving = target?.id === userId && grant.role !== 'owner';
      if (!leaving) await access.requireAccess(userId, id, 'own');
      if (target === undefined) throw ApiError.notFound(NO_SUCH_USER);
      if (target.id === grant.ownerId) {
        throw ApiError.badRequest('The owner cannot be removed from their own playlist; delete it instead.');
      }
      await write(userId, id, async (trx, version) => {
        if (!(await deleteMember(trx, id, target.id))) {
          throw ApiError.notFound(`${target.name} is not a member of this playlist.`);
        }
        await recordMemberEvent(trx, {
          userId: target.id,
          playlistId: id,
          change: 'unshared',
          version,
          at: Date.now(),
        });
        await libraryChanged(trx, db.dialect, { users: [target.id], unplace: id });
      });
      await playlists.membersChanged(id, grant.ownerId, userId, 'unshared', target.id);
    },
  };
}

export type MembersService = ReturnType<typeof membersService>;
