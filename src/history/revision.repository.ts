import type { ExpressionBuilder, Insertable, Kysely } from 'kysely';
import { lockingRows, type Dialect } from '../db/database.js';
import type { Database, PlaylistRevisionTable } from '../db/schema.js';
import type { ChangeKind } from '../domain/change-kinds.js';
import { storedRevision, type RevisionWrite } from './revision-policy.js';

type Q = Kysely<Database>;

export { joinIds, spliceOf, type RevisionWrite, type Slots, type Splice } from './revision-policy.js';
const splitIds = (text: string) => (text === '' ? [] : text.split(',').map(Number));

/** Records a revision in the write's transaction, as the policy stores it (revision-policy.ts). */
export async function recordRevision(trx: Q, revision: RevisionWrite): Promise<void> {
  await trx
    .insertInto('playlist_revisions')
    .values(await revisionRow(trx, revision))
    .execute();
}

/** The row `recordRevision` writes, for a write that inserts it in a statement of its own making. */
export async function revisionRow(trx: Q, revision: RevisionWrite): Promise<Insertable<PlaylistRevisionTable>> {
  const previous =
    revision.before === undefined
      ? null
      : revision.previousChain !== undefined
        ? revision.previousChain
        : ((
            await trx
              .selectFrom('playlist_revisions')
              .select('chain')
              .where('playlist_id', '=', revision.playlistId)
              .where('version', '=', revision.version - 1)
              .executeTakeFirst()
          )?.chain ?? null);
  return storedRevision(revision, previous);
}

/** Records a delete: the songs stay as the version before left them (an empty splice), so a restore can read them. */
export async function recordDelete(
  trx: Q,
  deleted: { playlistId: number; ownerId: number; byId: number; version: number; name: string; at: number },
): Promise<void> {
  // One statement: the revision before gives the song count and the chain.
  const result = await trx
    .insertInto('playlist_revisions')
    .columns([
      'playlist_id',
      'owner_id',
      'version',
      'at',
      'by_id',
      'change',
      'name',
      'song_count',
      'splice_at',
      'splice_deleted',
      'songs',
      'chain',
      'rules',
    ])
    .expression((eb) =>
      eb
        .selectFrom('playlist_revisions')
        .select([
          'playlist_id',
          eb.val(deleted.ownerId).as('owner_id'),
          eb.val(deleted.version).as('version'),
          eb.val(deleted.at).as('at'),
          eb.val(deleted.byId).as('by_id'),
          eb.val('delete').as('change'),
          eb.val(deleted.name).as('name'),
          'song_count',
          eb.val(0).as('splice_at'),
          eb.val(0).as('splice_deleted'),
          eb.val('').as('songs'),
          eb(eb.ref('chain'), '+', 1).as('chain'),
          'rules',
        ])
        .where('playlist_id', '=', deleted.playlistId)
        .where('version', '=', deleted.version - 1),
    )
    .executeTakeFirst();
  if (result.numInsertedOrUpdatedRows === 1n) return;
  // Without the version before (a playlist older than its history), nothing can be restored: an empty snapshot.
  await trx
    .insertInto('playlist_revisions')
    .values({
      playlist_id: deleted.playlistId,
      owner_id: deleted.ownerId,
      version: deleted.version,
      at: deleted.at,
      by_id: deleted.byId,
      change: 'delete',
      name: deleted.name,
      song_count: 0,
      splice_at: null,
      splice_deleted: null,
      songs: '',
      chain: 0,
    })
    .execute();
}

/**
 * What the history of a playlist holds: whose it is and the versions kept, or undefined when it has none; read from
 * its newest and oldest revisions, two index probes whatever the history's length.
 */
export async function historyBounds(
  db: Q,
  playlistId: number,
): Promise<{ ownerId: number; oldest: number; newest: number } | undefined> {
  const row = await db
    .selectFrom('playlist_revisions as r')
    .select((eb) => [
      'r.owner_id',
      'r.version',
      eb
        .selectFrom('playlist_revisions')
        .select((inner) => inner.fn.min('version').as('v'))
        .where('playlist_id', '=', playlistId)
        .as('oldest'),
    ])
    .where('r.playlist_id', '=', playlistId)
    .orderBy('r.version', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return { ownerId: row.owner_id, oldest: Number(row.oldest), newest: Number(row.version) };
}

/** One step of a playlist's history: version `to` as a splice of the version before it, and the names of both. */
export interface RevisionStep {
  readonly fromName: string;
  readonly toName: string;
  readonly at: number;
  readonly deleted: number;
  readonly inserted: readonly number[];
}

/**
 * Version `to` as its revision stores it, a splice of version `to - 1`, with both names: two rows by the primary key,
 * whatever the playlist's length. Undefined when either is not kept or `to` is stored whole.
 */
export async function revisionStep(db: Q, playlistId: number, to: number): Promise<RevisionStep | undefined> {
  const rows = await db
    .selectFrom('playlist_revisions')
    .select(['version', 'name', 'splice_at', 'splice_deleted', 'songs'])
    .where('playlist_id', '=', playlistId)
    .where('version', 'in', [to - 1, to])
    .orderBy('version')
    .execute();
  const [before, step] = rows;
  if (before === undefined || step === undefined || step.splice_at === null) return undefined;
  const at = step.splice_at;
  return {
    fromName: before.name,
    toName: step.name,
    at,
    deleted: step.splice_deleted ?? 0,
    inserted: splitIds(step.songs),
  };
}

/** How many revisions of a playlist are kept. */
export async function revisionCount(db: Q, playlistId: number): Promise<number> {
  const row = await db
    .selectFrom('playlist_revisions')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('playlist_id', '=', playlistId)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** A revision as `GET …/versions` lists it. */
export interface RevisionSummary {
  readonly version: number;
  readonly at: number;
  readonly by: string;
  readonly change: ChangeKind;
  readonly name: string;
  readonly songCount: number;
}

/** A page of a playlist's revisions, newest first. */
export async function pageOfRevisions(
  db: Q,
  playlistId: number,
  limit: number,
  offset: number,
): Promise<RevisionSummary[]> {
  const rows = await db
    .selectFrom('playlist_revisions as r')
    .leftJoin('users as u', 'u.id', 'r.by_id')
    .select(['r.version', 'r.at', 'u.name as by', 'r.change', 'r.name', 'r.song_count'])
    .where('r.playlist_id', '=', playlistId)
    .orderBy('r.version', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
  return rows.map((row) => ({
    version: Number(row.version),
    at: Number(row.at),
    by: row.by ?? '',
    change: row.change,
    name: row.name,
    songCount: row.song_count,
  }));
}

/** A version of a playlist as a revision left it. */
export interface VersionContent {
  readonly version: number;
  readonly change: ChangeKind;
  readonly name: string;
  readonly songIds: readonly number[];
  /** The entry of each song; undefined for a version recorded before entries (see migration 2026-12-06-entries). */
  readonly entries: readonly number[] | undefined;
  /** The revision's splice chain length when it was read (0: a snapshot). */
  readonly chain: number;
  /** A smart playlist's rules at this version (JSON text); null for a hand-made one. */
  readonly rules: string | null;
}

/**
 * The version of the playlist's last whole copy at or before `version` (revisions after it are splices): not max(),
 * with which a planner may read every copy; this reads back from `version` to the first one.
 */
const wholeCopyUpTo = (eb: ExpressionBuilder<Database, 'playlist_revisions'>, playlistId: number, version: number) =>
  eb
    .selectFrom('playlist_revisions')
    .select('version')
    .where('playlist_id', '=', playlistId)
    .where('version', '<=', version)
    .where('splice_at', 'is', null)
    .orderBy('version', 'desc')
    .limit(1);

/**
 * The playlist as revision `version` left it: the last snapshot at or before it (found in `playlist_revisions_copies`),
 * and the splices after that, in one statement; undefined when that revision is not kept.
 */
export async function versionContent(db: Q, playlistId: number, version: number): Promise<VersionContent | undefined> {
  const rows = await db
    .selectFrom('playlist_revisions')
    .select(['version', 'change', 'name', 'splice_at', 'splice_deleted', 'songs', 'entries', 'chain', 'rules'])
    .where('playlist_id', '=', playlistId)
    .where('version', '<=', version)
    .where('version', '>=', (eb) => wholeCopyUpTo(eb, playlistId, version))
    .orderBy('version')
    .execute();
  const last = rows.at(-1);
  if (rows[0]?.splice_at !== null || last === undefined || Number(last.version) !== version) return undefined;
  let songIds: number[] = [];
  let entries: number[] | undefined = [];
  for (const row of rows) {
    const ids = splitIds(row.songs);
    const made = splitIds(row.entries);
    // A revision written before entries has songs and no entries: its version's entries are not known.
    const known = made.length === ids.length;
    if (row.splice_at === null) {
      songIds = ids;
      entries = known ? made : undefined;
    } else {
      songIds.splice(row.splice_at, row.splice_deleted ?? 0, ...ids);
      if (entries !== undefined && known) entries.splice(row.splice_at, row.splice_deleted ?? 0, ...made);
      else entries = undefined;
    }
  }
  return { version, change: last.change, name: last.name, songIds, entries, chain: last.chain, rules: last.rules };
}

/**
 * The owner's deleted playlists, newest delete first, each with its delete revisions (newest first; none when its
 * history is no longer kept): the name and the version each left.
 */
export function deletedPlaylistsOf(db: Q, ownerId: number) {
  return db
    .selectFrom('deleted_playlists as d')
    .leftJoin('playlist_revisions as r', (join) =>
      join.onRef('r.playlist_id', '=', 'd.id').on('r.change', '=', 'delete'),
    )
    .select(['d.id', 'd.deleted_at', 'r.name', 'r.version'])
    .where('d.owner_id', '=', ownerId)
    .orderBy('d.deleted_at', 'desc')
    .orderBy('r.version', 'desc')
    .execute();
}

/** The owner (id and name) of the playlist whose history is kept, and its newest version; undefined without one. */
export async function historyOwner(
  db: Q,
  playlistId: number,
): Promise<{ id: number; name: string; newest: number } | undefined> {
  const row = await db
    .selectFrom('playlist_revisions as r')
    .innerJoin('users as u', 'u.id', 'r.owner_id')
    .select(['u.id', 'u.name', (eb) => eb.fn.max('r.version').as('newest')])
    .where('r.playlist_id', '=', playlistId)
    .groupBy(['u.id', 'u.name'])
    .executeTakeFirst();
  return row === undefined ? undefined : { id: row.id, name: row.name, newest: Number(row.newest) };
}

/**
 * The name revision `version` of a playlist left, when that version can still be read (its revision is kept, and a
 * whole copy at or before it that the splices after it start from); undefined when not. One row, held until the
 * write commits (PostgreSQL: `FOR UPDATE`; a SQLite write holds the whole database): pruning, which would delete or
 * rewrite it, waits, so the revisions a merged edit on this version reads later in the same write
 * (`entryRevisionsFrom`) are there. The one place that decides whether a merged edit's base is still kept.
 */
export async function keptVersionName(
  db: Q,
  dialect: Dialect,
  playlistId: number,
  version: number,
): Promise<string | undefined> {
  const query = db
    .selectFrom('playlist_revisions as r')
    .select('r.name')
    .where('r.playlist_id', '=', playlistId)
    .where('r.version', '=', version)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('playlist_revisions as c')
          .select('c.version')
          .where('c.playlist_id', '=', playlistId)
          .where('c.version', '<=', version)
          .where('c.splice_at', 'is', null),
      ),
    );
  const row = await lockingRows(query, dialect).executeTakeFirst();
  return row?.name;
}

/**
 * What the revisions after version `after` up to `upTo` changed, counted as `chain` counts it (the entries each
 * splice removed and inserted, and one for each), a whole copy counting the whole list: what replaying them costs
 * (`entryRevisionsFrom`). Read from the chains of the two versions and of the versions before each whole copy
 * between them, a few index probes, none of the entries.
 */
export async function changesSince(db: Q, playlistId: number, after: number, upTo: number): Promise<number> {
  const chainAt = (version: number) =>
    db
      .selectFrom('playlist_revisions')
      .select('chain')
      .where('playlist_id', '=', playlistId)
      .where('version', '=', version);
  const row = await db
    .selectNoFrom((eb) => [
      chainAt(upTo).as('now'),
      chainAt(after).as('then'),
      // A whole copy restarts the chain: the splices before it count up to the chain of the version before it.
      eb
        .selectFrom('playlist_revisions as c')
        .innerJoin('playlist_revisions as p', (join) =>
          join.onRef('p.playlist_id', '=', 'c.playlist_id').on((on) => on('p.version', '=', on('c.version', '-', 1))),
        )
        .select((inner) =>
          inner.fn.sum<number | string | null>(inner('c.song_count', '+', inner.ref('p.chain'))).as('s'),
        )
        .where('c.playlist_id', '=', playlistId)
        .where('c.version', '>', after)
        .where('c.version', '<=', upTo)
        .where('c.splice_at', 'is', null)
        .as('copies'),
    ])
    .executeTakeFirstOrThrow();
  return (row.now ?? 0) - (row.then ?? 0) + Number(row.copies ?? 0);
}

/**
 * How a revision changed the entries: `deleted` removed at `at`, then `entries` put there, or (`at` undefined) the
 * whole list; `entries` their ids as kept (comma-separated), undefined when not recorded.
 */
export interface EntrySplice {
  readonly version: number;
  readonly at: number | undefined;
  readonly deleted: number;
  readonly entries: string | undefined;
}

/**
 * The revisions of a playlist from the last whole copy at or before `version` up to `upTo`, oldest first, as changes
 * of the entries, their ids left as kept (their songs are not read): what a merged edit made on `version` replays to
 * learn where entries removed since then stood. Read in the write whose `keptVersionName` found `version` kept and
 * holds it: that read decided, and this one trusts it (rows that do not start from a whole copy and hold `version`
 * are a fault, not a 410).
 */
export async function entryRevisionsFrom(
  db: Q,
  playlistId: number,
  version: number,
  upTo: number,
): Promise<EntrySplice[]> {
  const rows = await db
    .selectFrom('playlist_revisions')
    .select((eb) => ['version', 'splice_at', 'splice_deleted', 'entries', eb('songs', '=', '').as('songless')])
    .where('playlist_id', '=', playlistId)
    .where('version', '<=', upTo)
    .where('version', '>=', (eb) => wholeCopyUpTo(eb, playlistId, version))
    .orderBy('version')
    .execute();
  if (rows[0]?.splice_at !== null || !rows.some((row) => Number(row.version) === version)) {
    throw new Error(`Version ${version} of playlist ${playlistId} was read as kept, but its revisions are not there.`);
  }
  return rows.map((row) => ({
    version: Number(row.version),
    at: row.splice_at ?? undefined,
    deleted: row.splice_deleted ?? 0,
    // A revision written before entries has songs and no entries (the empty text).
    entries: row.entries === '' && !row.songless ? undefined : row.entries,
  }));
}
