/**
 * What a revision did to its playlist. `refresh` (1.7.0): a smart playlist's songs followed the catalog or the
 * playlists its rules name, written by the service in its owner's name.
 */
export const CHANGES = ['create', 'edit', 'restore', 'delete', 'refresh'] as const;
export type ChangeKind = (typeof CHANGES)[number];

/** The revisions an edit of a live playlist writes: an edit, a restore of a kept version, a smart playlist's refresh. */
export type EditKind = Extract<ChangeKind, 'edit' | 'restore' | 'refresh'>;

/** What a member's change feed says of a membership: shared with them (or their role changed), or no longer. */
export const MEMBER_CHANGES = ['shared', 'unshared'] as const;
export type MemberChange = (typeof MEMBER_CHANGES)[number];

/** What a change feed entry tells: a revision, or (1.5.0) a playlist shared with the caller, or no longer. */
export const FEED_CHANGES = [...CHANGES, ...MEMBER_CHANGES] as const;
export type FeedChange = (typeof FEED_CHANGES)[number];
