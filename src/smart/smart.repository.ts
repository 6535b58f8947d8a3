/**
 * The statements of smart playlists besides the songs their rules choose (smart-songs.repository.ts): their stored
 * rules and owners, read for a refresh, a catalog import's look through them, and the rule-cycle check.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { readableBy } from '../db/access-rule.js';

type Q = Kysely<Database>;

/** Those of these playlists that have rules, with their owners and rules (JSON text); one gone, or hand-made, is left out. */
export async function smartPlaylists(
  q: Q,
  ids: readonly number[],
): Promise<{ id: number; ownerId: number; rules: string }[]> {
  if (ids.length === 0) return [];
  const rows = await q
    .selectFrom('playlists')
    .select(['id', 'owner_id', 'rules'])
    .where('id', 'in', ids)
    .where('rules', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ id: row.id, ownerId: row.owner_id, rules: row.rules! }));
}

/** Up to `limit` smart playlists after id `after`, in id order, with their rules (JSON text). */
export async function smartRulesAfter(q: Q, after: number, limit: number): Promise<{ id: number; rules: string }[]> {
  const rows = await q
    .selectFrom('playlists')
    .select(['id', 'rules'])
    .where('rules', 'is not', null)
    .where('id', '>', after)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ id: row.id, rules: row.rules! }));
}

/** The stored rules (JSON text) of those of these playlists that have rules, by id. */
export async function storedRules(q: Q, ids: readonly number[]): Promise<Map<number, string>> {
  return new Map((await smartPlaylists(q, ids)).map((playlist) => [playlist.id, playlist.rules]));
}

/**
 * The smart playlists whose rules name playlist `sourceId`, in id order: one read of `smart_sources`' primary key
 * (see migration 2026-12-08-smart-sources).
 */
export async function smartDependents(q: Q, sourceId: number): Promise<number[]> {
  const rows = await q
    .selectFrom('smart_sources')
    .select('playlist_id')
    .where('source_id', '=', sourceId)
    .orderBy('playlist_id')
    .execute();
  return rows.map((row) => row.playlist_id);
}

/**
 * The playlists the rules of smart playlist `playlistId` name, as the store writes them beside its rules, in the
 * write's transaction: `after` (from `namedPlaylists`; none when it has no rules any more) replaces the rows it has.
 * Nothing is written when they are those of `before`, the rules stored until now (none for a new or undeleted
 * playlist). Rules have at most MAX_CONDITIONS conditions, so one statement holds them.
 */
export async function writeSmartSources(
  trx: Q,
  playlistId: number,
  before: readonly number[],
  after: readonly number[],
): Promise<void> {
  const same = before.length === after.length && before.every((id, i) => after[i] === id);
  if (same) return;
  if (before.length > 0) await trx.deleteFrom('smart_sources').where('playlist_id', '=', playlistId).execute();
  if (after.length === 0) return;
  await trx
    .insertInto('smart_sources')
    .values(after.map((source) => ({ source_id: source, playlist_id: playlistId })))
    .execute();
}

/** What a smart playlist's songs are worked out from, besides its rules (see `smartInputs`). */
export interface SmartInputs {
  /** The reading as text (stored as `playlists.smart_inputs`): two readings that are equal saw the same songs. */
  readonly text: string;
  /** The playlists the rules name that the owner may not read now (gone, or neither theirs nor shared with them). */
  readonly unreadable: ReadonlySet<number>;
}

/**
 * What a smart playlist's songs are worked out from, besides its rules, in two indexed reads: the catalog's version
 * and count of songs (when `followsCatalog`), and each playlist its rules name with its version and whether the owner may read it now
 * (`readableBy`, the one rule of who may read a playlist). A playlist gone reads as version 0, unreadable.
 */
export async function smartInputs(
  q: Q,
  ownerId: number,
  sourceIds: readonly number[],
  followsCatalog: boolean,
): Promise<SmartInputs> {
  // The catalog's version counts changes of songs' text; its count of songs, those added and removed.
  const catalog = followsCatalog
    ? await q.selectFrom('catalog_version').select(['version', 'songs']).executeTakeFirstOrThrow()
    : undefined;
  const rows =
    sourceIds.length === 0
      ? []
      : await q
          .selectFrom('playlists as p')
          .select((eb) => [
            'p.id',
            'p.version',
            eb.case().when(readableBy(eb, ownerId)).then(1).else(0).end().as('readable'),
          ])
          .where('p.id', 'in', sourceIds)
          .execute();
  const byId = new Map(rows.map((row) => [row.id, row]));
  const unreadable = new Set<number>();
  const sources = [...sourceIds]
    .sort((a, b) => a - b)
    .map((id) => {
      const row = byId.get(id);
      const readable = row !== undefined && row.readable === 1;
      if (!readable) unreadable.add(id);
      return [id, row === undefined ? 0 : Number(row.version), readable ? 1 : 0];
    });
  // Bigints on PostgreSQL, which may come as text.
  const read = catalog === undefined ? null : [catalog.version, catalog.songs].map(Number);
  return { text: JSON.stringify([read, ...sources]), unreadable };
}

/**
 * A smart playlist's owner, rules, last inputs (`smart_inputs`) and version; undefined when it is gone or has no
 * rules.
 */
export async function smartPlaylist(
  q: Q,
  id: number,
): Promise<{ ownerId: number; rules: string; inputs: string | null; version: number } | undefined> {
  const row = await q
    .selectFrom('playlists')
    .select(['owner_id', 'rules', 'smart_inputs', 'version'])
    .where('id', '=', id)
    .where('rules', 'is not', null)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return { ownerId: row.owner_id, rules: row.rules!, inputs: row.smart_inputs, version: Number(row.version) };
}

/** Keeps what a smart playlist's songs were worked out from, in the transaction of its refresh. */
export async function writeSmartInputs(trx: Q, id: number, inputs: string): Promise<void> {
  await trx.updateTable('playlists').set({ smart_inputs: inputs }).where('id', '=', id).execute();
}
