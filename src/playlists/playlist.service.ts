import { Counter, Gauge, type Registry } from 'prom-client';
import { playlistAccess, type ReadGrant, type Reader } from './playlist.access.js';
import { PlaylistCache, type PageSnapshots } from './playlist.cache.js';
import { Freshness } from './freshness.js';
import { documentChange, type Edit } from './write/document-change.js';
import type { RulesChange } from './write/change.js';
import { playlistWriter } from './write/writer.js';
import type { EditKind } from '../domain/change-kinds.js';
import type { ExpectedEtag } from '../http/conditional.js';
import {
  OWNER,
  pageEtag,
  pageItem,
  pageJson,
  render,
  type AnswerAt,
  type PageItem,
  type PlaylistAnswer,
  type Snapshot,
  type Viewer,
  type WriteAnswer,
  writeAnswer,
} from './playlist.render.js';
import type { Limits, SearchSettings } from '../config.js';
import type { BodyParts } from '../http/body-parts.js';
import type { Db } from '../db/database.js';
import type { ExportPlaylist, ExportTrack } from '../formats/playlist-format.js';
import { searchTerms, type SearchGate } from '../search/bounded-search.js';
import { playlistSearch } from '../search/playlist-search.js';
import { findSongsAtCatalogVersion, type CatalogSong } from '../songs/song.repository.js';
import * as playlists from './playlist.repository.js';
import type { Membership } from '../domain/roles.js';
import { LONG_PLAYLIST, largeRequests } from './large-requests.js';
import { notInCatalog } from './playlist.errors.js';
import { playlistStore } from './write/store.js';
import type { PageQuery } from '../http/schemas.js';
import type { Scope } from './playlist.schemas.js';
import type { RulesRunner } from '../smart/rules-runner.js';
import type { Rules } from '../smart/rules.js';
import { checkRulePlaylists } from '../smart/smart.checks.js';
import { smartRefresher } from '../smart/smart.refresh.js';
import { smartDependents, writeSmartInputs } from '../smart/smart.repository.js';
import {
  countFiled,
  filedIds,
  findFolder,
  NO_SUCH_FOLDER,
  pageOfFiled,
  type Parent,
} from '../library/library.repository.js';
import { ApiError } from '../http/errors.js';

/** A hand-made playlist to create: its name and songs. */
export interface NewPlaylistInput {
  readonly name: string;
  readonly songIds: readonly number[];
}

/** What a playlist's cover shows. */
export interface CoverFacts {
  readonly name: string;
  readonly songCount: number;
  /** The first four distinct artists, in playlist order. */
  readonly artists: readonly string[];
}

export interface Page {
  /** The page as JSON bytes, in pieces to send in turn: an array of `playlistwithsongs`. */
  readonly body: BodyParts;
  readonly total: number;
  /** A weak ETag over what the page shows. */
  readonly etag: string;
}

/** Catalog songs a caller has read, and the catalog version it read before them. */
export interface CatalogRead {
  readonly songs: readonly CatalogSong[];
  readonly catalogVersion: number;
}

/**
 * An edit's answer: the edited playlist as the editor now reads it (its version, its ETag, and its JSON written only
 * when asked for), and how many songs it holds.
 */
export type Edited = WriteAnswer & { readonly id: number; readonly songCount: number };

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
  runner: RulesRunner,
  report: (error: unknown, message: string) => void = () => {},
  registry?: Registry,
) {
  const q = db.kysely;
  const store = playlistStore(db);
  // What this process remembers of playlists (access's standings, the answers' snapshots) hears what to forget here.
  const freshness = new Freshness(db);
  const access = playlistAccess(db, freshness);
  const cache = new PlaylistCache(db, cacheBytes, freshness);
  // Every write through the store (a smart playlist's refresh too) is forgotten by this process's memory at once.
  store.events.on((event) => {
    freshness.forget(event.id);
  });
  // Smart playlists that name a playlist follow each write of it, after the write is answered (smart.refresh.ts).
  const refreshes =
    registry &&
    new Counter({
      name: 'mixtape_smart_refreshes_total',
      help: "Smart playlists' refreshes by outcome: changed (a new version), unchanged, gone or failed",
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
  const smart = smartRefresher(
    db,
    store,
    limits,
    (error, id) => {
      report(error, `Refreshing smart playlist ${id} failed.`);
    },
    {
      // Off the event loop and bounded in time as a request's rules are, in the owner's share.
      songsOf: (_q, rules, unreadable, ownerId) =>
        runner.songIds(rules, { now: Date.now(), songsMax: limits.songsMax, unreadable }, ownerId),
      done: (outcome) => refreshes?.inc({ outcome }),
    },
  );
  if (registry !== undefined) {
    new Gauge({
      name: 'mixtape_smart_refreshes_waiting',
      help: 'Smart playlists waiting in this instance for a refresh',
      registers: [registry],
      collect() {
        this.set(smart.queue.size);
      },
    });
  }
  const search = playlistSearch(db, searchSettings, searchGate);
  // Long playlists being created a few at a time: each takes the event loop for a while. A user holds one place
  // among everyone's; the rest of their burst waits apart.
  const longCreates = largeRequests(2, 'Your previous long playlists are still being saved; wait for them first.');
  // Every change of a playlist goes through the writer's one door; creates and deletes take their turn there too.
  const writer = playlistWriter(db, store, access, limits.songsMax, runner, (trx, ownerId, rules) =>
    smart.inputsOf(trx, ownerId, rules),
  );
  const writes = writer.inTurn;

  /** A page's answers as the caller sees them: those shared with them carry the owner's name and their role. */
  function asMemberSees(found: PageSnapshots, memberships: ReadonlyMap<number, Membership>): PageItem[] {
    return found.snapshots.map((snapshot, i) => pageItem(snapshot, memberships.get(found.ids[i]!) ?? OWNER));
  }

  function page(items: readonly PageItem[], total: number): Page {
    return { body: pageJson(items), total, etag: pageEtag(items, total) };
  }

  /**
   * A page of the playlists the user filed in one of their folders (null: the top level), theirs and those shared with
   * them, in their order (library/, 1.10.0); with `words`, those that match them.
   */
  async function filed(userId: number, folder: Parent, words: string[], limit: number, offset: number): Promise<Page> {
    if (folder !== null && (await findFolder(q, userId, folder)) === undefined) {
      throw ApiError.notFound(NO_SUCH_FOLDER);
    }
    if (words.length === 0) {
      const found = await cache.page(userId, () => pageOfFiled(q, db.dialect, userId, folder, limit, offset));
      const memberships = new Map<number, Membership>();
      for (const row of found.rows) {
        if (row.role !== null && row.owner_name !== null) {
          memberships.set(row.id, { role: row.role, ownerName: row.owner_name });
        }
      }
      const first = found.rows[0];
      const total = first !== undefined ? Number(first.total) : await countFiled(q, userId, folder);
      return page(asMemberSees(found, memberships), total);
    }
    const found = await cache.pageOfIds(userId, async () => {
      const [matches, order] = await Promise.all([
        search.matching(userId, words, 'all'),
        filedIds(q, db.dialect, userId, folder),
      ]);
      const hit = new Set(matches.ids);
      const ids = order.filter((id) => hit.has(id));
      return { ids: ids.slice(offset, offset + limit), catalogVersion: matches.catalogVersion, more: ids.length };
    });
    return page(asMemberSees(found, await playlists.membershipsOf(q, userId, found.ids)), found.more);
  }

  /** The caller's own playlists' answers. */
  const asOwnerSees = (found: PageSnapshots) => found.snapshots.map((snapshot) => pageItem(snapshot, OWNER));

  async function create(
    userId: number,
    input: NewPlaylistInput,
    read: CatalogRead | undefined,
  ): Promise<PlaylistAnswer & { id: number }> {
    // The catalog version before the songs, or with them (see Snapshot.catalogVersion).
    const { songs: found, catalogVersion } = read ?? (await findSongsAtCatalogVersion(q, input.songIds));
    const byId = new Map(found.map((s) => [s.id, s]));
    const unknown = [...new Set(input.songIds.filter((id) => !byId.has(id)))];
    if (unknown.length > 0) throw notInCatalog(unknown);
    const songs = input.songIds.map((id) => byId.get(id)!);
    const made = await store.create(userId, input.name, songs, catalogVersion, limits.playlistsPerUser);
    return { id: made.snapshot.id, ...render(made.snapshot, OWNER) };
  }

  /** A smart playlist: the songs its rules choose now (each playlist they name one the caller may read). */
  async function createSmart(userId: number, name: string, rules: Rules): Promise<PlaylistAnswer & { id: number }> {
    await checkRulePlaylists(access, userId, rules);
    // What the songs are worked out from, read before them and kept, so that the first read need not refresh it.
    const inputs = await smart.inputsOf(q, userId, rules);
    // Off the event loop, stopped with 422 past its time (rules-runner.ts).
    const songIds = await runner.songIds(rules, { now: Date.now(), songsMax: limits.songsMax }, userId);
    // The catalog version with the songs (see Snapshot.catalogVersion); a song deleted in between is left out.
    const { songs: found, catalogVersion } = await findSongsAtCatalogVersion(q, songIds);
    const byId = new Map(found.map((s) => [s.id, s]));
    const songs = songIds.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
    const text = JSON.stringify(rules);
    const made = await store.create(userId, name, songs, catalogVersion, limits.playlistsPerUser, text);
    await db.write((trx) => writeSmartInputs(trx, made.snapshot.id, inputs.text));
    return { id: made.snapshot.id, ...render(made.snapshot, OWNER) };
  }

  /** The granted playlist's current snapshot; 404 or 410 when it was deleted since access was granted. */
  async function snapshot(reader: Reader, grant: ReadGrant): Promise<Snapshot> {
    const found = await cache.playlist(grant);
    if (found === undefined) throw await access.readRefusal(reader, grant.id);
    return found;
  }

  /**
   * The playlist's current snapshot as the reader (a user or a link) may read it, with their grant: a smart playlist
   * whose inputs changed since its last refresh (a write on another instance, or one whose refresh still waits) is
   * refreshed first.
   */
  async function current(reader: Reader, id: number): Promise<{ grant: ReadGrant; found: Snapshot }> {
    const grant = await access.requireRead(reader, id);
    const found = await snapshot(reader, grant);
    if (!found.smart || !(await smart.freshen(id, found.version))) return { grant, found };
    const again = await access.requireRead(reader, id);
    return { grant: again, found: await snapshot(reader, again) };
  }

  return {
    /** Who may read, edit or own a playlist (and its history): the one place that decides it. */
    access,

    /** The one module that writes playlists (a restore of a deleted one and merged edits write through it too). */
    store,

    /** The one door for every change of a playlist (write/writer.ts). */
    writer,

    /**
     * Applies an edit of the playlist's document (`kind`: what its revision records; `rules`: what it does to a smart
     * playlist's rules) when `expected` (`If-Match`) names its current answer: 404, 403, 410, 412, 409 or the edited
     * playlist's answer.
     */
    async edit(
      userId: number,
      id: number,
      expected: ExpectedEtag | undefined,
      edit: Edit,
      cost = 0,
      kind: EditKind = 'edit',
      rules?: RulesChange,
    ): Promise<Edited> {
      const { grant, edited } = await writer.apply(userId, id, documentChange(edit, kind, cost, rules), expected);
      return { id, ...writeAnswer(edited.snapshot, grant), songCount: edited.songCount };
    },

    /** Runs another write of the user's playlists (a restore of a deleted one, a share) among the user's writes. */
    asWrite: writes,

    /** Creates a playlist of catalog songs; `read`: the songs of `input.songIds` when the caller has read them. */
    create(userId: number, input: NewPlaylistInput, read?: CatalogRead): Promise<PlaylistAnswer & { id: number }> {
      const run = () => create(userId, input, read);
      // A long playlist takes tens of milliseconds of the event loop to check, index and write: a few at a time.
      return writes(userId, () => (input.songIds.length > LONG_PLAYLIST ? longCreates(userId, run) : run()));
    },

    /** Creates a smart playlist (1.7.0) of the songs its rules (from `readRules`) choose. */
    createSmart(userId: number, name: string, rules: Rules): Promise<PlaylistAnswer & { id: number }> {
      const run = () => createSmart(userId, name, rules);
      return writes(userId, () => longCreates(userId, run));
    },

    /**
     * The playlist as JSON bytes with its ETag, as the reader (a user, or a link) sees it, and its name; 404 or 410
     * otherwise.
     */
    async get(reader: Reader, id: number): Promise<PlaylistAnswer & { readonly name: string }> {
      const { grant, found } = await current(reader, id);
      return { ...render(found, grant), name: found.name };
    },

    /** The smart playlists' refreshes (their queue waits for writes' answers; tests and shutdown wait for it). */
    smart,

    /**
     * After a change of the playlist's members committed (`kind`, by its owner or a member leaving): what this
     * process remembers of it forgets, and the smart playlists that name it are refreshed, since whether their owners
     * may read it may have changed.
     */
    async membersChanged(
      id: number,
      ownerId: number,
      by: number,
      kind: 'shared' | 'unshared',
      member: number,
    ): Promise<void> {
      const followers = await smartDependents(q, id);
      store.events.emit({ id, ownerId, version: undefined, kind, by, followers, others: [member] });
    },

    /**
     * The playlist with what the catalog knows of its songs, for the playlist files, with what their ETag is made of
     * (its version, read with them, and the caller's role); 404 or 410 otherwise.
     */
    async exportable(
      reader: Reader,
      id: number,
    ): Promise<ExportPlaylist & { readonly at: AnswerAt; readonly role: Viewer['role'] }> {
      const { role } = await access.requireRead(reader, id);
      const rows = await playlists.playlistEntriesForExport(q, id);
      const [first] = rows;
      if (first === undefined) throw await access.readRefusal(reader, id);
      const tracks: ExportTrack[] = [];
      // Through a link, no user but the owner is named.
      const named = (row: (typeof rows)[number]) =>
        row.added_by !== null && (role !== 'link' || Number(row.added_by_id) === row.owner_id);
      for (const row of rows) {
        if (row.song_id === null) continue;
        tracks.push({
          id: row.song_id,
          title: row.title!,
          artist: row.artist!,
          album: row.album!,
          duration: row.duration,
          addedBy: named(row) ? row.added_by! : undefined,
          addedAt: row.added_at === null ? undefined : Number(row.added_at),
        });
      }
      const at = { id, version: Number(first.version), catalogVersion: Number(first.catalog_version) };
      return { id, name: first.name, tracks, at, role };
    },

    /** The playlist in brief, with the same 404 and 410 answers as `get`. */
    async coverFacts(reader: Reader, id: number): Promise<CoverFacts> {
      await access.requireRead(reader, id);
      const facts = await playlists.coverFacts(q, id);
      if (facts === undefined) throw await access.readRefusal(reader, id);
      return facts;
    },

    async remove(userId: number, id: number): Promise<void> {
      const { ownerId } = await access.requireAccess(userId, id, 'own');
      const deleted = await writes(userId, () => store.remove(id, ownerId));
      if (!deleted) throw await access.refusal(userId, id);
    },

    /**
     * A page of the caller's playlists (`scope` own), of those shared with them (shared) or of both (all), as the
     * JSON array the API answers with (a shared one as its member sees it), and how many match in all.
     */
    async list(userId: number, query: PageQuery & { scope?: Scope | undefined; folder?: string }): Promise<Page> {
      const { limit, offset } = query;
      const scope = query.scope ?? 'own';
      const words = searchTerms(query.search, limits.searchMaxLength);
      if (query.folder !== undefined) {
        return filed(userId, query.folder === 'top' ? null : Number(query.folder), words, limit, offset);
      }
      if (words.length === 0) {
        if (scope === 'own') {
          const found = await cache.page(userId, () => playlists.pageOfPlaylists(q, userId, limit, offset));
          const total = found.rows[0]?.total ?? (await playlists.countPlaylists(q, userId));
          return page(asOwnerSees(found), total);
        }
        // The page's rows carry each shared playlist's role and owner, and the total: one statement.
        const found =
          scope === 'shared'
            ? await cache.page(userId, () => playlists.pageOfSharedPlaylists(q, userId, limit, offset))
            : await cache.page(userId, () => playlists.pageOfAllPlaylists(q, userId, limit, offset));
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
      const found = await cache.pageOfIds(userId, async (committed) => {
        const page = { offset, limit };
        const { ids, catalogVersion, versions } = await search.matching(userId, words, scope, page, committed);
        return { ids: ids.slice(offset, offset + limit), catalogVersion, more: ids.length, versions };
      });
      if (scope === 'own') return page(asOwnerSees(found), found.more);
      return page(asMemberSees(found, await playlists.membershipsOf(q, userId, found.ids)), found.more);
    },
  };
}

export type PlaylistService = ReturnType<typeof playlistService>;
