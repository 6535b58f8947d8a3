import { sql } from 'kysely';
import type { Db } from './database.js';

/**
 * Deletes and edits the SQLite change log keeps. The trigger of migration 2026-11-24-serving writes the same number
 * (frozen there; a test checks that the two agree). A reader further behind forgets everything.
 */
export const CHANGE_LOG_LENGTH = 10_000;

/** A bigint computed in SQL, typed loosely and read with Number(). */
export type BigintColumn = number | string;

/** The catalog's version as a column, read in the same statement (and so the same snapshot) as the rows it comes with. */
export const catalogVersion = sql<BigintColumn>`(SELECT version FROM catalog_version)`.as('catalog_version');

/** The catalog's version now: read before songs, it labels the answers made of them (playlist.render.ts). */
export async function readCatalogVersion(q: Db['kysely']): Promise<number> {
  const { version } = await q.selectFrom('catalog_version').select('version').executeTakeFirstOrThrow();
  return version;
}

/** What the change log tells when it is caught up with (src/playlists/freshness.ts hears it, the one listener). */
export interface ChangeListener {
  /** These playlists were deleted or edited. */
  changed(ids: readonly number[]): void;
  /** Anything may have changed (the log no longer holds every change since the last look, or this is the first). */
  all(): void;
}

/**
 * SQLite: what every connection has committed, as the playlists changed since the last look (`playlist_changes`,
 * the last CHANGE_LOG_LENGTH deletes and edits, written by a trigger) and the catalog version. The connection tells
 * without I/O whether anything was committed since (`Db.dataVersion`); only then is the log read. Its one listener
 * (the playlists' Freshness, which tells every memory that depends on it) hears what changed before `caughtUp`
 * settles.
 */
export class ChangeLog {
  readonly #db: Db;
  readonly #listener: ChangeListener;
  #catalog = -1;
  #seenDataVersion: string | undefined;
  #lastChange: number | undefined;
  #catchingUp: { readonly dataVersion: string; readonly done: Promise<number> } | undefined;

  constructor(db: Db, listener: ChangeListener) {
    this.#db = db;
    this.#listener = listener;
  }

  /**
   * What every connection had committed when the listener was last brought up to it (`Db.dataVersion`), undefined
   * before the first look: the same value later means that nothing was committed since.
   */
  get seen(): string | undefined {
    return this.#seenDataVersion;
  }

  /** Brings the listener up to what every connection has committed, and returns the catalog version. */
  caughtUp(): number | Promise<number> {
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
    const version = await readCatalogVersion(q);
    if (this.#lastChange === undefined) {
      const last = await q
        .selectFrom('playlist_changes')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirst();
      // Pages may have kept answers before this first look, and a delete since may already be in the log below its
      // end: forget them, and anything still being read.
      this.#listener.all();
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
        // Changes the log no longer holds: anything may have gone.
        const lost = first.seq !== this.#lastChange + 1 || changes.length > CHANGE_LOG_LENGTH;
        const ids = changes.map((change) => change.playlist_id);
        if (lost) this.#listener.all();
        else this.#listener.changed(ids);
        this.#lastChange = changes.at(-1)!.seq;
      }
    }
    this.#catalog = version;
    this.#seenDataVersion = dataVersion;
    return this.#catalog;
  }
}
