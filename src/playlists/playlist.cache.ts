import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import type { PlaylistAnswer } from './playlist.json.js';

/** A playlist's answer kept in memory, with what it depends on. */
export interface CachedPlaylist extends PlaylistAnswer {
  readonly id: number;
  readonly ownerId: number;
  /** The catalog version its songs were read at (see `catalog_version`). */
  readonly version: number;
}

/** Memory an entry takes beyond its bytes (the object, the key, the ETag, the cache's own bookkeeping). */
const ENTRY_OVERHEAD = 200;
/** Deletes the SQLite log keeps (see the `playlist_changes` trigger); a reader further behind forgets everything. */
const CHANGE_LOG_LENGTH = 10_000;

/**
 * The answers of recently read playlists, bounded by bytes. A playlist never changes once created; only a delete
 * (through the API, a user's removal, any instance or the command line) or a catalog import that changes its
 * songs can change what it answers. An entry is served only when nothing of that kind can have happened:
 *
 * - every read that decides an answer also reads the catalog version, in the same statement, and an entry is
 *   served only for the version its songs were read at (`observe` forgets everything when the catalog moves on);
 * - a page or a search reads its playlist ids from the database, so a deleted playlist is never among them; a
 *   single playlist is confirmed by reading its row on PostgreSQL, while on SQLite `sync` asks the connection
 *   whether anything was committed (`PRAGMA data_version` and `total_changes()`, no I/O) and, only then, reads
 *   the deletes since the last look from `playlist_changes` and the catalog version.
 *
 * A read that began before a delete was applied must not store what it read after it: entries are stored only if
 * no delete was applied since the read began (`generation`).
 */
export class PlaylistCache {
  readonly #db: Db;
  readonly #entries: LRUCache<number, CachedPlaylist> | undefined;
  #version = -1;
  #generation = 0;
  /** SQLite: the data_version and change log position the cache has caught up with. */
  #seenDataVersion: string | undefined;
  #lastChange: number | undefined;
  #catchingUp: { readonly dataVersion: string; readonly done: Promise<number> } | undefined;

  constructor(db: Db, maxBytes: number) {
    this.#db = db;
    this.#entries =
      maxBytes > 0
        ? new LRUCache({ maxSize: maxBytes, sizeCalculation: (entry) => entry.json.length + ENTRY_OVERHEAD })
        : undefined;
  }

  /** Changes each time entries are forgotten because of a delete or a catalog change. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * SQLite: brings the cache up to what every connection has committed, and returns the catalog version, so that
   * `get` may then be trusted without reading the database. PostgreSQL: undefined (confirm with a read instead).
   */
  sync(): number | Promise<number> | undefined {
    const dataVersion = this.#db.dataVersion?.();
    if (dataVersion === undefined) return undefined;
    if (dataVersion === this.#seenDataVersion) return this.#version;
    // A look that began after the last commit covers this request too; one that began before it does not.
    if (this.#catchingUp?.dataVersion === dataVersion) return this.#catchingUp.done;
    const previous = this.#catchingUp?.done.catch(() => undefined);
    const done = (async () => {
      await previous;
      return this.#catchUp(dataVersion);
    })();
    const look = { dataVersion, done };
    this.#catchingUp = look;
    void done
      .finally(() => {
        if (this.#catchingUp === look) this.#catchingUp = undefined;
      })
      .catch(() => undefined);
    return done;
  }

  async #catchUp(dataVersion: string): Promise<number> {
    const q = this.#db.kysely;
    const { version } = await q.selectFrom('catalog_version').select('version').executeTakeFirstOrThrow();
    if (this.#lastChange === undefined) {
      const last = await q
        .selectFrom('playlist_changes')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirst();
      // Pages may have read answers before this first look, and a delete since may already be in the log below
      // its end: forget them, and anything still being read (the generation moves on).
      this.#forgetAll();
      this.#lastChange = last?.seq ?? 0;
    } else {
      const changes = await q
        .selectFrom('playlist_changes')
        .select(['seq', 'playlist_id'])
        .where('seq', '>', this.#lastChange)
        .orderBy('seq')
        .limit(CHANGE_LOG_LENGTH + 1)
        .execute();
      const first = changes[0];
      if (first !== undefined) {
        // Deletes the log no longer holds (it keeps the last 10 000): anything may have gone.
        if (first.seq !== this.#lastChange + 1 || changes.length > CHANGE_LOG_LENGTH) this.#forgetAll();
        else {
          for (const change of changes) this.#entries?.delete(change.playlist_id);
          this.#generation += 1;
        }
        this.#lastChange = changes.at(-1)!.seq;
      }
    }
    this.observe(version);
    this.#seenDataVersion = dataVersion;
    return this.#version;
  }

  /** A read saw this catalog version: if the catalog changed, every entry may answer differently. */
  observe(version: number): void {
    if (version <= this.#version) return;
    if (this.#version !== -1) this.#forgetAll();
    this.#version = version;
  }

  /** The playlist's entry, if it was read at this catalog version. */
  get(id: number, version: number): CachedPlaylist | undefined {
    const entry = this.#entries?.get(id);
    return entry?.version === version ? entry : undefined;
  }

  /** Keeps an entry read after `generation` was current, unless a delete or catalog change came since. */
  put(entry: CachedPlaylist, generation: number): void {
    if (generation === this.#generation && entry.version === this.#version) this.#entries?.set(entry.id, entry);
  }

  /** This process deleted the playlist. */
  forget(id: number): void {
    this.#entries?.delete(id);
    this.#generation += 1;
  }

  #forgetAll(): void {
    this.#entries?.clear();
    this.#generation += 1;
  }
}
