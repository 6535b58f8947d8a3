import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type SelectQueryBuilder } from 'kysely';
import { LRUCache } from 'lru-cache';
import { boundedWithShares } from '../concurrency/bounded.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { playlistAnswer, playlistAnswers, type PlaylistAnswer } from './playlist.answers.js';
import { playlistEntries, songsOfPlaylists, type PlaylistSongRow } from './playlist.repository.js';
import type { PlaylistWithSongs } from './playlist.schemas.js';

/**
 * Deletes the SQLite change log keeps. The trigger of migration 2026-11-24-serving writes the same number (frozen
 * there; a test checks that the two agree). A reader further behind forgets everything.
 */
export const CHANGE_LOG_LENGTH = 10_000;
/** Memory an entry takes beyond its bytes (the object, the key, the ETag, the cache's own bookkeeping). */
const ENTRY_OVERHEAD = 200;
/** Songs read in one statement: about 5 ms of SQLite's time, which runs on the event loop. */
const SONGS_PER_READ = 1000;

/** A bigint computed in SQL, typed loosely and read with Number(). */
type BigintColumn = number | string;

/**
 * The catalog version as a column, read in the same statement (and so the same snapshot) as the rows it comes with.
 */
/** The catalog's version, selected in the statement that reads a page's ids (see `page` and `pageOfIds`). */
export const catalogVersion = sql<BigintColumn>`(SELECT version FROM catalog_version)`.as('catalog_version');

/** A playlist with the version of it that was read (NaN: not known, so not kept). */
export type VersionedPlaylist = PlaylistWithSongs & { readonly version: number };

/** A kept answer, with what it was confirmed by. */
interface Entry extends PlaylistAnswer {
  readonly ownerId: number;
  /** The catalog version its songs were read at. */
  readonly catalog: number;
  /** The playlist's version (counted up by each edit) it was confirmed at. */
  readonly version: number;
}

/** The rows a page query returns: the page's playlist ids in page order, with whatever else the caller selects. */
export type PageRow = { readonly id: number };

/** What the cache reads when memory has no current answer (the unit tests wrap it to hold a read half-way). */
export interface AnswerReads {
  /** The owner's playlist with its songs, in one statement; undefined when the owner has no playlist of this id. */
  playlist(ownerId: number, id: number): Promise<PlaylistWithSongs | undefined>;
  /**
   * Those of these playlists that are still there, in id order, each with the version its songs were read at, and
   * the catalog version read after their songs (undefined when none is left). A playlist edited while its songs
   * were being read is read again whole.
   */
  playlists(
    ownerId: number,
    ids: readonly number[],
  ): Promise<{ playlists: VersionedPlaylist[]; catalog: number | undefined }>;
}

/**
 * The current answers of playlists, kept in memory and bounded by bytes, behind two doors: `playlist` for one of an
 * owner's playlists and `page` for the playlists a page query finds; and `forget`, which a write of this process
 * calls. Callers never learn whether an answer came from memory.
 *
 * An answer depends on its playlist being there, for this owner (a delete can come through the API, a user's
 * removal, any instance or the command line), and on the catalog version (counted up by a trigger whenever an import
 * changes a song's text). Entries are keyed by playlist id and hold their owner: another user's request never hits
 * nor makes an entry recent, so it costs what a request for a playlist that never existed costs and leaves the cache
 * as it was. An entry is served only once the database has confirmed that it is current:
 *
 * - a page: its ids are read from the database, with the catalog version in the same statement (this door adds the
 *   column to the caller's query), so a deleted playlist is never among them;
 * - one playlist on PostgreSQL: one indexed read of the owner's row, with the catalog version;
 * - one playlist on SQLite: the connection tells without I/O whether anything was committed since the last look
 *   (`Db.dataVersion`); only then are the deletes since read from the change log (`playlist_changes`, the last
 *   CHANGE_LOG_LENGTH of them), together with the catalog version.
 *
 * A newer catalog version forgets every entry. A read keeps what it read only when no delete or catalog change was
 * applied here since it began (a read begun before a delete must not store what it read after it), and when its
 * songs were read at the catalog version it was confirmed at (a long page is read in several statements that may
 * straddle an import: such answers are served, not kept).
 *
 * Editing plugs in without a new protocol: each playlist row gets a version that every edit counts up, and "confirm
 * the playlist is there" becomes "confirm its current version". The PostgreSQL confirmation, the page column and the
 * read of a page's playlists select that version beside the catalog version, and an entry is served only when both
 * match; on SQLite a new migration makes the change log's trigger fire on an update of the version as well, so that
 * catch-up forgets an edited playlist as it forgets a deleted one; the instance that made the edit calls `forget`.
 */
export class PlaylistCache {
  readonly #db: Db;
  readonly #reads: AnswerReads;
  readonly #entries: LRUCache<number, Entry> | undefined;
  /** The newest catalog version seen, -1 before the first. */
  #catalog = -1;
  /** Counts the times entries were forgotten for a delete or a catalog change. */
  #generation = 0;
  /** SQLite: the data_version and change log position the cache has caught up with. */
  #seenDataVersion: string | undefined;
  #lastChange: number | undefined;
  #catchingUp: { readonly dataVersion: string; readonly done: Promise<number> } | undefined;

  constructor(db: Db, maxBytes: number, reads: AnswerReads = databaseReads(db)) {
    this.#db = db;
    this.#reads = reads;
    this.#entries =
      maxBytes > 0
        ? new LRUCache({ maxSize: maxBytes, sizeCalculation: (entry) => entry.body.length + ENTRY_OVERHEAD })
        : undefined;
  }

  /** The current answer of the owner's playlist; undefined when the owner has no playlist of this id. */
  async playlist(ownerId: number, id: number): Promise<PlaylistAnswer | undefined> {
    let confirmed: { catalog: number; version: number | undefined } | undefined;
    if (this.#db.dialect === 'sqlite') {
      const caughtUp = this.#caughtUp();
      confirmed = { catalog: typeof caughtUp === 'number' ? caughtUp : await caughtUp, version: undefined };
    } else {
      confirmed = await this.#confirmRow(ownerId, id);
      if (confirmed === undefined) return undefined;
    }
    const { catalog, version } = confirmed;
    const kept = this.#kept(ownerId, id, catalog, version);
    if (kept !== undefined) return kept;
    const generation = this.#generation;
    const found = await this.#reads.playlist(ownerId, id);
    if (found === undefined) return undefined;
    const answer = playlistAnswer(found);
    // SQLite: catch-up forgets an edited playlist, so the version an entry holds is never compared there.
    this.#keep(ownerId, id, answer, catalog, version ?? 0, generation);
    return answer;
  }

  /**
   * The current answers of the owner's playlists that `query` finds, in its order, with the rows it returned. The
   * query reads the owner's page of playlist ids (as `id`); a playlist deleted since its id was read is left out.
   */
  async page<DB, TB extends keyof DB, R extends PageRow>(
    ownerId: number,
    query: SelectQueryBuilder<DB, TB, R>,
  ): Promise<{ rows: R[]; answers: PlaylistAnswer[] }> {
    // SQLite: catch up with the change log first, which forgets playlists edited elsewhere.
    if (this.#db.dialect === 'sqlite') await this.#caughtUp();
    const rows = await query.select(catalogVersion).$castTo<R & { catalog_version: BigintColumn }>().execute();
    const first = rows[0];
    if (first === undefined) return { rows, answers: [] };
    return { rows, answers: await this.#answersOf(ownerId, rows, Number(first.catalog_version)) };
  }

  /**
   * The current answers of the owner's playlists whose ids `read` finds, in its order: as `page`, for a read that
   * is not one query (a search's slices). `read` selects `catalogVersion` in the first statement that reads ids.
   */
  async pageOfIds<T>(
    ownerId: number,
    read: () => Promise<{ ids: readonly number[]; catalogVersion: BigintColumn | undefined; more: T }>,
  ): Promise<{ answers: PlaylistAnswer[]; more: T }> {
    if (this.#db.dialect === 'sqlite') await this.#caughtUp();
    const { ids, catalogVersion: catalog, more } = await read();
    if (ids.length === 0 || catalog === undefined) return { answers: [], more };
    return {
      answers: await this.#answersOf(
        ownerId,
        ids.map((id) => ({ id })),
        Number(catalog),
      ),
      more,
    };
  }

  /** The answers of these rows' playlists, read at this catalog version, from memory where they are current. */
  async #answersOf(ownerId: number, rows: readonly PageRow[], catalog: number): Promise<PlaylistAnswer[]> {
    this.#observe(catalog);
    const versions = await this.#currentVersions(rows.map((row) => row.id));
    const kept = rows.map((row) => this.#kept(ownerId, row.id, catalog, versions?.get(row.id)));
    const wanted = rows.flatMap((row, i) => (kept[i] === undefined ? [row.id] : []));
    if (wanted.length === 0) return kept as Entry[];

    const generation = this.#generation;
    const read = await this.#reads.playlists(ownerId, wanted);
    const answers = await playlistAnswers(read.playlists.map(({ version: _, ...playlist }) => playlist));
    const built = new Map<number, PlaylistAnswer>();
    read.playlists.forEach((playlist, i) => {
      built.set(playlist.id, answers[i]!);
      if (read.catalog === catalog)
        this.#keep(ownerId, playlist.id, answers[i]!, catalog, playlist.version, generation);
    });
    return rows.flatMap((row, i) => kept[i] ?? built.get(row.id) ?? []);
  }

  /** This process deleted or edited the playlist. */
  forget(id: number): void {
    this.#entries?.delete(id);
    this.#generation += 1;
  }

  /**
   * The entry, if it is the owner's, read at this catalog version and (PostgreSQL) at this playlist version. Only an
   * entry served makes it recent: another user's request leaves the cache exactly as it was.
   */
  #kept(ownerId: number, id: number, catalog: number, version: number | undefined): Entry | undefined {
    const entry = this.#entries?.peek(id);
    if (entry?.ownerId !== ownerId || entry.catalog !== catalog) return undefined;
    if (version !== undefined && entry.version !== version) return undefined;
    this.#entries?.get(id);
    return entry;
  }

  #keep(
    ownerId: number,
    id: number,
    answer: PlaylistAnswer,
    catalog: number,
    version: number,
    generation: number,
  ): void {
    if (generation !== this.#generation || catalog !== this.#catalog || Number.isNaN(version)) return;
    this.#entries?.set(id, { body: answer.body, etag: answer.etag, ownerId, catalog, version });
  }

  /**
   * PostgreSQL: the current versions of a page's playlists that have an entry here (an edit on another instance
   * is seen by its version), in one indexed read; undefined on SQLite, where catch-up has forgotten edited ones.
   */
  async #currentVersions(ids: readonly number[]): Promise<Map<number, number> | undefined> {
    if (this.#db.dialect === 'sqlite') return undefined;
    const cached = ids.filter((id) => this.#entries?.has(id) === true);
    const versions = new Map<number, number>();
    if (cached.length === 0) return versions;
    const rows = await this.#db.kysely
      .selectFrom('playlists')
      .select(['id', 'version'])
      .where('id', 'in', cached)
      .execute();
    for (const row of rows) versions.set(row.id, Number(row.version));
    return versions;
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

  /** PostgreSQL: the catalog version and the playlist's version, if the owner's playlist is there. */
  async #confirmRow(ownerId: number, id: number): Promise<{ catalog: number; version: number } | undefined> {
    const row = await this.#db.kysely
      .selectFrom('playlists')
      .select(['version', catalogVersion])
      .where('id', '=', id)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const catalog = Number(row.catalog_version);
    this.#observe(catalog);
    return { catalog, version: Number(row.version) };
  }

  /**
   * SQLite: brings the cache up to what every connection has committed and returns the catalog version; every entry
   * still kept is then current. Without I/O when nothing was committed since the last look.
   */
  #caughtUp(): number | Promise<number> {
    const dataVersion = this.#db.dataVersion!();
    if (dataVersion === this.#seenDataVersion) return this.#catalog;
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
      // Pages may have kept answers before this first look, and a delete since may already be in the log below its
      // end: forget them, and anything still being read.
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
        // Deletes the log no longer holds: anything may have gone.
        if (first.seq !== this.#lastChange + 1 || changes.length > CHANGE_LOG_LENGTH) this.#forgetAll();
        else {
          for (const change of changes) this.#entries?.delete(change.playlist_id);
          this.#generation += 1;
        }
        this.#lastChange = changes.at(-1)!.seq;
      }
    }
    this.#observe(version);
    this.#seenDataVersion = dataVersion;
    return this.#catalog;
  }
}

/** The playlists with their songs, from the entries in playlist and position order. */
function assemble(heads: readonly { id: number; name: string; version: number }[], rows: readonly PlaylistSongRow[]) {
  const byPlaylist = new Map<number, VersionedPlaylist>();
  const result = heads.map((h) => {
    const playlist: VersionedPlaylist = { id: h.id, name: h.name, version: h.version, songs: [] };
    byPlaylist.set(h.id, playlist);
    return playlist;
  });
  for (const row of rows)
    byPlaylist.get(row.playlist_id)?.songs.push({ id: row.id, title: row.title, artist: row.artist });
  return result;
}

/** What the cache reads from the database. */
export function databaseReads(db: Db): AnswerReads {
  const q = db.kysely;
  // Long pages one at a time: each takes the event loop for a while, and holds megabytes until it is sent. A user
  // holds one place among everyone's; the rest of their burst waits apart.
  const refuse = () => ApiError.unavailable('The service is busy with other large requests; try again shortly.', 1);
  const yours = () =>
    ApiError.tooManyRequests(1, 'Your previous large pages are still being read; wait for them first.');
  const longPages = boundedWithShares(
    { limit: 1, queue: 256, waitMs: 10_000, refuse },
    { limit: 1, queue: 32, refuse: yours },
  );

  /**
   * The songs of these playlists. Most pages fit in one read; a page of long playlists (up to 100 000 songs, 7 MB)
   * is read a piece at a time with the event loop free in between, and only one such page is built at once, so
   * that other users' small requests are not held up behind them (nor behind the garbage they leave).
   */
  async function songsOf(ownerId: number, ids: readonly number[]): Promise<PlaylistSongRow[]> {
    const rows = await songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ);
    if (rows.length < SONGS_PER_READ) return rows;
    return longPages(ownerId, async () => {
      for (let last = rows.at(-1); last !== undefined;) {
        await nextTurn();
        const after = { playlistId: last.playlist_id, position: last.position };
        const more = await songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ, after);
        for (const row of more) rows.push(row);
        last = more.length < SONGS_PER_READ ? undefined : more.at(-1);
      }
      return rows;
    });
  }

  async function playlist(ownerId: number, id: number): Promise<PlaylistWithSongs | undefined> {
    const rows = await playlistEntries(q, id, ownerId);
    const [first] = rows;
    if (first === undefined) return undefined;
    const songs = [];
    for (const row of rows) {
      if (row.song_id !== null) songs.push({ id: row.song_id, title: row.title!, artist: row.artist! });
    }
    return { id, name: first.name, songs };
  }

  return {
    playlist,

    async playlists(ownerId, ids) {
      // The versions, then the songs, then the heads: entries go only with their playlist and ids are never reused,
      // so a playlist whose head is still there at the version it had before its songs were read was read whole;
      // one deleted in between is left out rather than shown short, and one edited in between is read again alone
      // (one statement, so it cannot straddle another edit).
      const heads = () =>
        q.selectFrom('playlists').select(['id', 'name', 'version', catalogVersion]).where('id', 'in', ids).execute();
      const before = new Map((await heads()).map((h) => [h.id, Number(h.version)]));
      const rows = await songsOf(ownerId, ids);
      const after = (await heads()).map((h) => ({ ...h, version: Number(h.version) }));
      after.sort((a, b) => a.id - b.id);
      const assembled = assemble(after, rows);
      const playlists: VersionedPlaylist[] = [];
      for (const [i, head] of after.entries()) {
        if (before.get(head.id) === head.version) playlists.push(assembled[i]!);
        else {
          const again = await playlist(ownerId, head.id);
          if (again !== undefined) playlists.push({ ...again, version: Number.NaN });
        }
      }
      return { playlists, catalog: after[0] === undefined ? undefined : Number(after[0].catalog_version) };
    },
  };
}
