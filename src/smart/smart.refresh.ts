/**
 * Smart playlists follow the catalog and the playlists their rules name: a refresh works a smart playlist's songs
 * out again from its stored rules and writes them through the store as a `refresh` revision in its owner's name, or
 * nothing when they are the same songs in the same order. Which ones are refreshed, and when:
 *
 * - after any committed write of a playlist P through the store (this process, before the write is answered): the
 *   smart playlists whose rules name P (and, through their own refresh, those that name them);
 * - after `mixtape catalog import` (the CLI's process, once the import is done): every smart playlist whose rules
 *   compare or sort by a song's fields (`catalogDependentPlaylists`).
 *
 * Answers are confirmed by the playlist's version (playlist.cache.ts), so a refresh written here is what every
 * instance answers next.
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Limits } from '../config.js';
import type { Db } from '../db/database.js';
import { keepCommon } from '../playlists/entry-order.js';
import { playlistStore, type PlaylistStore } from '../playlists/playlist.store.js';
import { smartSongIds } from './smart-songs.repository.js';
import { smartInputs, smartPlaylists, smartRulesAfter } from './smart.repository.js';
import { isGroup, namedPlaylists, type Group, type Rules } from './rules.js';

/** Smart playlists refreshed between two turns of the event loop. */
export const REFRESH_BATCH = 50;

/** Smart playlists' rules read per statement when all of them are looked through. */
const SCAN_CHUNK = 500;

/** What a refresh did: the playlists whose songs changed (a new revision each), and those looked at. */
export interface Refreshed {
  readonly changed: number[];
  readonly checked: number;
}

const parsed = (text: string): Rules => JSON.parse(text) as Rules;

/**
 * Works each given smart playlist's songs out again (in batches of REFRESH_BATCH, the event loop served between
 * two); a playlist that is gone, or no longer has rules, is passed over. The songs are read first, outside any write
 * (the rules' query can take tens of milliseconds over a large catalog, and a write holds SQLite's one write lock, or
 * the playlist's row on PostgreSQL, while it runs); the write then takes them when the rules, the catalog's version
 * and the versions of the playlists the rules name are those the read saw, and reads them again in its transaction
 * otherwise, so a refresh never writes songs that something committed meanwhile has made stale. `yieldWrites` (a
 * process of its own, such as the CLI's): after each write, a pause as long as the write, so that the service's
 * writes, which wait for SQLite's write lock by trying again every few milliseconds, find it free half the time.
 */
export async function refreshSmartPlaylists(
  db: Db,
  store: PlaylistStore,
  ids: readonly number[],
  limits: Pick<Limits, 'songsMax'>,
  yieldWrites = false,
): Promise<Refreshed> {
  const changed: number[] = [];
  const unique = [...new Set(ids)];
  const songsOf = (q: Db['kysely'], rules: string) =>
    smartSongIds(q, db.dialect, parsed(rules), { now: Date.now(), songsMax: limits.songsMax });
  for (let start = 0; start < unique.length; start += REFRESH_BATCH) {
    if (start > 0) await nextTurn();
    const batch = unique.slice(start, start + REFRESH_BATCH);
    for (const { id, ownerId, rules } of await smartPlaylists(db.kysely, batch)) {
      const sources = namedPlaylists(parsed(rules));
      const inputs = await smartInputs(db.kysely, sources);
      const read = await songsOf(db.kysely, rules);
      const writing = performance.now();
      const edited = await store.edit(id, ownerId, 'refresh', async (current, trx) => {
        if (current.rules === null) return { unchanged: true, result: undefined };
        const songIds =
          current.rules === rules && (await smartInputs(trx, sources)) === inputs
            ? read
            : await songsOf(trx, current.rules);
        const same =
          songIds.length === current.entries.length &&
          songIds.every((songId, i) => current.entries[i]!.songId === songId);
        if (same) return { unchanged: true, result: undefined };
        return { name: current.name, slots: keepCommon(current.entries, songIds), result: undefined };
      });
      if (edited?.changed === true) changed.push(id);
      // Another process's writes (the service's) get the write lock between two of these as often as these do.
      if (yieldWrites) await sleep(performance.now() - writing);
    }
  }
  return { changed, checked: unique.length };
}

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
 * Has the store refresh, after each committed write of a playlist, the smart playlists that name it. A refresh
 * that fails is reported and does not fail the write that led to it (it committed); the next write or import tries
 * again.
 */
export function refreshDependents(
  db: Db,
  store: PlaylistStore,
  limits: Pick<Limits, 'songsMax'>,
  report: (error: unknown, id: number) => void,
): void {
  store.onWrite(async (id, dependents) => {
    try {
      // Read by the store in the write's transaction (smart_sources, written with the rules).
      if (dependents.length > 0) await refreshSmartPlaylists(db, store, dependents, limits);
    } catch (error) {
      report(error, id);
    }
  });
}

/**
 * After a catalog import (the CLI's process, once it is done): refreshes every smart playlist the import may have
 * changed, in batches, and through them those that name them, leaving the write lock to the service between two
 * (see `refreshSmartPlaylists`). An import that changes nothing a playlist shows writes no revision of it.
 */
export async function refreshAfterCatalogImport(
  db: Db,
  limits: Pick<Limits, 'songsMax'>,
  report: (error: unknown, id: number) => void,
): Promise<Refreshed> {
  const store = playlistStore(db);
  refreshDependents(db, store, limits, report);
  return refreshSmartPlaylists(db, store, await catalogDependentPlaylists(db), limits, true);
}
