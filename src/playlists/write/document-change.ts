import type { EditKind } from '../../domain/change-kinds.js';
import { ApiError } from '../../http/errors.js';
import { keepCommon } from '../entry-order.js';
import { EditRefused } from '../playlist-edit.checks.js';
import type { PlaylistDocument } from '../playlist-edit.operations.js';
import type { Change, RulesChange } from './change.js';

/** An edit of the playlist's document: the playlist as it is now to the playlist as it will be, or an EditRefused. */
export type Edit = (current: PlaylistDocument) => PlaylistDocument;

/**
 * A change made on the playlist's document `{name, songs}` (a JSON Patch, a merge patch, a PUT, songs added, a restore
 * of a kept version), as a change the writer applies: `edit` answers the document after it; a refusal is a 400
 * (malformed) or a 409 (a conflict with the playlist as it is). `cost`: the songs and operations the request carries.
 */
export function documentChange(edit: Edit, kind: EditKind, cost: number, rules: RulesChange): Change<undefined> {
  return {
    kind,
    form: 'json',
    cost,
    rules,
    readsOnly: true,
    decide(current) {
      const document = {
        name: current.name,
        songs: current.entries.map((e) => ({ id: e.songId, entry: e.entry })),
      };
      const next = applied(edit, document);
      // A whole new list of songs (no slot kept by the edit itself) keeps the entries of the songs it keeps in order.
      const slots = next.songs.some((song) => song.entry !== undefined)
        ? next.songs.map((song) => ({ songId: song.id, entry: song.entry }))
        : keepCommon(
            current.entries,
            next.songs.map((song) => song.id),
          );
      return { name: next.name, slots, result: undefined };
    },
  };
}

function applied(edit: Edit, current: PlaylistDocument): PlaylistDocument {
  try {
    return edit(current);
  } catch (error) {
    if (!(error instanceof EditRefused)) throw error;
    throw error.reason === 'malformed' ? ApiError.badRequest(error.message) : ApiError.conflict(error.message);
  }
}
