/**
 * The statements of smart playlists besides the songs their rules choose (smart-songs.repository.ts): their stored
 * rules and owners, read for a refresh, a catalog import's look through them, and the rule-cycle check.
 */
import type { Kysely } from 'kysely';
import { catalogVersion } from '../db/playlist-changes.js';
import type { Database } from '../db/schema.js';

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

/**
 * What a smart playlist's songs are worked out from, besides its rules: the catalog's version and the versions of the
 * playlists its rules name (a playlist gone is left out), in two indexed reads. Two readings that are equal saw the same
 * songs in the catalog and in those playlists.
 */
export async function smartInputs(q: Q, sourceIds: readonly number[]): Promise<string> {
  const catalog = await q.selectNoFrom([catalogVersion]).executeTakeFirstOrThrow();
  const versions =
    sourceIds.length === 0
      ? []
      : await q.selectFrom('playlists').select(['id', 'version']).where('id', 'in', sourceIds).orderBy('id').execute();
  return JSON.stringify([Number(catalog.catalog_version), ...versions.map((row) => [row.id, Number(row.version)])]);
}
