import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import type { BigintColumn } from '../db/playlist-changes.js';
import type { Freshness } from './freshness.js';
import { largeRequests } from './large-requests.js';
import { databaseReads, type AnswerReads } from './playlist-answers.repository.js';
import type { CurrentGrant } from './playlist.access.js';
import { snapshotOf, snapshotsOf, type Snapshot } from './playlist.render.js';

/** Memory an entry takes beyond its bytes (the object, the key, the name, the cache's own bookkeeping). */
const ENTRY_OVERHEAD = 200;

/**
 * The bound on reading long pages: one at a time, since each takes the event loop for a while and holds megabytes
 * until it is sent.
 */
export const longPages = () => largeRequests(1, 'Your previous large pages are still being read; wait for them first.');

/** A page's snapshots, in page order, and the ids of their playlists (a playlist deleted meanwhile is left out). */
export interface PageSnapshots {
  readonly ids: number[];
  readonly snapshots: Snapshot[];
}

/**
 * The rows a page query returns: the page's playlist ids in page order, with whatever else the caller selects. A
 * query that also reads each playlist's `version` confirms the kept answers in the same statement (no second read
 * of versions on PostgreSQL).
 */
export type PageRow = { readonly id: number; readonly version?: number | string };

/**
 * The current snapshots of playlists (what their answers are rendered from), kept in memory and bounded by bytes,
 * behind two doors: `playlist` for one playlist the caller was granted (playlist.access.ts decides who may read it,
 * before this) and `page` for the playlists a page query finds. Callers never learn whether an answer came from
 * memory; only an entry served makes it recent.
 *
 * A snapshot is what a playlist at one version answers at one catalog version: the three numbers decide every byte,
 * so an entry is served only for the (playlist, version, catalog version) it was read at, and never needs to be
 * made untrue. Each playlist keeps its newest one. The door names the versions the database confirmed:
 *
 * - one playlist: the grant's, read with the access row, or on SQLite, when access was known without a read, from the
 *   change log the access caught up with (see Freshness);
 * - a page: its ids and versions are read from the database, with the catalog version in the same statement (this
 *   door adds the column to the caller's query), so a deleted playlist is never among them. A page whose query does
 *   not read versions (a search's) reads those with an entry in one more indexed read on PostgreSQL; on SQLite it
 *   catches up with the change log first, which forgets (Freshness tells this cache) a playlist changed anywhere, so
 *   that an entry left is the current one.
 *
 * A newer catalog version forgets every entry (none can be served again). For that SQLite door, a read keeps what it
 * read only when Freshness told of no delete, edit or membership change since it began (a read begun before an edit
 * must not store the older version after the log forgot it), and when its songs were read at the catalog version it
 * was confirmed at (a long page is read in several statements that may straddle an import: such answers are served,
 * not kept).
 */
export class PlaylistCache {
  readonly #db: Db;
  readonly #reads: AnswerReads;
  readonly #freshness: Freshness;
  /** Each playlist's newest snapshot kept, by playlist id. */
  readonly #entries: LRUCache<number, Snapshot> | undefined;
  /** The newest catalog version seen, -1 before the first. */
  #catalog = -1;

  constructor(db: Db, maxBytes: number, freshness: Freshness, reads: AnswerReads = databaseReads(db, longPages())) {
    this.#db = db;
    this.#reads = reads;
    this.#freshness = freshness;
    this.#entries =
      maxBytes > 0
        ? new LRUCache({ maxSize: maxBytes, sizeCalculation: (entry) => entry.json.length + ENTRY_OVERHEAD })
        : undefined;
    // A playlist changed: its entry will not be served again, and on SQLite an entry left must be the current one.
    freshness.listen({
      changed: (ids) => {
        for (const id of ids) this.#entries?.delete(id);
      },
      all: () => {
        this.#entries?.clear();
      },
    });
  }

  /** The snapshot of the granted playlist at the grant's versions; undefined when it was deleted since the grant. */
  async playlist(grant: Pick<CurrentGrant, 'id' | 'version' | 'catalogVersion'>): Promise<Snapshot | undefined> {
    const { id, version, catalogVersion: catalog } = grant;
    this.#observe(catalog);
    const kept = this.#kept(id, catalog, version);
    if (kept !== undefined) return kept;
    const generation = this.#freshness.generation;
    const found = await this.#reads.playlist(id);
    if (found === undefined) return undefined;
    // Labelled with the catalog version confirmed before the read (see Snapshot.catalogVersion).
    const snapshot = snapshotOf({ ...found, catalogVersion: catalog });
    this.#keep(snapshot, generation);
    return snapshot;
  }

  /**
   * The current snapshots of the playlists that `read` finds, in its order, with the rows it returned. `read` runs
   * one query of a page of ids the caller may read (as `id`), with the catalog version (`catalogVersion`) on every
   * row; a playlist deleted since its id was read is left out. `callerId` gives the caller their share of the bound
   * on long pages.
   */
  async page<R extends PageRow & { readonly catalog_version: BigintColumn }>(
    callerId: number,
    read: () => Promise<R[]>,
  ): Promise<{ rows: R[] } & PageSnapshots> {
    // The rows confirm the versions of the playlists and the catalog. SQLite: still the request's one catch-up with
    // the change log (a list asks no access), so that what memory holds of playlists changed elsewhere goes first.
    await this.#freshness.caughtUp();
    const rows = await read();
    const first = rows[0];
    if (first === undefined) return { rows, ids: [], snapshots: [] };
    return { rows, ...(await this.#snapshotsOf(callerId, rows, Number(first.catalog_version))) };
  }

  /**
   * The current snapshots of the playlists whose ids `read` finds, in its order: as `page`, for a read that is not one
   * query (a search's slices). `read` selects `catalogVersion` in the first statement that reads ids. When it also
   * read the playlists' current `versions` (PostgreSQL, a kept search), they confirm the kept answers, and an id
   * without one (deleted since) is left out; otherwise they are read here (see `#currentVersions`). `read` is given
   * what every connection had committed as this request caught up (SQLite's `Freshness.committed`; undefined on
   * PostgreSQL).
   */
  async pageOfIds<T>(
    callerId: number,
    read: (committed: string | undefined) => Promise<{
      ids: readonly number[];
      catalogVersion: BigintColumn | undefined;
      more: T;
      versions?: ReadonlyMap<number, number> | undefined;
    }>,
  ): Promise<PageSnapshots & { more: T }> {
    // SQLite: catch up with the change log first, which forgets playlists changed anywhere (no versions are read).
    await this.#freshness.caughtUp();
    const { ids, catalogVersion: catalog, more, versions } = await read(this.#freshness.committed);
    if (ids.length === 0 || catalog === undefined) return { ids: [], snapshots: [], more };
    const rows: PageRow[] =
      versions === undefined
        ? ids.map((id) => ({ id }))
        : ids.flatMap((id) => {
            const version = versions.get(id);
            return version === undefined ? [] : [{ id, version }];
          });
    const found = await this.#snapshotsOf(callerId, rows, Number(catalog));
    return { ...found, more };
  }

  /** The snapshots of these rows' playlists, read at this catalog version, from memory where they are current. */
  async #snapshotsOf(callerId: number, rows: readonly PageRow[], catalog: number): Promise<PageSnapshots> {
    this.#observe(catalog);
    const versions = rows.every((row) => row.version !== undefined)
      ? new Map(rows.map((row) => [row.id, Number(row.version)]))
      : await this.#currentVersions(rows.map((row) => row.id));
    const kept = rows.map((row) => this.#kept(row.id, catalog, versions?.get(row.id)));
    const wanted = rows.flatMap((row, i) => (kept[i] === undefined ? [row.id] : []));
    if (wanted.length === 0) return { ids: rows.map((row) => row.id), snapshots: kept as Snapshot[] };

    const generation = this.#freshness.generation;
    const read = await this.#reads.playlists(callerId, wanted);
    // Labelled with the catalog version the page confirmed before its songs were read (see Snapshot.catalogVersion).
    const snapshots = await snapshotsOf(read.playlists.map((playlist) => ({ ...playlist, catalogVersion: catalog })));
    const built = new Map<number, Snapshot>();
    read.playlists.forEach((playlist, i) => {
      built.set(playlist.id, snapshots[i]!);
      if (read.catalog === catalog && playlist.keep) this.#keep(snapshots[i]!, generation);
    });
    const found = rows.flatMap((row, i) => {
      const snapshot = kept[i] ?? built.get(row.id);
      return snapshot === undefined ? [] : [{ id: row.id, snapshot }];
    });
    return { ids: found.map((f) => f.id), snapshots: found.map((f) => f.snapshot) };
  }

  /**
   * The entry, if it was read at this catalog version and at this playlist version (where undefined, SQLite's search
   * pages: the current one, which the change log leaves).
   */
  #kept(id: number, catalog: number, version: number | undefined): Snapshot | undefined {
    const entry = this.#entries?.peek(id);
    if (entry?.catalogVersion !== catalog) return undefined;
    if (version !== undefined && entry.version !== version) return undefined;
    // Only an entry served makes it recent.
    this.#entries?.get(id);
    return entry;
  }

  #keep(snapshot: Snapshot, generation: number): void {
    if (generation !== this.#freshness.generation || snapshot.catalogVersion !== this.#catalog) return;
    this.#entries?.set(snapshot.id, snapshot);
  }

  /**
   * PostgreSQL: the current versions of a page's playlists that have an entry here (an edit on another instance
   * is seen by its version), in one indexed read, for a page whose query did not read them (a search's); undefined
   * on SQLite, where catch-up has forgotten edited ones.
   */
  async #currentVersions(ids: readonly number[]): Promise<Map<number, number> | undefined> {
    if (this.#db.dialect === 'sqlite') return undefined;
    const cached = ids.filter((id) => this.#entries?.has(id) === true);
    if (cached.length === 0) return new Map();
    return this.#reads.versions(cached);
  }

  /** A read saw this catalog version: if the catalog changed, every entry may answer differently. */
  #observe(catalog: number): void {
    if (catalog <= this.#catalog) return;
    this.#entries?.clear();
    this.#catalog = catalog;
  }
}
