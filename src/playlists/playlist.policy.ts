import { ApiError } from '../http/errors.js';
import type { Role } from '../domain/roles.js';

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
