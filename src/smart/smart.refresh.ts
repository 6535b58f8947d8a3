/**
 * Smart playlists follow the catalog and the playlists their rules name: a refresh works a smart playlist's songs
 * out again from its stored rules, with its owner's rights at that moment, and writes them through the store as a
 * `refresh` revision in its owner's name, or nothing when they are the same songs in the same order and the same
 * playlists are unreadable. Which ones are refreshed, and when:
 *
 * - after a committed write of a playlist P, or a change of P's members (the write answered first): the smart
 *   playlists whose rules name P, from this instance's queue (refresh-queue.ts), and through their own refresh those
 *   that name them;
 * - at a read of a smart playlist whose inputs (`smartInputs`: the catalog's version, and the version and the owner's
 *   right to read of each playlist its rules name) are no longer those of its last refresh: that playlist, before
 *   the read is answered. So a write on another instance, or one whose refresh has not run yet, is followed too;
 * - after `mixtape catalog import` (the CLI's process, once the import is done): every smart playlist whose rules
 *   compare or sort by a song's fields (`catalogDependentPlaylists`).
 */
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../http/errors.js';
import { keepCommon } from '../playlists/entry-order.js';
import { playlistStore, type PlaylistStore } from '../playlists/write/store.js';
import { RefreshQueue, type RefreshOutcome } from './refresh-queue.js';
import { smartSongIds } from './smart-songs.repository.js';
import {
  smartInputs,
  smartPlaylist,
  smartPlaylists,
  smartRulesAfter,
  writeSmartInputs,
  type SmartInputs,
} from './smart.repository.js';
import { isGroup, namedPlaylists, type Group, type Rules } from './rules.js';

/** Smart playlists' rules read per statement when all of them are looked through. */
const SCAN_CHUNK = 500;

/** Smart playlists whose failed refresh is remembered, so that a read does not try it again at once. */
const FAILURES_KEPT = 10_000;

/** One owner's refreshes in one wave of the queue (see RefreshQueue). */
const REFRESHES_PER_OWNER = 50;

/** What a refresh did: the playlists whose songs changed (a new revision each), and those looked at. */
export interface Refreshed {
  readonly changed: number[];
  readonly checked: number;
}

const parsed = (text: string): Rules => JSON.parse(text) as Rules;

/** What the answers say beside rules whose owner may not read some playlists they name (null: nothing). */
const statusOf = (unreadable: ReadonlySet<number>): string | null =>
  unreadable.size === 0 ? null : JSON.stringify({ unreadable: [...unreadable].sort((a, b) => a - b) });

/**
 * The ids of the songs rules choose with these inputs (a playlist their owner may not read matches no song), for the
 * smart playlist's owner.
 */
export type SongsOf = (
  q: Db['kysely'],
  rules: Rules,
  unreadable: ReadonlySet<number>,
  ownerId: number,
) => Promise<number[]>;

/** The songs of rules, run as a query of `q` (the default; a rules runner off the event loop can stand for it). */
export const songsInline =
  (db: Db, limits: Pick<Limits, 'songsMax'>): SongsOf =>
  (q, rules, unreadable) =>
    smartSongIds(q, db.dialect, rules, { now: Date.now(), songsMax: limits.songsMax, unreadable });

/**
 * Refreshes smart playlists, one at a time: `refresh` one now, `queue` those that follow a write, `freshen` one that a
 * read is about to answer.
 */
export function smartRefresher(
  db: Db,
  store: PlaylistStore,
  limits: Pick<Limits, 'songsMax'>,
  report: (error: unknown, id: number) => void,
  options: {
    readonly songsOf?: SongsOf;
    readonly yieldWrites?: boolean;
    readonly done?: (outcome: string) => void;
  } = {},
) {
  const q = db.kysely;
  const inline = songsInline(db, limits);
  // The playlists whose last refresh failed, with the inputs it failed on.
  const failed = new LRUCache<number, string>({ max: FAILURES_KEPT });
  const songsOf = options.songsOf ?? inline;
  const inputsOf = (executor: Db['kysely'], ownerId: number, rules: Rules): Promise<SmartInputs> =>
    smartInputs(executor, ownerId, namedPlaylists(rules), followsCatalog(rules));

  /**
   * Works one smart playlist's songs out again. The songs are read first, outside any write (the rules' query can take
   * a while over a large catalog, and a write holds SQLite's one write lock, or the playlist's row on PostgreSQL); the
   * write takes them when the rules and their inputs are those the read saw, and reads them again in its transaction
   * otherwise (as a query of the transaction, whatever `songsOf` is), so a refresh never writes songs that something committed meanwhile has made stale. The inputs are kept
   * with the playlist in the same transaction, for the next read to compare. `yieldWrites` (a process of its own, such
   * as the CLI's): after the write, a pause as long as the write, so that the service's writes, which wait for
   * SQLite's write lock by trying again every few milliseconds, find it free half the time.
   */
  async function refresh(id: number): Promise<RefreshOutcome> {
    const found = await smartPlaylist(q, id);
    if (found === undefined) return 'gone';
    const rules = parsed(found.rules);
    const seen = await inputsOf(q, found.ownerId, rules);
    let read: number[];
    try {
      read = await songsOf(q, rules, seen.unreadable, found.ownerId);
    } catch (error) {
      // Rules too costly for the catalog are not tried again at each read until what they are worked out from
      // changes; a refusal for the moment (the owner's queries are many) is tried again at the next read.
      if (error instanceof ApiError && error.statusCode === 422) failed.set(id, seen.text);
      throw error;
    }
    failed.delete(id);
    const writing = performance.now();
    const edited = await store.edit(id, found.ownerId, 'refresh', async (current, trx) => {
      if (current.rules === null) return { unchanged: true, result: undefined };
      let [inputs, songIds] = [seen, read];
      const now = parsed(current.rules);
      if (current.rules !== found.rules || current.ownerId !== found.ownerId) {
        inputs = await inputsOf(trx, current.ownerId, now);
        songIds = await inline(trx, now, inputs.unreadable, current.ownerId);
      } else {
        const again = await inputsOf(trx, current.ownerId, now);
        if (again.text !== inputs.text)
          [inputs, songIds] = [again, await inline(trx, now, again.unreadable, current.ownerId)];
      }
      await writeSmartInputs(trx, id, inputs.text);
      const status = statusOf(inputs.unreadable);
      const same =
        status === current.rulesStatus &&
        songIds.length === current.entries.length &&
        songIds.every((songId, i) => current.entries[i]!.songId === songId);
      if (same) return { unchanged: true, result: undefined };
      return {
        name: current.name,
        slots: keepCommon(current.entries, songIds),
        rulesStatus: status,
        result: undefined,
      };
    });
    // Another process's writes (the service's) get the write lock between two of these as often as these do.
    if (options.yieldWrites === true) await sleep(performance.now() - writing);
    if (edited === undefined) return 'gone';
    return edited.changed ? 'changed' : 'unchanged';
  }

  const queue = new RefreshQueue({
    refresh,
    owners: async (ids) => {
      const owners = new Map<number, number>();
      for (let start = 0; start < ids.length; start += SCAN_CHUNK) {
        for (const row of await smartPlaylists(q, ids.slice(start, start + SCAN_CHUNK)))
          owners.set(row.id, row.ownerId);
      }
      return owners;
    },
    report,
    perOwner: REFRESHES_PER_OWNER,
    done: options.done,
  });

  // The smart playlists that follow a playlist written through the store, or whose members changed, wait for their
  // refresh; a smart playlist whose own songs changed is a playlist written, so those that follow it come next.
  store.events.on((event) => {
    if (event.followers.length > 0) queue.add(event.followers);
  });

  return {
    queue,
    refresh,
    inputsOf,

    /** At shutdown: the refresh under way finishes, those waiting are left to the next read (`freshen`). */
    stop: () => queue.stop(),

    /**
     * Before a read of smart playlist `id`, whose answer at version `read` is at hand, is answered: refreshes it first
     * when what its songs were worked out from (its inputs, kept by its last refresh) is not what it would be worked
     * out from now. True when the answer at hand is not the current one (it refreshed, or a refresh committed since
     * that answer was read): the read reads it again.
     */
    async freshen(id: number, read: number): Promise<boolean> {
      const found = await smartPlaylist(q, id);
      if (found === undefined) return false;
      const now = await inputsOf(q, found.ownerId, parsed(found.rules));
      if (now.text === found.inputs || failed.get(id) === now.text) return found.version !== read;
      await queue.now(id);
      return true;
    },
  };
}

export type SmartRefresher = ReturnType<typeof smartRefresher>;

/**
 * Whether a catalog import can change the songs these rules choose, or their order. Rules whose every condition is
 * `playlist … in` (in groups that are not empty) choose among songs already in playlists, which an import does not
 * add; any other condition (a `notIn`, a field, an empty group that holds every song) or a sort by a song's field can
 * change with it.
 */
export function followsCatalog(rules: Rules): boolean {
  const onlyIn = (group: Group): boolean =>
    group.conditions.length > 0 &&
    group.conditions.every((entry) =>
      isGroup(entry) ? onlyIn(entry) : entry.field === 'playlist' && entry.op === 'in',
    );
  const sortsByField = (rules.sort ?? []).some((key) => key.field !== 'random');
  return sortsByField || !onlyIn(rules);
}

/** Every smart playlist a catalog import may change (see `followsCatalog`), in id order. */
export async function catalogDependentPlaylists(db: Db): Promise<number[]> {
  const found: number[] = [];
  let last = 0;
  for (;;) {
    const rows = await smartRulesAfter(db.kysely, last, SCAN_CHUNK);
    for (const row of rows) if (followsCatalog(parsed(row.rules))) found.push(row.id);
    if (rows.length < SCAN_CHUNK) return found;
    last = rows[rows.length - 1]!.id;
  }
}

/**
 * Refreshes these smart playlists one after the other, then waits until those that follow them are refreshed too
 * (through `store`'s events, when a refresher listens to them). A playlist that is gone, or no longer has rules, is
 * passed over.
 */
export async function refreshSmartPlaylists(
  db: Db,
  store: PlaylistStore,
  ids: readonly number[],
  limits: Pick<Limits, 'songsMax'>,
  report: (error: unknown, id: number) => void = () => {},
  yieldWrites = false,
): Promise<Refreshed> {
  const refresher = smartRefresher(db, store, limits, report, { yieldWrites });
  const changed: number[] = [];
  const unique = [...new Set(ids)];
  for (const id of unique) {
    if ((await refresher.refresh(id)) === 'changed') changed.push(id);
  }
  await refresher.queue.idle();
  return { changed, checked: unique.length };
}

/**
 * After a catalog import (the CLI's process, once it is done): refreshes every smart playlist the import may have
 * changed, and through them those that name them, leaving the write lock to the service between two (see
 * `smartRefresher`). An import that changes nothing a playlist shows writes no revision of it.
 */
export async function refreshAfterCatalogImport(
  db: Db,
  limits: Pick<Limits, 'songsMax'>,
  report: (error: unknown, id: number) => void,
): Promise<Refreshed> {
  const ids = await catalogDependentPlaylists(db);
  return refreshSmartPlaylists(db, playlistStore(db), ids, limits, report, true);
}
