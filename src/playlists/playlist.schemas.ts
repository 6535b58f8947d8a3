import { Type, type Static } from '@sinclair/typebox';
import type { Limits } from '../config.js';
import { error } from '../http/responses.js';
import { Id } from '../http/schemas.js';
import { MEMBER_ROLES } from '../domain/roles.js';
import { looseRulesSchema } from '../smart/rules.js';

export const Song = Type.Object(
  {
    id: Type.Integer({ description: 'Song id' }),
    title: Type.String({ description: 'Song title' }),
    artist: Type.String({ description: 'Artist name' }),
  },
  { $id: 'song', title: 'song' },
);
export type Song = Static<typeof Song>;

export const PlaylistWithSongs = Type.Object(
  {
    id: Type.Integer({ description: 'Playlist id' }),
    name: Type.String({ description: 'Playlist name' }),
    songs: Type.Array(Type.Unsafe<Song>(Type.Ref('song')), {
      description: 'Songs in the playlist, in the order they were given',
    }),
    rules: Type.Optional(
      Type.Unsafe<unknown>({
        $ref: 'smartRules',
        description:
          "A smart playlist's rules, as stored (1.7.0): its songs are the catalog songs they choose. Hand-made playlists have no `rules`",
      }),
    ),
    rulesStatus: Type.Optional(
      Type.Object(
        {
          unreadable: Type.Array(Type.Integer(), {
            description:
              "The playlists the rules name that the smart playlist's owner may no longer read: their conditions match no song",
          }),
        },
        {
          additionalProperties: false,
          description:
            'Only beside `rules`, and only when a playlist the rules name can no longer be read by their owner (1.7.0)',
        },
      ),
    ),
    owner: Type.Optional(
      Type.String({
        description:
          "The owner's name: only in answers to a member, for a playlist shared with them (an owner's answers have no `owner` and no `role`)",
      }),
    ),
    role: Type.Optional(
      Type.Union(
        MEMBER_ROLES.map((role) => Type.Literal(role)),
        {
          description: "The caller's role, with `owner`: a viewer reads it, an editor also edits it",
        },
      ),
    ),
  },
  { $id: 'playlistwithsongs', title: 'playlistwithsongs' },
);
export type PlaylistWithSongs = Static<typeof PlaylistWithSongs>;

/** What did not match, beside the created playlist (which stays a `playlistwithsongs`). */
export const UnmatchedTrack = Type.Object(
  {
    position: Type.Integer({ minimum: 1, description: "The track's place among the file's tracks, from 1" }),
    title: Type.Optional(Type.String({ description: "The track's title in the file" })),
    artist: Type.Optional(Type.String({ description: "The track's artist (XSPF `creator`) in the file" })),
    album: Type.Optional(Type.String({ description: "The track's album in the file" })),
    identifier: Type.Optional(Type.String({ description: "The track's first identifier or location in the file" })),
  },
  { $id: 'unmatchedTrack', title: 'unmatchedTrack' },
);
export type UnmatchedTrack = Static<typeof UnmatchedTrack>;

export const ImportedPlaylist = Type.Object(
  {
    playlist: Type.Ref('playlistwithsongs'),
    unmatched: Type.Array(Type.Ref('unmatchedTrack'), {
      description: "The file's tracks that matched no song of the catalog and were left out, in file order",
    }),
  },
  { $id: 'importedPlaylist', title: 'importedPlaylist' },
);

// Control characters (C0, DEL, C1) and unpaired surrogates anywhere, or nothing but white space, is refused.
// (The pattern is a Unicode regular expression: a surrogate pair is one character and passes.)
const CONTROL = '\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF';
const NAME_PATTERN = `^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`;

/**
 * What a playlist's name may be, wherever one is sent (a create, an edit, an import's `?name=`): `x-visible` also
 * asks for a visible character and no bidirectional control (`nameProblem`, which an import's file title meets too).
 */
export function nameRule(limits: Limits) {
  return {
    minLength: 1,
    maxLength: limits.nameMaxLength,
    pattern: NAME_PATTERN,
    'x-message': 'must not be blank or contain control characters or unpaired surrogates',
    'x-visible': true,
  };
}

/** The 422 of a write whose song ids the catalog does not all have (see `notInCatalog`). */
export const UNKNOWN_SONGS = error('Some song ids are not in the catalog; `errormsg` names them.');

export function newPlaylistSchema(limits: Limits) {
  return Type.Object(
    {
      name: Type.String({
        ...nameRule(limits),
        description: 'Playlist name, stored exactly as sent',
        examples: ['Chill Vibes'],
      }),
      songIds: Type.Optional(
        Type.Array(Id('A song id from the catalog'), {
          minItems: 0,
          maxItems: limits.songsMax,
          description:
            'Ids of the songs to put in the playlist; order is kept and repeats are allowed. Required, unless `rules` is sent instead',
          examples: [[22, 3, 11, 45, 54]],
        }),
      ),
      rules: Type.Optional(
        Type.Unsafe<unknown>({
          ...looseRulesSchema,
          description:
            'A smart playlist (1.7.0): the rules (`smartRules`) that choose its songs from the catalog, instead of `songIds`',
        }),
      ),
    },
    { $id: 'newPlaylist', title: 'newPlaylist' },
  );
}
export type NewPlaylist = Static<ReturnType<typeof newPlaylistSchema>>;

export const PlaylistParams = Type.Object({ playlistId: Id('Playlist id') });

/** Which playlists a list or search covers (README.md, Sharing). */
export const Scope = Type.Union([Type.Literal('own'), Type.Literal('shared'), Type.Literal('all')], {
  default: 'own',
  description:
    "`own` (the default): the caller's playlists; `shared`: those other users shared with the caller; `all`: both. Each in id order.",
});
export type Scope = Static<typeof Scope>;
