import { generateNKeysBetween } from 'fractional-indexing';
import type { Db } from '../../db/database.js';
import type { ChangeKind, EditKind } from '../../domain/change-kinds.js';
import { revisionRow, type Slots } from '../../history/revision.repository.js';
import { addPlaylistDocument } from '../../search/search.repository.js';
import { playlistDocument } from '../../domain/search-text.js';
import { namedPlaylists, type Rules } from '../../smart/rules.js';
import { smartDependents, writeSmartSources } from '../../smart/smart.repository.js';
import { findSongsByIds } from '../../songs/song.repository.js';
import { releasePlaylistSlot, reservePlaylistSlot } from '../../users/user.repository.js';
import { planEntries, type Entry, type StoredEntry, type WantedSlot } from '../entry-order.js';
import { notInCatalog, quotaReached } from '../playlist.errors.js';
import { libraryChanged } from '../../library/library.repository.js';
import { PlaylistEvents } from './events.js';
import { lazySnapshotOf, type Snapshot } from '../playlist.render.js';
import {
  createPlaylistAtOnce,
  deletePlaylist,
  EDIT_LOCK_WAIT_MS,
  insertPlaylist,
  insertRevision,
  playlistAsItIs,
  playlistForWrite,
  saveChanges,
  saveChangesAtOnce,
  undeletePlaylist,
  writeEntries,
  writeOrigins,
  writeRulesStatus,
  type KeptEntries,
  type PlaylistForWrite,
  type RowChanges,
} from './store.repository.js';

/** A song as a playlist's answers show it. */
export interface ShownSong {
  readonly id: number;
  readonly title: string;
  readonly artist: string;
}

/**
 * A playlist as a write left it: the snapshot every answer is rendered from (playlist.render.ts; its JSON written when
 * first read, so an answer that does not show it never writes it), and its entries with their songs, in order.
 */
export interface Written {
  readonly snapshot: Snapshot;
  /** Its entries with their songs, made when read (a brief answer does not). */
  readonly entries: readonly (Entry & { readonly song: ShownSong })[];
  /** How many songs it has. */
  readonly songCount: number;
  /** A smart playlist's rules and what its answers say beside them, as stored (JSON text); null for none. */
  readonly rules: string | null;
  readonly rulesStatus: string | null;
}

/**
 * What an edit makes of the playlist: its name and slots, and what the caller answers besides; or nothing. `rules`:
 * a smart playlist's rules after it (JSON text as `readRules` gave them), null to make it a hand-made playlist;
 * absent, the rules stay as they are.
 */
export type Decision<T> =
  | {
      readonly name: string;
      readonly slots: readonly WantedSlot[];
      readonly result: T;
      readonly rules?: string | null | undefined;
      /** What a smart playlist's answers say beside its rules (JSON text), null for nothing; absent, as it is (or none
       * when the rules change). */
      readonly rulesStatus?: string | null | undefined;
    }
  | { readonly unchanged: true; readonly result: T };

/** An edit's outcome: the playlist as it is after it (a new version when it changed), and the caller's result. */
export interface Edited<T> extends Written {
  readonly changed: boolean;
  readonly result: T;
}

/** What an edit's save answers when it wrote nothing: the playlist was not at the version the edit was made on. */
const NOT_SAVED = Symbol('not saved');

/** A song of the catalog as a write reads it (the search document takes its genre too). */
type CatalogSong = ShownSong & { readonly genre: string };

/**
 * How many entries, of all playlists together, the store keeps as it last wrote them (a playlist of 10 000 songs
 * keeps about a megabyte), and how many of the catalog's songs (about 150 bytes each): some 25 MB at most.
 */
const KEPT_ENTRIES = 200_000;
const SONGS_KEPT = 50_000;

/** A playlist as this process last wrote (or read for a write) it: its version, entries and search document. */
interface KeptPlaylist extends KeptEntries {
  /** Undefined when not known. */
  readonly doc: string | undefined;
}

/**
 * The playlists this process wrote last, the most recent last, up to `limit` entries in all. A write that finds its
 * playlist at the version kept (one row read) starts from the entries kept instead of reading them all, and leaves
 * the search document alone when it comes out the same: the work of an edit of a long playlist is then its change's
 * (with a few passes over the list in memory). Another instance's write, or this process's, changes the version, so
 * a stale copy is never used; it is only read again.
 */
class KeptPlaylists {
  readonly #kept = new Map<number, KeptPlaylist>();
  #entries = 0;
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get(id: number): KeptPlaylist | undefined {
    return this.#kept.get(id);
  }

  set(id: number, playlist: KeptPlaylist): void {
    this.forget(id);
    if (playlist.entries.length > this.#limit) return;
    this.#kept.set(id, playlist);
    this.#entries += playlist.entries.length;
    for (const [oldest, { entries }] of this.#kept) {
      if (this.#entries <= this.#limit) break;
      this.#kept.delete(oldest);
      this.#entries -= entries.length;
    }
  }

  forget(id: number): void {
    const gone = this.#kept.get(id);
    if (gone === undefined) return;
    this.#kept.delete(id);
    this.#entries -= gone.entries.length;
  }
}

/** The playlist as an edit sees it, in its transaction. */
export type Current = PlaylistForWrite;

/** What an undelete writes: the name and slots of the version it brings back, and the slots of the version before. */
export interface Undelete {
  readonly name: string;
  /** The rules of the version it brings back (JSON text), null for a hand-made one. */
  readonly rules: string | null;
  readonly songIds: readonly number[];
  /** The entries that version had; undefined when it was recorded before entries (new ones are given). */
  readonly entries: readonly number[] | undefined;
  /** The version the delete left (its slots when known), after which the undelete is a revision. */
  readonly newest: number;
  readonly last: Slots | undefined;
}

/**
 * The one module that writes playlists: create, edit (every kind: merge patch, JSON Patch, PUT, songs added, a
 * restore, a merged edit), delete and undelete. Each runs in one transaction (SQLite's group commit, a transaction
 * on PostgreSQL) that writes the row, the entries that changed, the revision and the search document, and decides
 * the new version; each returns the playlist as it left it, which every answer is rendered from. Who may write and
 * whether a request holds is the caller's; the caller's checks that need the transaction run inside it, through the
 * functions given.
 */
export function playlistStore(db: Db) {
  const q = db.kysely;
  const kept = new KeptPlaylists(KEPT_ENTRIES);
  /** The catalog's songs this process has read, as they are at one catalog version (none kept past SONGS_KEPT). */
  let catalog = { version: -1, songs: new Map<number, CatalogSong>() };

  /**
   * The catalog's songs of these ids at `catalogVersion`, in their order; 422 naming the ids the catalog does not
   * have. Only the songs not read before at that version are read: an edit of a long playlist reads the songs it adds.
   */
  async function catalogSongs(trx: Db['kysely'], ids: readonly number[], catalogVersion: number) {
    if (catalog.version !== catalogVersion || catalog.songs.size > SONGS_KEPT) {
      catalog = { version: catalogVersion, songs: new Map() };
    }
    const { songs } = catalog;
    const missing = [...new Set(ids.filter((id) => !songs.has(id)))];
    if (missing.length > 0) {
      for (const song of await findSongsByIds(trx, missing)) songs.set(song.id, song);
      const unknown = missing.filter((id) => !songs.has(id));
      if (unknown.length > 0) throw notInCatalog(unknown);
    }
    return ids.map((id) => songs.get(id)!);
  }

  const events = new PlaylistEvents();

  function written<Extra extends object = object>(
    id: number,
    version: number,
    catalogVersion: number,
    name: string,
    entries: readonly Entry[],
    songs: readonly ShownSong[],
    rules: string | null,
    rulesStatus: string | null = null,
    extra?: Extra,
  ): Written & Extra {
    // The songs as answers show them, and the entries with them, made when an answer shows them (a brief one does not).
    let shown: ShownSong[] | undefined;
    const shownSongs = () => (shown ??= songs.map(({ id: songId, title, artist }) => ({ id: songId, title, artist })));
    let withSongs: Written['entries'] | undefined;
    const read = {
      id,
      version,
      catalogVersion,
      name,
      get songs() {
        return shownSongs();
      },
      rules,
      rulesStatus,
    };
    return {
      snapshot: lazySnapshotOf(read),
      get entries() {
        const songsShown = shownSongs();
        return (withSongs ??= entries.map(({ entry, songId }, i) => ({ entry, songId, song: songsShown[i]! })));
      },
      songCount: entries.length,
      rules,
      rulesStatus,
      ...(extra as Extra),
    };
  }

  /** The playlists stored rules (JSON text) name, as `smart_sources` keeps them; none for no rules. */
  const sourcesOf = (rules: string | null): number[] =>
    rules === null ? [] : namedPlaylists(JSON.parse(rules) as Rules);

  const slotsOf = (entries: readonly Entry[]): Slots => ({
    songIds: entries.map((e) => e.songId),
    entries: entries.map((e) => e.entry),
  });

  /** A new playlist's entries 1, 2, … with keys in order. */
  function freshEntries(songIds: readonly number[], first = 1): StoredEntry[] {
    const keys = generateNKeysBetween(null, null, songIds.length);
    return songIds.map((songId, i) => ({ entry: first + i, songId, ord: keys[i]! }));
  }

  async function firstRevision(
    trx: Db['kysely'],
    id: number,
    ownerId: number,
    name: string,
    entries: Slots,
    at: number,
    rules: string | null,
  ) {
    const base = { playlistId: id, ownerId, byId: ownerId, version: 1, name, before: undefined, at, rules };
    await insertRevision(trx, await revisionRow(trx, { ...base, change: 'create', after: entries }));
  }

  return {
    /** What each committed write through this store did, told after its commit (see PlaylistEvents). */
    events,

    /**
     * A new playlist of these catalog songs (already read, in order, with the catalog version read before them),
     * under the owner's quota (409 past it); `rules`: a smart playlist's (JSON text), whose songs these are.
     */
    async create(
      ownerId: number,
      name: string,
      songs: readonly (ShownSong & { readonly genre: string })[],
      catalogVersion: number,
      quota: number,
      rules: string | null = null,
    ): Promise<Written> {
      const entries = freshEntries(songs.map((song) => song.id));
      const doc = playlistDocument(name, songs);
      const now = Date.now();
      const row = { ownerId, name, entries, doc, now, rules, sources: sourcesOf(rules) };
      let id: number;
      if (db.dialect === 'postgres') {
        const created = await createPlaylistAtOnce(q, row, quota);
        if (created === undefined) throw quotaReached(quota);
        id = created;
      } else {
        id = await db.write(async (trx) => {
          if ((await reservePlaylistSlot(trx, ownerId, quota)) === undefined) throw quotaReached(quota);
          const made = await insertPlaylist(trx, row);
          await writeSmartSources(trx, made, [], row.sources);
          await writeEntries(trx, made, entries);
          await writeOrigins(
            trx,
            made,
            entries.map((e) => e.entry),
            ownerId,
            now,
          );
          await firstRevision(trx, made, ownerId, name, slotsOf(entries), now, rules);
          await addPlaylistDocument(trx, ownerId, made, doc);
          await libraryChanged(trx, db.dialect, { users: [ownerId] });
          return made;
        });
      }
      kept.set(id, { version: 1, entries, doc });
      events.emit({ id, ownerId, version: 1, kind: 'create', by: ownerId, followers: [] });
      return written(id, 1, catalogVersion, name, entries, songs, rules);
    },

    /**
     * An edit of the playlist by `byId`: `decide` gets the playlist as it is, locked, in the write's transaction,
     * and answers what it becomes (or that nothing changes, or throws and nothing is written). Undefined when the
     * playlist is gone.
     *
     * `readsOnly`: `decide` writes nothing of its own through the query it is given. On PostgreSQL such an edit is
     * first worked out from the playlist read with no transaction and no lock, and saved in one statement that writes
     * only if the playlist is still at the version it was read at (`saveChangesAtOnce`): four round trips where the
     * transaction takes six. When it was not (another instance's edit came first, or holds the row), or when the
     * edit changes a smart playlist's rules, it is worked out again from the start in a transaction, as every edit
     * is on SQLite, so `decide` may run twice.
     */
    async edit<T>(
      id: number,
      byId: number,
      kind: EditKind,
      decide: (current: Current, trx: Db['kysely']) => Decision<T> | Promise<Decision<T>>,
      options: { readonly readsOnly?: boolean } = {},
    ): Promise<Edited<T> | undefined> {
      type Attempt =
        { answer: Edited<T>; dependents: readonly number[]; ownerId: number; keep: KeptPlaylist } | undefined;
      const before = kept.get(id);
      /** The edit worked out from `current` and saved by `save`; NOT_SAVED when `save` wrote nothing. */
      async function attempt(
        trx: Db['kysely'],
        current: Current,
        save: (changes: RowChanges) => Promise<readonly number[] | undefined>,
      ): Promise<Attempt | typeof NOT_SAVED> {
        const decision = await decide(current, trx);
        const at = Date.now();
        const known = before?.version === current.version ? before : undefined;
        if ('unchanged' in decision) {
          const songs = await catalogSongs(
            trx,
            current.entries.map((e) => e.songId),
            current.catalogVersion,
          );
          return {
            answer: written(
              id,
              current.version,
              current.catalogVersion,
              current.name,
              current.entries,
              songs,
              current.rules,
              current.rulesStatus,
              { changed: false, result: decision.result },
            ),
            dependents: [] as readonly number[],
            ownerId: current.ownerId,
            keep: { version: current.version, entries: current.entries, doc: known?.doc },
          };
        }
        const songs = await catalogSongs(
          trx,
          decision.slots.map((slot) => slot.songId),
          current.catalogVersion,
        );
        const plan = planEntries(current.entries, decision.slots, current.nextEntry);
        const version = current.version + 1;
        const rules = decision.rules === undefined ? current.rules : decision.rules;
        const rulesStatus =
          decision.rulesStatus !== undefined
            ? decision.rulesStatus
            : rules === current.rules
              ? current.rulesStatus
              : null;
        const revision = await revisionRow(trx, {
          playlistId: id,
          ownerId: current.ownerId,
          byId,
          version,
          change: kind,
          name: decision.name,
          before: slotsOf(current.entries),
          after: slotsOf(plan.entries),
          at,
          previousChain: current.revisionChain,
          rules,
        });
        const doc = playlistDocument(decision.name, songs);
        // The smart playlists that name it, for the listeners: the save's statements answer them.
        const dependents = await save({
          deleted: plan.deleted,
          written: plan.written,
          made: plan.written.flatMap((w) => (w.entry >= current.nextEntry ? [w.entry] : [])),
          by: byId,
          at,
          name: decision.name,
          version,
          nextEntry: plan.nextEntry,
          ownerId: current.ownerId,
          renamed: decision.name !== current.name,
          // A move, or songs the playlist had already, leave the document as it is: it is not written again.
          doc: known?.doc === doc ? undefined : doc,
          revision,
          rules,
          rulesStatus,
        });
        if (dependents === undefined) return NOT_SAVED;
        return {
          answer: written(id, version, current.catalogVersion, decision.name, plan.entries, songs, rules, rulesStatus, {
            changed: true,
            result: decision.result,
          }),
          dependents,
          ownerId: current.ownerId,
          keep: { version, entries: plan.entries, doc },
        };
      }

      let edited: Attempt | typeof NOT_SAVED = NOT_SAVED;
      if (db.dialect === 'postgres' && options.readsOnly === true) {
        const current = await playlistAsItIs(q, id, before);
        edited =
          current === undefined
            ? undefined
            : await attempt(q, current, async (changes) =>
                changes.rules === current.rules && changes.rulesStatus === current.rulesStatus
                  ? saveChangesAtOnce(q, id, current.version, changes)
                  : undefined,
              );
      }
      if (edited === NOT_SAVED) {
        edited = await db.write(
          async (trx): Promise<Attempt> => {
            const current = await playlistForWrite(trx, db.dialect, id, before);
            if (current === undefined) return undefined;
            const outcome = await attempt(trx, current, async (changes) => {
              const dependents =
                db.dialect === 'postgres'
                  ? await saveChangesAtOnce(trx, id, current.version, changes)
                  : await saveChanges(trx, id, changes);
              // The playlists the rules name change with them (a refresh leaves them as they are).
              if (dependents !== undefined && changes.rules !== current.rules) {
                await writeSmartSources(trx, id, sourcesOf(current.rules), sourcesOf(changes.rules));
              }
              if (dependents !== undefined && changes.rulesStatus !== current.rulesStatus) {
                await writeRulesStatus(trx, id, changes.rulesStatus);
              }
              return dependents;
            });
            // The row is this transaction's, locked at this version: its write cannot have been refused.
            if (outcome === NOT_SAVED) throw new Error(`playlist ${id}: the locked row was not written`);
            return outcome;
          },
          { lockWaitMs: EDIT_LOCK_WAIT_MS },
        );
      }
      if (edited === undefined) {
        kept.forget(id);
        return undefined;
      }
      const { dependents, ownerId, keep, answer } = edited;
      // Committed: the next write of it starts from here.
      kept.set(id, keep);
      if (answer.changed) {
        const { version } = answer.snapshot;
        events.emit({ id, ownerId, version, kind, by: byId, followers: dependents });
      }
      return answer;
    },

    /**
     * Deletes the owner's playlist and gives back its place under the quota; false when it was gone already. A smart
     * playlist's `smart_sources` rows go with its row (its rules stay with the delete, for an undelete); those of the
     * smart playlists that name it stay, and they are refreshed after the delete.
     */
    async remove(id: number, ownerId: number): Promise<boolean> {
      const dependents = await db.write(async (trx) => {
        if (!(await deletePlaylist(trx, id, ownerId, Date.now()))) return undefined;
        await libraryChanged(trx, db.dialect, { users: [ownerId], membersOf: id, unplace: id });
        await releasePlaylistSlot(trx, ownerId);
        return smartDependents(trx, id);
      });
      kept.forget(id);
      if (dependents === undefined) return false;
      events.emit({ id, ownerId, version: undefined, kind: 'delete', by: ownerId, followers: dependents });
      return true;
    },

    /**
     * Brings a deleted playlist back under its id as a new revision (`restore`): `prepare` checks, in the write's
     * transaction, that it may (the delete is the owner's, the precondition, the limits, the quota) and says what it
     * becomes. The songs were read by the caller, with the catalog version read before them.
     */
    async undelete(
      id: number,
      ownerId: number,
      songs: readonly (ShownSong & { readonly genre: string })[],
      catalogVersion: number,
      prepare: (trx: Db['kysely']) => Promise<Undelete & { readonly nextEntry: number }>,
    ): Promise<Written> {
      const back = await db.write(async (trx) => {
        const to = await prepare(trx);
        const entries =
          to.entries === undefined
            ? freshEntries(to.songIds, to.nextEntry)
            : (() => {
                const keys = generateNKeysBetween(null, null, to.songIds.length);
                return to.songIds.map((songId, i) => ({ entry: to.entries![i]!, songId, ord: keys[i]! }));
              })();
        const version = to.newest + 1;
        const now = Date.now();
        const nextEntry = entries.reduce((next, e) => Math.max(next, e.entry + 1), to.nextEntry);
        const { rules } = to;
        await undeletePlaylist(trx, { id, ownerId, name: to.name, now, version, nextEntry, rules });
        await libraryChanged(trx, db.dialect, { users: [ownerId], membersOf: id });
        await writeSmartSources(trx, id, [], sourcesOf(rules));
        await writeEntries(trx, id, entries);
        // The entries it had keep their origins; those it is given anew (a version from before entries) are made now.
        await writeOrigins(
          trx,
          id,
          entries.map((e) => e.entry),
          ownerId,
          now,
        );
        await addPlaylistDocument(trx, ownerId, id, playlistDocument(to.name, songs));
        const change: ChangeKind = 'restore';
        const after = slotsOf(entries);
        await insertRevision(
          trx,
          await revisionRow(trx, {
            playlistId: id,
            ownerId,
            byId: ownerId,
            version,
            change,
            name: to.name,
            before: to.last,
            after,
            at: now,
            rules,
          }),
        );
        return {
          back: written(id, version, catalogVersion, to.name, entries, songs, rules),
          dependents: await smartDependents(trx, id),
        };
      });
      const { version } = back.back.snapshot;
      events.emit({ id, ownerId, version, kind: 'restore', by: ownerId, followers: back.dependents });
      return back.back;
    },
  };
}

export type PlaylistStore = ReturnType<typeof playlistStore>;
