import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import { readCatalogVersion } from '../db/playlist-changes.js';
import { writePieces, type ExportFormat } from '../formats/formats.js';
import { exportLinks } from '../formats/links.js';
import type { ExportConfig, Limits } from '../config.js';
import { isExpected, preconditionFailed, type ExpectedEtag } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import { tooManySongs } from '../playlists/write/writer.js';
import {
  entriesText,
  OWNER,
  playlistEtag,
  playlistEtags,
  render,
  snapshotOf,
  writeAnswer,
  type ShownEntry,
  type PlaylistAnswer,
} from '../playlists/playlist.render.js';
import type { PlaylistFile } from '../playlists/playlist-files.service.js';
import { quotaReached } from '../playlists/playlist.errors.js';
import type { Grant } from '../playlists/playlist.access.js';
import { NO_LONGER_RESTORABLE } from '../playlists/playlist.access.js';
import { entryOrigins, findDeletedPlaylist } from '../playlists/playlist.repository.js';
import type { PlaylistService } from '../playlists/playlist.service.js';
import { songsByIds } from '../songs/song.repository.js';
import { reservePlaylistSlot } from '../users/user.repository.js';
import type { WorkerPool } from '../workers/worker-pool.js';
import { boundedPerKey } from '../concurrency/bounded.js';
import { diffPlaylists, stepDiff, type Operation } from './diff.js';
import { diffEntries, type EntriesVersion, type EntryDiffOp } from './entries-diff.js';
import { readRules } from '../smart/rules.js';
import { findRuleCycle, ruleCycleError } from '../smart/rules.cycles.js';
import { checkRulePlaylists } from '../smart/smart.checks.js';
import {
  historyBounds,
  pageOfRevisions,
  revisionCount,
  revisionStep,
  versionContent,
  type RevisionSummary,
  type VersionContent,
} from './revision.repository.js';

/**
 * The version whose answer a kept version gives: its own, but a delete changes neither name nor songs, so the
 * version a delete left answers as the one before it, and the ETag its last reader holds names it.
 */
const answeredVersion = (content: VersionContent) =>
  content.change === 'delete' ? content.version - 1 : content.version;

/** Song ids of versions kept in memory (about 8 MB). */
const VERSION_CACHE_IDS = 1_000_000;

const songAnswers = (songs: readonly { id: number; title: string; artist: string }[]) =>
  songs.map(({ id, title, artist }) => ({ id, title, artist }));

export interface HistorySettings {
  readonly limits: Limits;
  readonly exports: ExportConfig;
  readonly historyDays: number;
}

/**
 * A playlist's history (README.md, History): its revisions, any kept version in every form the playlist is served, and
 * restores. Who may read the history or restore a version is the access module's (playlist.access.ts): as for the
 * playlist while it is there, its owner once it is deleted, and for anyone else the 404 a missing playlist gets. A restore of a live playlist is an edit (the one write path, which keeps the
 * cache, search and covers current on every instance); a deleted one is written back under its id.
 */
/** Songs in the two versions past which their diff is computed on a worker thread (bench/file-reading.ts). */
const INLINE_DIFF_SONGS = 200;
/** A user's diffs waiting behind their one diff in progress; one more is refused with 429 before anything is read. */
const DIFFS_WAITING_PER_USER = 8;

export function historyService(db: Db, playlists: PlaylistService, settings: HistorySettings, workers: WorkerPool) {
  const q = db.kysely;
  // A version's songs never change: kept by playlist and version, bounded by the song ids held (8 bytes each).
  const contents = new LRUCache<string, VersionContent>({
    maxSize: VERSION_CACHE_IDS,
    sizeCalculation: (content) => content.songIds.length + 16,
  });

  /** The playlist's history bounds, once access is granted (see playlist.access.ts); 410 for a deleted one without. */
  async function bounds(userId: number, id: number, permission: 'read' | 'edit' = 'read') {
    await playlists.access.requireHistoryAccess(userId, id, permission);
    const found = await historyBounds(q, id);
    if (found === undefined) throw ApiError.gone(NO_LONGER_RESTORABLE);
    return found;
  }

  /**
   * The version as its revision left it: 404 for one that never existed, 410 for one no longer kept. Access is the
   * access module's; then one probe of the revision reads a kept version, so its cost does not grow with the history.
   */
  async function version(
    userId: number,
    id: number,
    wanted: number,
    permission: 'read' | 'edit' = 'read',
  ): Promise<{ content: VersionContent; grant: Grant | undefined }> {
    const { grant } = await playlists.access.requireHistoryAccess(userId, id, permission);
    const key = `${id}:${wanted}`;
    const content = contents.get(key) ?? (await versionContent(q, id, wanted));
    if (content !== undefined) {
      contents.set(key, content);
      return { content, grant };
    }
    const kept = await historyBounds(q, id);
    if (kept === undefined) throw ApiError.gone(NO_LONGER_RESTORABLE);
    if (wanted > kept.newest) throw ApiError.notFound(`This playlist has no version ${wanted}.`);
    throw ApiError.gone(
      `Version ${wanted} of this playlist is no longer kept: versions are kept for ${settings.historyDays} days (the oldest kept is ${kept.oldest}).`,
    );
  }

  async function tracks(songIds: readonly number[], from: Db['kysely'] = q) {
    const byId = new Map((await songsByIds(from, songIds)).map((song) => [song.id, song]));
    return songIds.flatMap((id) => {
      const song = byId.get(id);
      return song === undefined ? [] : [song];
    });
  }

  /** A restore is refused as an edit is when it would leave more songs than a playlist may hold now. */
  function withinSongsLimit(count: number) {
    if (count > settings.limits.songsMax) throw tooManySongs(count, settings.limits.songsMax);
  }

  async function restoreDeleted(userId: number, id: number, expected: ExpectedEtag | undefined, to: VersionContent) {
    // The rules of the version restored (none for a hand-made one), checked as a save of them is.
    const rules = to.rules === null ? null : readRules(JSON.parse(to.rules), settings.limits);
    if (rules !== null) await checkRulePlaylists(playlists.access, userId, rules);
    // Before the songs: the restored playlist's answer is labelled with it (see Snapshot.catalogVersion).
    const catalogVersion = await readCatalogVersion(q);
    const songs = await tracks(to.songIds);
    const made = await playlists.store.undelete(id, userId, songs, catalogVersion, async (trx) => {
      const deleted = await findDeletedPlaylist(trx, id);
      if (deleted?.owner_id !== userId) {
        throw ApiError.conflict('This playlist was restored meanwhile: read it, then retry.');
      }
      const bounds = (await historyBounds(trx, id))!;
      const last = (await versionContent(trx, id, bounds.newest))!;
      if (expected !== undefined) {
        // A deleted playlist has no current answer (`*` fails), but the version its delete left has an ETag.
        const current = { id, version: answeredVersion(last), catalogVersion: await readCatalogVersion(trx) };
        const etag = playlistEtag(current, 'json', OWNER.role);
        if (expected.any) {
          throw new ApiError(
            412,
            'This playlist is deleted, so If-Match: * (any current version) matches nothing: send the ETag of the ' +
              `version its delete left (GET /v3/playlist/${id}/versions/${bounds.newest}), or no If-Match.`,
            { etag },
          );
        }
        // The tag of any form of it (its JSON's, which the restore answers, in the 412).
        if (!isExpected(expected, playlistEtags(current, OWNER.role))) throw preconditionFailed(etag);
      }
      withinSongsLimit(to.songIds.length);
      if (rules !== null) {
        const cycle = await findRuleCycle(trx, id, rules);
        if (cycle !== undefined) throw ruleCycleError(cycle);
      }
      if ((await reservePlaylistSlot(trx, userId, settings.limits.playlistsPerUser)) === undefined) {
        throw quotaReached(settings.limits.playlistsPerUser);
      }
      return {
        name: to.name,
        rules: rules === null ? null : JSON.stringify(rules),
        songIds: songs.map((song) => song.id),
        // The songs the catalog still has, with the entries they had.
        entries: to.entries === undefined ? undefined : keptEntries(to, songs),
        newest: bounds.newest,
        last: last.entries === undefined ? undefined : { songIds: last.songIds, entries: last.entries },
        nextEntry: Number(deleted.next_entry),
      };
    });
    return { id, ...writeAnswer(made.snapshot, OWNER), songCount: made.songCount };
  }

  // One diff of a user's at a time, its reads included: the rest of their burst waits apart, past that 429 at once.
  const diffs = boundedPerKey({
    limit: 1,
    queue: DIFFS_WAITING_PER_USER,
    refuse: () => ApiError.tooManyRequests(1, 'Your previous diffs are still being computed; wait for them first.'),
  });

  /** Versions `from` and `to` (the newest when left out) for a diff: 400 past the newest, 410 for one not kept. */
  async function versionsToDiff(userId: number, id: number, from: number, to: number | undefined) {
    const { target } = await diffBounds(userId, id, from, to);
    const [a, b] = [(await version(userId, id, from)).content, (await version(userId, id, target)).content];
    return { a, b, target };
  }

  /** The versions kept and the version `to` names (the newest when left out); 400 for one past the newest. */
  async function diffBounds(userId: number, id: number, from: number, to: number | undefined) {
    const kept = await bounds(userId, id);
    const target = to ?? kept.newest;
    for (const [which, v] of [
      ['from', from],
      ['to', target],
    ] as const) {
      if (v > kept.newest) {
        throw ApiError.badRequest(`${which} must be a version of this playlist, at most ${kept.newest}.`);
      }
    }
    return { kept, target };
  }

  /**
   * The JSON Patch from version `from` to `to`: of one step that inserted, removed or replaced songs, from its
   * revision alone (whatever the playlist's length); otherwise from the two versions, a long one's on a worker thread.
   */
  async function diff(userId: number, id: number, from: number, to: number | undefined): Promise<Operation[]> {
    const { kept, target } = await diffBounds(userId, id, from, to);
    if (target === from + 1 && from >= kept.oldest) {
      const step = await revisionStep(q, id, target);
      const patch = step === undefined ? undefined : stepDiff(step);
      if (patch !== undefined) return patch;
    }
    const [a, b] = [(await version(userId, id, from)).content, (await version(userId, id, target)).content];
    const versions = { from: { name: a.name, songs: a.songIds }, to: { name: b.name, songs: b.songIds } };
    return a.songIds.length + b.songIds.length > INLINE_DIFF_SONGS
      ? workers.run('diff', versions)
      : diffPlaylists(versions.from, versions.to);
  }

  /** The merged edit's ops from version `from`'s entries to `to`'s: long versions' computed on a worker thread. */
  async function entriesDiff(userId: number, id: number, from: number, to: number | undefined): Promise<EntriesDiff> {
    const { a, b, target } = await versionsToDiff(userId, id, from, to);
    const versions = { from: entriesVersion(a, id), to: entriesVersion(b, id) };
    const ops =
      a.songIds.length + b.songIds.length > INLINE_DIFF_SONGS
        ? await workers.run('entriesDiff', versions)
        : diffEntries(versions.from, versions.to);
    return { from, to: target, ops };
  }

  return {
    /** A page of the owner's playlist's revisions, newest first, and how many there are. */
    async list(
      userId: number,
      id: number,
      limit: number,
      offset: number,
    ): Promise<{ revisions: RevisionSummary[]; total: number }> {
      await bounds(userId, id);
      return { revisions: await pageOfRevisions(q, id, limit, offset), total: await revisionCount(q, id) };
    },

    /** A kept version as JSON, as `GET /v3/playlist/{id}` answers a playlist, and its name. */
    async json(userId: number, id: number, wanted: number): Promise<PlaylistAnswer & { readonly name: string }> {
      const { content, grant } = await version(userId, id, wanted);
      // Before the songs (see Snapshot.catalogVersion).
      const catalogVersion = await readCatalogVersion(q);
      const songs = songAnswers(await tracks(content.songIds));
      const answered = {
        id,
        version: answeredVersion(content),
        catalogVersion,
        name: content.name,
        songs,
        rules: content.rules,
      };
      const snapshot = snapshotOf(answered);
      return { ...render(snapshot, grant ?? OWNER), name: content.name };
    },

    /** A kept version as a playlist file (the `files.get` of the playlist routes, for one version). */
    async file(
      userId: number,
      id: number,
      wanted: number,
      format: ExportFormat,
      origin: string,
    ): Promise<PlaylistFile> {
      if (format === 'json') return this.json(userId, id, wanted);
      const { content, grant } = await version(userId, id, wanted);
      // Before the songs (see Snapshot.catalogVersion): the file's tag is made as the JSON's is.
      const catalogVersion = await readCatalogVersion(q);
      const links = exportLinks(settings.exports.publicUrl ?? origin, settings.exports.locationTemplate, id);
      // A few hundred tracks a turn of the event loop, as the current version's file (playlist-files.service.ts).
      const playlist = { id, name: content.name, tracks: await tracks(content.songIds) };
      const { parts, length } = await writePieces(format, playlist, links);
      const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
      const at = { id, version: answeredVersion(content), catalogVersion };
      return { body: bytes, etag: playlistEtag(at, format, (grant ?? OWNER).role), name: content.name };
    },

    /**
     * The JSON Patch that turns version `from` into version `to` (the current one by default): 400 for a version
     * past the newest, 410 for one no longer kept.
     */
    diff(userId: number, id: number, from: number, to: number | undefined): Promise<Operation[]> {
      return diffs(userId, () => diff(userId, id, from, to));
    },

    /**
     * A kept version's entries form, as `GET …/entries` answered it then (the catalog's titles now; a smart
     * playlist's rules without their status, as the version's JSON), with that form's ETag; 410 as well for a
     * version recorded before entries.
     */
    async entries(userId: number, id: number, wanted: number): Promise<PlaylistAnswer> {
      const { content, grant } = await version(userId, id, wanted);
      const { entries } = entriesVersion(content, id);
      // Before the songs (see Snapshot.catalogVersion).
      const catalogVersion = await readCatalogVersion(q);
      const songs = await tracks(content.songIds);
      const origins = await entryOrigins(q, db.dialect, id, entries);
      // The songs the catalog still has, with the entries they had and who made them.
      const slots: ShownEntry[] = [];
      content.songIds.forEach((songId, i) => {
        const song = songs[slots.length];
        if (song?.id !== songId) return;
        const entry = entries[i]!;
        const origin = origins.get(entry);
        const shown = { id: song.id, title: song.title, artist: song.artist };
        slots.push({ entry, song: shown, addedBy: origin?.addedBy ?? null, addedAt: origin?.addedAt ?? null });
      });
      const at = { id, version: answeredVersion(content), catalogVersion };
      const viewer = grant ?? OWNER;
      const text = entriesText(at, content.name, slots, { rules: content.rules, rulesStatus: null }, viewer);
      return { body: Buffer.from(text), etag: playlistEtag(at, 'entries', viewer.role) };
    },

    /**
     * The merged edit's ops that turn version `from`'s entries into version `to`'s (the current one by default):
     * 400 for a version past the newest, 410 for one no longer kept or recorded before entries.
     */
    entriesDiff(userId: number, id: number, from: number, to: number | undefined): Promise<EntriesDiff> {
      return diffs(userId, () => entriesDiff(userId, id, from, to));
    },

    /**
     * A new revision with the name and songs of a kept version, under `If-Match` as an edit; a deleted playlist
     * comes back under its id.
     */
    async restore(userId: number, id: number, wanted: number, expected: ExpectedEtag | undefined) {
      const { content: to } = await version(userId, id, wanted, 'edit');
      if ((await findDeletedPlaylist(q, id)) !== undefined) {
        return playlists.asWrite(userId, () => restoreDeleted(userId, id, expected, to));
      }
      // A version recorded with its entries gives them back; one recorded before entries keeps the common part.
      const document = {
        name: to.name,
        songs: to.songIds.map((songId, i) => ({ id: songId, entry: to.entries?.[i] })),
      };
      // The writer holds the songs limit, as for every edit.
      const change = () => document;
      // A smart version's rules come back with it (its songs are those they choose now); a hand-made version's
      // songs make the playlist a hand-made one again.
      const rules = to.rules === null ? null : readRules(JSON.parse(to.rules), settings.limits);
      return playlists.edit(userId, id, expected, change, to.songIds.length, 'restore', rules);
    },
  };
}

export type HistoryService = ReturnType<typeof historyService>;

/** `GET …/diff?form=entries`' answer. */
export interface EntriesDiff {
  readonly from: number;
  readonly to: number;
  readonly ops: readonly EntryDiffOp[];
}

/** A version with its entries, for their answer or their diff: 410 for one recorded before entries were. */
function entriesVersion(content: VersionContent, id: number): EntriesVersion {
  if (content.entries === undefined) {
    throw ApiError.gone(
      `Version ${content.version} of this playlist was recorded before entries were, so its entries are not known: GET /v3/playlist/${id}/versions/${content.version} answers its songs.`,
    );
  }
  return { name: content.name, songs: content.songIds, entries: content.entries };
}

/** The entries of a version's songs that the catalog still has (`songs`, read from its ids in order). */
function keptEntries(to: VersionContent, songs: readonly { id: number }[]): number[] {
  const entries: number[] = [];
  let s = 0;
  to.songIds.forEach((songId, i) => {
    if (songs[s]?.id === songId) {
      entries.push(to.entries![i]!);
      s += 1;
    }
  });
  return entries;
}
