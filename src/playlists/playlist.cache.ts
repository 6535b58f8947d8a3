import { type SelectQueryBuilder } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import { catalogVersion, type BigintColumn, type ChangeLog } from '../db/playlist-changes.js';
import { databaseReads, type AnswerReads } from './playlist-answers.repository.js';
import type { Grant } from './playlist.access.js';
import { playlistAnswer, playlistAnswers, type PlaylistAnswer } from './playlist.answers.js';

/** Memory an entry takes beyond its bytes (the object, the key, the ETag, the cache's own bookkeeping). */
const ENTRY_OVERHEAD = 200;

/** A kept answer, with what it was confirmed by. */
interface Entry extends PlaylistAnswer {
  /** The catalog version its songs were read at. */
  readonly catalog: number;
  /** The playlist's version (counted up by each edit) it was read at. */
  readonly version: number;
}

/** A page's answers, in page order, and the ids of their playlists (a playlist deleted meanwhile is left out). */
export interface Answers {
  readonly ids: number[];
  readonly answers: PlaylistAnswer[];
}

/**
 * The rows a page query returns: the page's playlist ids in page order, with whatever else the caller selects. A
 * query that also reads each playlist's `version` confirms the kept answers in the same statement (no second read
 * of versions on PostgreSQL).
 */
export type PageRow = { readonly id: number; readonly version?: number | string };

/**
 * The current answers of playlists, kept in memory by playlist id and bounded by bytes, behind two doors: `playlist`
 * for one playlist the caller was granted (playlist.access.ts decides who may read it, before this) and `page` for
 * the playlists a page query finds; and `forget`, which a write of this process calls. Callers never learn whether
 * an answer came from memory; only an entry served makes it recent.
 *
 * An answer depends on its playlist being there at the version it was read at (a delete or an edit can come through
 * the API, a user's removal, any instance or the command line), and on the catalog version (counted up by a trigger
 * whenever an import changes a song's text). An entry is served only once the database has confirmed that it is
 * current:
 *
 * - one playlist: the versions of the playlist and of the catalog read with the access check, or on SQLite, when
 *   access was known without a read, the change log caught up with (without I/O when nothing was committed since
 *   the last look), which forgets deleted and edited playlists;
 * - a page: its ids are read from the database, with the catalog version in the same statement (this door adds the
 *   column to the caller's query), so a deleted playlist is never among them; on PostgreSQL the versions of those
 *   with an entry are read in one more indexed read, on SQLite the change log is caught up with first.
 *
 * A newer catalog version forgets every entry. A read keeps what it read only when no delete, edit or catalog change
 * was applied here since it began (a read begun before a delete must not store what it read after it), and when its
 * songs were read at the catalog version it was confirmed at (a long page is read in several statements that may
 * straddle an import: such answers are served, not kept).
 */
export class PlaylistCache {
  readonly #db: Db;
  readonly #reads: AnswerReads;
  readonly #changes: ChangeLog | undefined;
  readonly #entries: LRUCache<number, Entry> | undefined;
  /** The newest catalog version seen, -1 before the first. */
  #catalog = -1;
  /** Counts the times entries were forgotten for a delete, an edit or a catalog change. */
  #generation = 0;

  constructor(db: Db, maxBytes: number, changes: ChangeLog | undefined, reads: AnswerReads = databaseReads(db)) {
    this.#db = db;
    this.#reads = reads;
    this.#changes = changes;
    this.#entries =
      maxBytes > 0
        ? new LRUCache({ maxSize: maxBytes, sizeCalculation: (entry) => entry.body.length + ENTRY_OVERHEAD })
        : undefined;
    changes?.listen({
      changed: (ids) => {
        for (const id of ids) this.#entries?.delete(id);
        this.#generation += 1;
      },
      all: () => {
        this.#forgetAll();
      },
    });
  }

  /** The current answer of the granted playlist; undefined when it was deleted since the grant. */
  async playlist(grant: Grant): Promise<PlaylistAnswer | undefined> {
    const { id, version } = grant;
    // SQLite: catch up with the change log (without I/O when nothing was committed), which forgets changed playlists.
    const caughtUp = this.#changes?.caughtUp();
    const seen = caughtUp instanceof Promise ? await caughtUp : caughtUp;
    const catalog = grant.catalog ?? seen;
    if (catalog === undefined) throw new Error('A grant read without versions needs the change log.');
    this.#observe(catalog);
    const kept = this.#kept(id, catalog, version);
    if (kept !== undefined) return kept;
    const generation = this.#generation;
    const found = await this.#reads.playlist(id);
    if (found === undefined) return undefined;
    const { version: read, ...playlist } = found;
    const answer = playlistAnswer(playlist);
    this.#keep(id, answer, catalog, read, generation);
    return answer;
  }

  /**
   * The current answers of the playlists that `query` finds, in its order, with the rows it returned. The query
   * reads a page of ids the caller may read (as `id`); a playlist deleted since its id was read is left out.
   * `callerId` gives the caller their share of the bound on long pages.
   */
  async page<DB, TB extends keyof DB, R extends PageRow>(
    callerId: number,
    query: SelectQueryBuilder<DB, TB, R>,
  ): Promise<{ rows: R[] } & Answers> {
    // SQLite: catch up with the change log first, which forgets playlists edited elsewhere.
    await this.#changes?.caughtUp();
    const rows = await query.select(catalogVersion).$castTo<R & { catalog_version: BigintColumn }>().execute();
    const first = rows[0];
    if (first === undefined) return { rows, ids: [], answers: [] };
    return { rows, ...(await this.#answersOf(callerId, rows, Number(first.catalog_version))) };
  }

  /**
   * The current answers of the playlists whose ids `read` finds, in its order: as `page`, for a read that is not one
   * query (a search's slices). `read` selects `catalogVersion` in the first statement that reads ids.
   */
  async pageOfIds<T>(
    callerId: number,
    read: () => Promise<{ ids: readonly number[]; catalogVersion: BigintColumn | undefined; more: T }>,
  ): Promise<Answers & { more: T }> {
    await this.#changes?.caughtUp();
    const { ids, catalogVersion: catalog, more } = await read();
    if (ids.length === 0 || catalog === undefined) return { ids: [], answers: [], more };
    const found = await this.#answersOf(
      callerId,
      ids.map((id) => ({ id })),
      Number(catalog),
    );
    return { ...found, more };
  }

  /** The answers of these rows' playlists, read at this catalog version, from memory where they are current. */
  async #answersOf(callerId: number, rows: readonly PageRow[], catalog: number): Promise<Answers> {
    this.#observe(catalog);
    const versions = rows.every((row) => row.version !== undefined)
      ? new Map(rows.map((row) => [row.id, Number(row.version)]))
      : await this.#currentVersions(rows.map((row) => row.id));
    const kept = rows.map((row) => this.#kept(row.id, catalog, versions?.get(row.id)));
    const wanted = rows.flatMap((row, i) => (kept[i] === undefined ? [row.id] : []));
    if (wanted.length === 0) return { ids: rows.map((row) => row.id), answers: kept as Entry[] };

    const generation = this.#generation;
    const read = await this.#reads.playlists(callerId, wanted);
    const answers = await playlistAnswers(read.playlists.map(({ version: _, ...playlist }) => playlist));
    const built = new Map<number, PlaylistAnswer>();
    read.playlists.forEach((playlist, i) => {
      built.set(playlist.id, answers[i]!);
      if (read.catalog === catalog) this.#keep(playlist.id, answers[i]!, catalog, playlist.version, generation);
    });
    const found = rows.flatMap((row, i) => {
      const answer = kept[i] ?? built.get(row.id);
      return answer === undefined ? [] : [{ id: row.id, answer }];
    });
    return { ids: found.map((f) => f.id), answers: found.map((f) => f.answer) };
  }

  /** This process deleted or edited the playlist. */
  forget(id: number): void {
    this.#entries?.delete(id);
    this.#generation += 1;
  }

  /** The entry, if it was read at this catalog version and (where known) at this playlist version. */
  #kept(id: number, catalog: number, version: number | undefined): Entry | undefined {
    const entry = this.#entries?.peek(id);
    if (entry?.catalog !== catalog) return undefined;
    if (version !== undefined && entry.version !== version) return undefined;
    // Only an entry served makes it recent.
    this.#entries?.get(id);
    return entry;
  }

  #keep(id: number, answer: PlaylistAnswer, catalog: number, version: number, generation: number): void {
    if (generation !== this.#generation || catalog !== this.#catalog || Number.isNaN(version)) return;
    this.#entries?.set(id, { body: answer.body, etag: answer.etag, catalog, version });
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
    if (this.#catalog !== -1) this.#forgetAll();
    this.#catalog = catalog;
  }

  #forgetAll(): void {
    this.#entries?.clear();
    this.#generation += 1;
  }
}
