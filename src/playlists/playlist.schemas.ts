import { Type, type Static } from '@sinclair/typebox';
import type { Limits } from '../config.js';
import { Id } from '../http/schemas.js';

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
  },
  { $id: 'playlistwithsongs', title: 'playlistwithsongs' },
);
export type PlaylistWithSongs = Static<typeof PlaylistWithSongs>;

// Control characters (C0, DEL, C1) and unpaired surrogates anywhere, or nothing but white space, is refused.
// (The pattern is a Unicode regular expression: a surrogate pair is one character and passes.)
const CONTROL = '\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF';
export const NAME_PATTERN = `^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`;

export function newPlaylistSchema(limits: Limits) {
  return Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: limits.nameMaxLength,
        pattern: NAME_PATTERN,
        'x-message': 'must not be blank or contain control characters or unpaired surrogates',
        description: 'Playlist name, stored exactly as sent',
        examples: ['Chill Vibes'],
      }),
      songIds: Type.Array(Id('A song id from the catalog'), {
        minItems: 0,
        maxItems: limits.songsMax,
        description: 'Ids of the songs to put in the playlist; order is kept and repeats are allowed',
        examples: [[22, 3, 11, 45, 54]],
      }),
    },
    { $id: 'newPlaylist', title: 'newPlaylist' },
  );
}
export type NewPlaylist = Static<ReturnType<typeof newPlaylistSchema>>;

export const PlaylistParams = Type.Object({ playlistId: Id('Playlist id') });
