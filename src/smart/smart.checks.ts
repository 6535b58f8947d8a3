/**
 * What a write of a smart playlist's rules checks beyond `readRules`: that each playlist they name is one the caller
 * may read (400 otherwise, as if there were none: another user's playlist is not told apart from a missing one), and
 * the sentence of the 409 for a hand edit of its songs.
 */
import { ApiError } from '../http/errors.js';
import { noSuchRulePlaylist, rulePlaylists, type Rules } from './rules.js';

/** Who may read a playlist: the playlists' access (playlists/playlist.access.ts), which rejects with an ApiError. */
export interface ReadAccess {
  requireAccess(userId: number, id: number, permission: 'read'): Promise<unknown>;
}

/** 400 naming the path of the first `playlist` condition whose playlist the caller may not read. */
export async function checkRulePlaylists(access: ReadAccess, userId: number, rules: Rules): Promise<void> {
  for (const { id, path } of rulePlaylists(rules)) {
    try {
      await access.requireAccess(userId, id, 'read');
    } catch (error) {
      if (error instanceof ApiError && error.statusCode < 500) throw noSuchRulePlaylist(path, id);
      throw error;
    }
  }
}

/** The 409 of an edit of a smart playlist's songs by hand. */
export const smartSongsByHand = (id: number): string =>
  `Playlist ${id} is a smart playlist: its songs follow its rules and cannot be edited by hand. ` +
  'Change its "rules", or send {"rules": null} to keep its songs as an ordinary playlist first.';
