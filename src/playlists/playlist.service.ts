import { boundedPerKey } from '../concurrency/bounded.js';
import { ChangeLog } from '../db/playlist-changes.js';
import { playlistAccess } from './playlist.access.js';
import { PlaylistCache, type Answers } from './playlist.cache.js';
import { playlistEditor } from './playlist-edit.service.js';
import { asSeenBy, pageEtag, pageJson, playlistAnswer, type PlaylistAnswer } from './playlist.answers.js';
import type { Limits, SearchSettings } from '../config.js';
import type { Db } from '../db/database.js';
import type { ExportPlaylist, ExportTrack } from '../formats/playlist-format.js';
import { ApiError } from '../http/errors.js';
import { searchTerms, type SearchGate } from '../search/bounded-search.js';
import { addPlaylistDocument, playlistSearch } from '../search/playlist-search.js';
import { playlistDocument } from '../search/search-text.js';
import { findSongsByIds, type CatalogSong } from '../songs/song.repository.js';
import { reservePlaylistSlot, releasePlaylistSlot } from '../users/user.repository.js';
import * as playlists from './playlist.repository.js';
import type { Membership } from './playlist.repository.js';
import { LONG_PLAYLIST, largeRequests, notInCatalog } from './playlist.rules.js';
import type { PageQuery } from '../http/schemas.js';
import type { NewPlaylist, Scope } from './playlist.schemas.js';

/** What a playlist's cover shows. */
export interface CoverFacts {
  readonly name: string;
  readonly songCount: number;
  /** The first four distinct artists, in playlist order. */
  readonly artists: readonly string[];
}

export interface Page {
  /** The page as JSON bytes: an array of `playlistwithsongs`. */
  readonly body: Buffer;
  readonly total: number;
  /** A weak ETag over what the page shows. */
  readonly etag: string;
}

/** A user's writes running at once, and waiting for their turn; one more is refused with 429. */
const WRITES_PER_USER = 2;
const WRITES_WAITING_PER_USER = 64;

/**
 * The playlist rules: creation against the catalog and the quota; and the answers, served from memory when they
 * cannot have changed (see PlaylistCache). Every method that serves one playlist asks `requireAccess` first.
 */
export function playlistService(
  db: Db,
  limits: Limits,
  cacheBytes: number,
  searchSettings: SearchSettings,
  searchGate: SearchGate,
) {
  const q = db.kysely;
  const changes = db.dialect === 'sqlite' ? new ChangeLog(db) : undefined;
  const access = playlistAccess(db, changes);
  const cache = new PlaylistCache(db, cacheBytes, changes);
  const search = playlistSearch(db, searchSettings, searchGate);
  // Long playlists being created a few at a time: each takes the event loop for a while. A user holds one place
  // among everyone's; the rest of their burst waits apart.
  const longCreates = largeRequests(2, 'Your previous long playlists are still being saved; wait for them first.');
  // A user's creates, edits and deletes: a few at a time, so that one user's burst holds a few of the pooled
  // connections (or of the SQLite writer's batches), never most of them; the rest of the burst waits apart.
  const writes = boundedPerKey({
    limit: WRITES_PER_USER,
    queue: WRITES_WAITING_PER_USER,
    refuse: () => ApiError.tooManyRequests(1, 'Your previous changes are still being saved; wait for them first.'),
  });

  /** A page's answers as the caller sees them: those shared with them carry the owner's name and their role. */
  function asMemberSees(found: Answers, memberships: ReadonlyMap<number, Membership>): PlaylistAnswer[] {
    return found.answers.map((answer, i) => {
      const membership = memberships.get(found.ids[i]!);
      return membership === undefined ? answer : asSeenBy(answer, membership);
    });
  }

  function page(answers: readonly PlaylistAnswer[], total: number): Page {
    return { body: pageJson(answers), total, etag: pageEtag(answers, total) };
  }

  async function create(
    userId: number,
    input: NewPlaylist,
    catalog: readonly CatalogSong[] | undefined,
  ): Promise<PlaylistAnswer & { id: number }> {
    const found = catalog ?? (await findSongsByIds(q, input.songIds));
    const byId = new Map(found.map((s) => [s.id, s]));
    const unknown = [...new Set(input.songIds.filter((id) => !byId.has(id)))];
    if (unknown.length > 0) throw notInCatalog(unknown);
    const songs = input.songIds.map((id) => byId.get(id)!);
    const doc = playlistDocument(input.name, songs);
    const quota = limits.playlistsPerUser;
    const full = () => ApiError.conflict(`You have reached the limit of ${quota} playlists; delete one to make room.`);
    const now = Date.now();
    let id: number;
    if (db.dialect === 'postgres') {
      const row = { ownerId: userId, name: input.name, songIds: input.songIds, doc, now };
      const created = await playlists.createPlaylistAtOnce(q, row, quota);
      if (created === undefined) throw full();
      id = created;
    } else {
      id = await db.write(async (trx) => {
        if ((await reservePlaylistSlot(trx, userId, quota)) === undefined) throw full();
        const playlistId = await playlists.insertPlaylist(trx, userId, input.name, now, input.songIds);
        await playlists.insertEntries(trx, playlistId, input.songIds);
        await addPlaylistDocument(trx, userId, playlistId, doc);
        return playlistId;
      });
    }
    const created = songs.map((s) => ({ id: s.id, title: s.title, artist: s.artist }));
    return { id, ...playlistAnswer({ id, name: input.name, songs: created }) };
  }

  // An edit made here forgets the answer this process keeps; other processes see the playlist's new version.
  const editor = playlistEditor(db, limits, access, (id) => {
    cache.forget(id);
  });

  return {
    /** Who may read, edit or own a playlist (and its history): the one place that decides it. */
    access,

    /** Edits the playlist (see playlistEditor): 404, 410, 412 or the edited playlist's answer. */
    edit: (...args: Parameters<typeof editor.edit>) => writes(args[0], () => editor.edit(...args)),

    /** Runs another write of the user's playlists (a restore of a deleted one) among the user's writes. */
    asWrite: <T>(userId: number, work: () => Promise<T>): Promise<T> => writes(userId, work),

    /** Creates a playlist of catalog songs; `catalog`: the songs of `input.songIds` when the caller has read them. */
    create(
      userId: number,
      input: NewPlaylist,
      catalog?: readonly CatalogSong[],
    ): Promise<PlaylistAnswer & { id: number }> {
      const run = () => create(userId, input, catalog);
      // A long playlist takes tens of milliseconds of the event loop to check, index and write: a few at a time.
      return writes(userId, () => (input.songIds.length > LONG_PLAYLIST ? longCreates(userId, run) : run()));
    },

    /** The playlist as JSON bytes with its ETag; 404 or 410 otherwise. */
    async get(userId: number, id: number): Promise<PlaylistAnswer> {
      const grant = await access.requireAccess(userId, id, 'read');
      const answer = await cache.playlist(grant);
      // Deleted since access was granted.
      if (answer === undefined) throw await access.refusal(userId, id);
      return asSeenBy(answer, grant);
    },

    /** The playlist with what the catalog knows of its songs, for the playlist files; 404 or 410 otherwise. */
    async exportable(userId: number, id: number): Promise<ExportPlaylist> {
      await access.requireAccess(userId, id, 'read');
      const rows = await playlists.playlistEntriesForExport(q, id);
      const [first] = rows;
      if (first === undefined) throw await access.refusal(userId, id);
      const tracks: ExportTrack[] = [];
      for (const row of rows) {
        if (row.song_id === null) continue;
        tracks.push({
          id: row.song_id,
          title: row.title!,
          artist: row.artist!,
          album: row.album!,
          duration: row.duration,
        });
      }
      return { id, name: first.name, tracks };
    },

    /** The playlist in brief, with the same 404 and 410 answers as `get`. */
    async coverFacts(userId: number, id: number): Promise<CoverFacts> {
      await access.requireAccess(userId, id, 'read');
      const facts = await playlists.coverFacts(q, id);
      if (facts === undefined) throw await access.refusal(userId, id);
      return facts;
    },

    async remove(userId: number, id: number): Promise<void> {
      const { ownerId } = await access.requireAccess(userId, id, 'own');
      const deleted = await writes(userId, () =>
        db.write(async (trx) => {
          if (!(await playlists.deletePlaylist(trx, id, ownerId, Date.now()))) return false;
          await releasePlaylistSlot(trx, ownerId);
          return true;
        }),
      );
      if (!deleted) throw await access.refusal(userId, id);
      cache.forget(id);
    },

    /**
     * A page of the caller's playlists (`scope` own), of those shared with them (shared) or of both (all), as the
     * JSON array the API answers with (a shared one as its member sees it), and how many match in all.
     */
    async list(userId: number, query: PageQuery & { scope?: Scope | undefined }): Promise<Page> {
      const { limit, offset } = query;
      const scope = query.scope ?? 'own';
      const words = searchTerms(query.search, limits.searchMaxLength);
      if (words.length === 0) {
        if (scope === 'own') {
          const found = await cache.page(userId, playlists.pageOfPlaylists(q, userId, limit, offset));
          const total = found.rows[0]?.total ?? (await playlists.countPlaylists(q, userId));
          return page(found.answers, total);
        }
        // The page's rows carry each shared playlist's role and owner, and the total: one statement.
        const found =
          scope === 'shared'
            ? await cache.page(userId, playlists.pageOfSharedPlaylists(q, userId, limit, offset))
            : await cache.page(userId, playlists.pageOfAllPlaylists(q, userId, limit, offset));
        const memberships = new Map<number, Membership>();
        for (const row of found.rows) {
          if (row.role !== null && row.owner_name !== null) {
            memberships.set(row.id, { role: row.role, ownerName: row.owner_name });
          }
        }
        const first = found.rows[0];
        const total =
          first !== undefined
            ? Number(first.total)
            : (await playlists.countSharedPlaylists(q, userId)) +
              (scope === 'all' ? await playlists.countPlaylists(q, userId) : 0);
        return page(asMemberSees(found, memberships), total);
      }
      // One read finds the page and the total (a page past the end costs no second count).
      const found = await cache.pageOfIds(userId, async () => {
        const { ids, catalogVersion } = await search.matching(userId, words, scope);
        return { ids: ids.slice(offset, offset + limit), catalogVersion, more: ids.length };
      });
      if (scope === 'own') return page(found.answers, found.more);
      return page(asMemberSees(found, await playlists.membershipsOf(q, userId, found.ids)), found.more);
    },
  };
}

export type PlaylistService = ReturnType<typeof playlistService>;
