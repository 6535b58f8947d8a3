import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import { WRITERS, type ExportFormat } from '../formats/formats.js';
import { exportLinks } from '../formats/links.js';
import type { ExportConfig, Limits } from '../config.js';
import { ifMatch, preconditionFailed } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import { checkSongCount, EditRefused } from '../playlists/playlist-edit.checks.js';
import { asSeenBy, playlistAnswer, etagOf, type PlaylistAnswer } from '../playlists/playlist.answers.js';
import type { PlaylistFile } from '../playlists/playlist-files.service.js';
import { ALREADY_DELETED, type Grant } from '../playlists/playlist.access.js';
import { findDeletedPlaylist, insertEntries } from '../playlists/playlist.repository.js';
import type { PlaylistService } from '../playlists/playlist.service.js';
import { addPlaylistDocument } from '../search/playlist-search.js';
import { playlistDocument } from '../search/search-text.js';
import { songsByIds } from '../songs/song.repository.js';
import { reservePlaylistSlot } from '../users/user.repository.js';
import { diffPlaylistsSliced, type Operation } from './diff.js';
import {
  historyBounds,
  pageOfRevisions,
  recordRevision,
  revisionCount,
  versionContent,
  type RevisionSummary,
  type VersionContent,
} from './revision.repository.js';

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
 * A playlist's history (section 11): its revisions, any kept version in every form the playlist is served, and
 * restores. Who may read the history or restore a version is the access module's (playlist.access.ts): as for the
 * playlist while it is there, its owner once it is deleted, and for anyone else the 404 a missing playlist gets. A restore of a live playlist is an edit (the one write path, which keeps the
 * cache, search and covers current on every instance); a deleted one is written back under its id.
 */
export function historyService(db: Db, playlists: PlaylistService, settings: HistorySettings) {
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
    if (found === undefined) throw ApiError.gone(ALREADY_DELETED);
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
    if (kept === undefined) throw ApiError.gone(ALREADY_DELETED);
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
    try {
      checkSongCount(count, settings.limits);
    } catch (error) {
      throw error instanceof EditRefused ? ApiError.conflict(error.message) : error;
    }
  }

  async function restoreDeleted(userId: number, id: number, precondition: string | undefined, to: VersionContent) {
    const songs = await tracks(to.songIds);
    const answer = await db.write(async (trx) => {
      const deleted = await trx
        .selectFrom('deleted_playlists')
        .select('owner_id')
        .where('id', '=', id)
        .executeTakeFirst();
      if (deleted?.owner_id !== userId) {
        throw ApiError.conflict('This playlist was restored meanwhile: read it, then retry.');
      }
      const bounds = (await historyBounds(trx, id))!;
      const last = (await versionContent(trx, id, bounds.newest))!;
      if (precondition !== undefined) {
        // A deleted playlist has no current answer (`*` fails), but the version its delete left has an ETag.
        const etag = playlistAnswer({ id, name: last.name, songs: songAnswers(await tracks(last.songIds, trx)) }).etag;
        if (precondition.trim() === '*' || !ifMatch(precondition, etag)) throw preconditionFailed(etag);
      }
      withinSongsLimit(to.songIds.length);
      if ((await reservePlaylistSlot(trx, userId, settings.limits.playlistsPerUser)) === undefined) {
        throw ApiError.conflict(
          `You have reached the limit of ${settings.limits.playlistsPerUser} playlists; delete one to make room.`,
        );
      }
      const now = Date.now();
      await trx
        .insertInto('playlists')
        .values({ id, owner_id: userId, name: to.name, created_at: now, version: bounds.newest + 1 })
        .execute();
      await insertEntries(trx, id, to.songIds);
      await addPlaylistDocument(trx, userId, id, playlistDocument(to.name, songs));
      await trx.deleteFrom('deleted_playlists').where('id', '=', id).execute();
      await recordRevision(trx, {
        playlistId: id,
        ownerId: userId,
        byId: userId,
        version: bounds.newest + 1,
        change: 'restore',
        name: to.name,
        before: last.songIds,
        after: to.songIds,
        at: now,
      });
      return playlistAnswer({ id, name: to.name, songs: songAnswers(songs) });
    });
    return { id, ...answer };
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

    /** A kept version as JSON, as `GET /v3/playlist/{id}` answers a playlist. */
    async json(userId: number, id: number, wanted: number): Promise<PlaylistAnswer> {
      const { content, grant } = await version(userId, id, wanted);
      const answer = playlistAnswer({ id, name: content.name, songs: songAnswers(await tracks(content.songIds)) });
      return grant === undefined ? answer : asSeenBy(answer, grant);
    },

    /** A kept version as a playlist file (the `files.get` of the playlist routes, for one version). */
    async file(
      userId: number,
      id: number,
      wanted: number,
      format: ExportFormat,
      origin: string,
    ): Promise<PlaylistFile> {
      if (format === 'json') {
        const answer = await this.json(userId, id, wanted);
        return { ...answer, name: (await version(userId, id, wanted)).content.name };
      }
      const { content } = await version(userId, id, wanted);
      const links = exportLinks(settings.exports.publicUrl ?? origin, settings.exports.locationTemplate, id);
      const bytes = WRITERS[format]({ id, name: content.name, tracks: await tracks(content.songIds) }, links);
      return { body: bytes, etag: etagOf(bytes), name: content.name };
    },

    /**
     * The JSON Patch that turns version `from` into version `to` (the current one by default): 400 for a version
     * past the newest, 410 for one no longer kept.
     */
    async diff(userId: number, id: number, from: number, to: number | undefined): Promise<Operation[]> {
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
      const [a, b] = [(await version(userId, id, from)).content, (await version(userId, id, target)).content];
      return diffPlaylistsSliced({ name: a.name, songs: a.songIds }, { name: b.name, songs: b.songIds });
    },

    /**
     * A new revision with the name and songs of a kept version, under `If-Match` as an edit; a deleted playlist
     * comes back under its id.
     */
    async restore(userId: number, id: number, wanted: number, precondition: string | undefined) {
      const { content: to } = await version(userId, id, wanted, 'edit');
      if ((await findDeletedPlaylist(q, id)) !== undefined) {
        return playlists.asWrite(userId, () => restoreDeleted(userId, id, precondition, to));
      }
      const document = { name: to.name, songs: to.songIds.map((songId) => ({ id: songId })) };
      const change = () => {
        checkSongCount(document.songs.length, settings.limits);
        return document;
      };
      return playlists.edit(userId, id, precondition, change, to.songIds.length, 'restore');
    },
  };
}

export type HistoryService = ReturnType<typeof historyService>;
