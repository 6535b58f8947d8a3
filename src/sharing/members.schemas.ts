import { Type, type Static } from '@sinclair/typebox';
import { PlaylistParams } from '../playlists/playlist.schemas.js';
import { MEMBER_ROLES, ROLES, type MemberRole, type Role } from '../domain/roles.js';

export const Member = Type.Object(
  {
    user: Type.String({ description: 'The user’s name' }),
    role: Type.Unsafe<Role>({
      type: 'string',
      enum: [...ROLES],
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
    role: Type.Unsafe<MemberRole>({
      type: 'string',
      enum: [...MEMBER_ROLES],
      description: '`viewer` reads the playlist; `editor` also edits it',
    }),
  },
  { description: 'The role to give the user' },
);
