import type { Insertable } from 'kysely';
import type { PlaylistRevisionTable } from '../db/schema.js';
import type { ChangeKind } from '../domain/change-kinds.js';

/** A version's slots: its songs in order, and the entry of each. */
export interface Slots {
  readonly songIds: readonly number[];
  readonly entries: readonly number[];
}

/** A revision as a write records it: the playlist's name and slots after it, and its slots before (if any). */
export interface RevisionWrite {
  readonly playlistId: number;
  readonly ownerId: number;
  /** The user who made it. */
  readonly byId: number;
  readonly version: number;
  readonly change: ChangeKind;
  readonly name: string;
  /** The slots of the version before, undefined for a create (the revision is then a snapshot). */
  readonly before: Slots | undefined;
  readonly after: Slots;
  readonly at: number;
  /**
   * The `chain` of the version before, when the write has read it already (null: that version has no revision);
   * left out, it is read here.
   */
  readonly previousChain?: number | null;
  /** A smart playlist's rules at this version (JSON text); null or absent for a hand-made one. */
  readonly rules?: string | null | undefined;
}

/** One splice that turns `before` into `after`: `deleted` ids removed at `at`, then `inserted` put there. */
export interface Splice {
  readonly at: number;
  readonly deleted: number;
  readonly inserted: readonly number[];
}

/** The splice between two lists, found by trimming their common prefix and suffix: O(n), tiny for a small change. */
export function spliceOf(before: readonly number[], after: readonly number[]): Splice {
  const shorter = Math.min(before.length, after.length);
  let start = 0;
  while (start < shorter && before[start] === after[start]) start++;
  let end = 0;
  while (end < shorter - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
  return { at: start, deleted: before.length - start - end, inserted: after.slice(start, after.length - end) };
}

/** Song ids (or entries) as `playlist_revisions.songs` (`entries`) holds them. */
export const joinIds = (ids: readonly number[]) => ids.join(',');

/**
 * What history keeps of a revision: a splice of the version before, or the slots whole when there is no version
 * before (`previousChain` null) or when the splices since the last whole copy (their ids, and one for each) would add
 * up to more than the playlist's length. So any version is read from at most about its length plus one rows and twice
 * its ids. The splice is found on the entries (an entry always holds the same song), and the songs of its range go
 * with it.
 */
export function storedRevision(
  revision: RevisionWrite,
  previousChain: number | null,
): Insertable<PlaylistRevisionTable> {
  const { before, after } = revision;
  let stored = {
    splice_at: null as number | null,
    splice_deleted: null as number | null,
    songs: after.songIds,
    entries: after.entries,
    chain: 0,
  };
  if (before !== undefined && previousChain !== null) {
    const splice = spliceOf(before.entries, after.entries);
    // Each revision counts one besides its ids, so that a run of renames is also cut by a whole copy.
    const chain = previousChain + splice.deleted + splice.inserted.length + 1;
    if (chain <= after.songIds.length) {
      const songs = after.songIds.slice(splice.at, splice.at + splice.inserted.length);
      stored = { splice_at: splice.at, splice_deleted: splice.deleted, songs, entries: splice.inserted, chain };
    }
  }
  return {
    playlist_id: revision.playlistId,
    owner_id: revision.ownerId,
    version: revision.version,
    at: revision.at,
    by_id: revision.byId,
    change: revision.change,
    name: revision.name,
    song_count: after.songIds.length,
    splice_at: stored.splice_at,
    splice_deleted: stored.splice_deleted,
    songs: joinIds(stored.songs),
    entries: joinIds(stored.entries),
    chain: stored.chain,
    rules: revision.rules ?? null,
  };
}
