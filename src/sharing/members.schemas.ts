import { Type, type Static } from '@sinclair/typebox';
import { PlaylistParams } from '../playlists/playlist.schemas.js';

/** Who a member may be: a viewer reads the playlist, an editor also edits it. */
export const MEMBER_ROLES = ['viewer', 'editor'] as const;

export const Member = Type.Object(
  {
    user: Type.String({ description: 'The user’s name' }),
    role: Type.Unsafe<'owner' | (typeof MEMBER_ROLES)[number]>({
      type: 'string',
      enum: ['owner', ...MEMBER_ROLES],
      description: '`owner` (listed first), `editor` (reads and edits it) or `viewer` (reads it)',
    }),
  },
  { $id: 'member', title: 'member' },
);
export type Member = Static<typeof Member>;

export const MemberParams = Type.Object({
  playlistId: PlaylistParams.properties.playlistId,
  user: Type.String({ minLength: 1, maxLength: 200, description: 'A user’s name' }),
});

export const MemberBody = Type.Object(
  {
    role: Type.Unsafe<(typeof MEMBER_ROLES)[number]>({
      type: 'string',
      enum: [...MEMBER_ROLES],
      description: '`viewer` reads the playlist; `editor` also edits it',
    }),
  },
  { description: 'The role to give the user' },
);
