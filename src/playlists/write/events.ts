import type { FeedChange } from '../../domain/change-kinds.js';

/**
 * What happened to a playlist, told once on the instance that wrote it, after the write committed and before its
 * request is answered: a create, an edit that changed it (a refresh too), a delete, a restore, or a change of who
 * may read it (`shared`, `unshared`).
 */
export interface PlaylistChanged {
  readonly id: number;
  readonly ownerId: number;
  /** The version the write left; undefined for a delete and a change of members, which leave none. */
  readonly version: number | undefined;
  readonly kind: FeedChange;
  /** Who made the change (its owner for a refresh, a restore of a deleted playlist and a change of members). */
  readonly by: number;
  /** The smart playlists whose rules name it, read in the write's transaction (none for a create). */
  readonly followers: readonly number[];
  /** Users the change concerns besides its owner and members: a member just removed. */
  readonly others?: readonly number[];
}

export type PlaylistChangeListener = (event: PlaylistChanged) => void;

/**
 * The one place that tells what a write of a playlist did, to listeners wired in app.ts's services: what this
 * process remembers of playlists forgets it, and smart playlists that follow it are queued for a refresh. A listener
 * does its work after this returns; it never holds the write's answer, and its own failure is its own to report.
 */
export class PlaylistEvents {
  readonly #listeners: PlaylistChangeListener[] = [];

  on(listener: PlaylistChangeListener): void {
    this.#listeners.push(listener);
  }

  emit(event: PlaylistChanged): void {
    for (const listener of this.#listeners) listener(event);
  }
}
