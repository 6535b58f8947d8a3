import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import { ChangeLog, type ChangeListener } from '../db/playlist-changes.js';
import type { MemberRole, Role } from '../domain/roles.js';

/*
 * What this process remembers of playlists, and when it may trust it: `Freshness` catches up with the change log and
 * tells every memory what to forget; `RememberedStandings`, below, is the memory that lets access skip its read.
 */

/** A memory of this process that holds what a playlist was: it forgets what a change makes untrue. */
export type Forgetting = ChangeListener;

/**
 * The one place that decides whether what this process remembers of playlists is still true: it catches up with the
 * change log (SQLite: every connection's deletes, edits and membership changes, and the catalog version) and tells
 * every memory that depends on it what to forget, the standings access remembers (RememberedStandings, below) and the
 * answers' snapshots (playlist.cache.ts). A write of this process tells it too (`forget`), before the log does.
 *
 * `generation` counts every telling: a read that began at one generation keeps what it read only if none came since
 * (a read begun before a delete must not store what it read after it). A request catches up at most once: access
 * does when it answers from memory, a page of search results before it reads ids; a read that confirmed versions
 * itself (PostgreSQL's every read, SQLite's access reads and page queries) needs no catch-up.
 */
export class Freshness {
  readonly #changes: ChangeLog | undefined;
  readonly #memories: Forgetting[] = [];
  #generation = 0;

  constructor(db: Db) {
    this.#changes =
      db.dialect === 'sqlite'
        ? new ChangeLog(db, {
            changed: (ids) => {
              this.#tell((memory) => {
                memory.changed(ids);
              });
            },
            all: () => {
              this.#tell((memory) => {
                memory.all();
              });
            },
          })
        : undefined;
  }

  /** Whether there is a change log to catch up with (SQLite), so that what is remembered can be trusted. */
  get logged(): boolean {
    return this.#changes !== undefined;
  }

  /**
   * SQLite: what every connection had committed at the last catch-up, as `ChangeLog.seen` (a value that stays the
   * same while nothing is committed anywhere); undefined on PostgreSQL and before the first catch-up.
   */
  get committed(): string | undefined {
    return this.#changes?.seen;
  }

  /** Counts the times memories were told to forget. */
  get generation(): number {
    return this.#generation;
  }

  /** Adds a memory that hears what to forget. */
  listen(memory: Forgetting): void {
    this.#memories.push(memory);
  }

  /**
   * SQLite: brings every memory up to what every connection has committed (without I/O when nothing was), and returns
   * the catalog version; undefined on PostgreSQL, which has no change log (its reads confirm versions themselves).
   */
  caughtUp(): number | Promise<number> | undefined {
    return this.#changes?.caughtUp();
  }

  /** A write of this process deleted or edited the playlist: every memory forgets it now. */
  forget(id: number): void {
    this.#tell((memory) => {
      memory.changed([id]);
    });
  }

  #tell(what: (memory: Forgetting) => void): void {
    for (const memory of this.#memories) what(memory);
    this.#generation += 1;
  }
}

/** What of Freshness a memory uses: its generation, and being told what to forget. */
export type Told = Pick<Freshness, 'generation' | 'listen'>;

/** A caller's standing towards a playlist that is there, and the playlist's version it was confirmed at. */
export interface Standing {
  readonly ownerId: number;
  /** The caller's role. */
  readonly role: Role;
  /** The owner's name, for a member; undefined for the owner. */
  readonly ownerName: string | undefined;
  /** The playlist's version (counted up by each edit). */
  readonly version: number;
}

/** A standing as an access read finds it: the owner's name and version with the caller's role if a member. */
export interface ReadStanding {
  readonly ownerId: number;
  readonly ownerName: string;
  /** The caller's role when they are a member, null when they own the playlist. */
  readonly memberRole: MemberRole | null;
  readonly version: number;
}

/** What is remembered of one playlist: its owner, its version and the members seen, by user. */
interface Remembered {
  readonly ownerId: number;
  /** An owner's name never changes. */
  readonly ownerName: string;
  version: number;
  readonly members: Map<number, MemberRole>;
}

/** Playlists and their members remembered, counting one for a playlist and one for each member. */
const STANDINGS_KEPT = 200_000;

/**
 * SQLite: the owners and members of playlists seen by access reads, with each playlist's version, so that a caller
 * seen before is known without a read. Trusted only once the change log is caught up with (Freshness): every delete,
 * edit and membership write logs its playlist, which forgets everything remembered of it, so a remembered playlist's
 * version is its current one, a removed member or a changed role takes effect at that user's next request, on every
 * instance, and a deleted playlist is read (and refused) again. When the log was too far behind, all is forgotten.
 */
export class RememberedStandings {
  readonly #freshness: Told;
  readonly #playlists = new LRUCache<number, Remembered>({
    maxSize: STANDINGS_KEPT,
    sizeCalculation: (remembered) => remembered.members.size + 1,
  });

  constructor(freshness: Told) {
    this.#freshness = freshness;
    freshness.listen({
      changed: (ids) => {
        for (const id of ids) this.#playlists.delete(id);
      },
      all: () => {
        this.#playlists.clear();
      },
    });
  }

  /** The caller's remembered standing; call once the change log is caught up with. */
  find(userId: number, id: number): Standing | undefined {
    // peek, then get only for its owner or a member: another user's request leaves what is remembered as it was.
    const remembered = this.#playlists.peek(id);
    if (remembered === undefined) return undefined;
    const { ownerId, version } = remembered;
    if (ownerId === userId) {
      this.#playlists.get(id);
      return { ownerId, role: 'owner', ownerName: undefined, version };
    }
    const role = remembered.members.get(userId);
    if (role === undefined) return undefined;
    this.#playlists.get(id);
    return { ownerId, role, ownerName: remembered.ownerName, version };
  }

  /**
   * Remembers a standing an access read found, unless the change log told of a change since the read began (at
   * `generation`): the playlist or the membership may be gone.
   */
  remember(userId: number, id: number, found: ReadStanding, generation: number): void {
    if (generation !== this.#freshness.generation) return;
    const remembered = this.#playlists.peek(id) ?? {
      ownerId: found.ownerId,
      ownerName: found.ownerName,
      version: found.version,
      members: new Map<number, MemberRole>(),
    };
    // Whichever read is newer, no change to the playlist was caught up with since either began: one not caught up
    // with yet will forget it.
    remembered.version = found.version;
    if (found.memberRole !== null && found.ownerId !== userId) remembered.members.set(userId, found.memberRole);
    // Set (again), so that the cache counts a member just added.
    this.#playlists.set(id, remembered);
  }
}
