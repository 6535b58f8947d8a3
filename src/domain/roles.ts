/** Who a member may be: a viewer reads the playlist, an editor also edits it. */
export const MEMBER_ROLES = ['viewer', 'editor'] as const;
/** A member's role. */
export type MemberRole = (typeof MEMBER_ROLES)[number];

/** A caller's standing towards a playlist: its owner, or a member its owner shared it with (README.md, Sharing). */
export const ROLES = ['owner', ...MEMBER_ROLES] as const;
export type Role = (typeof ROLES)[number];

/** A member's standing in a playlist: their role and the name of the playlist's owner. */
export interface Membership {
  readonly role: MemberRole;
  readonly ownerName: string;
}
