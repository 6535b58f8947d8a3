import { setImmediate as nextTurn } from 'node:timers/promises';
import DataLoader from 'dataloader';
import type { Db } from '../db/database.js';
import { catalogVersion } from '../db/playlist-changes.js';
import type { LargeRequests } from './large-requests.js';
import { playlistEntries, songsOfPlaylists, type PlaylistSongRow } from './playlist.repository.js';
import type { PlaylistWithSongs } from './playlist.schemas.js';

/** Songs read in one statement: about 5 ms of SQLite's time, which runs on the event loop. */
const SONGS_PER_READ = 1000;

/** A playlist with the version of it that was read, and a smart playlist's rules as stored (null otherwise). */
export type VersionedPlaylist = Omit<PlaylistWithSongs, 'rules' | 'rulesStatus'> & {
  readonly version: number;
  readonly rules: string | null;
  readonly rulesStatus: string | null;
};

/**
 * A playlist of a page: `keep` is false for one edited while the page's songs were being read, which was read again
 * alone (served, not kept).
 */
export type PagePlaylist = VersionedPlaylist & { readonly keep: boolean };

/**
 * What the answer cache reads when memory has no current answer (the unit tests wrap it to hold a read half-way).
 * Whether the caller may read these playlists was decided before (see playlist.access.ts); `callerId` only gives
 * the caller their share of the bound on long pages.
 */
export interface AnswerReads {
  /** The playlist with its songs and its version, in one statement; undefined when it is not there. */
  playlist(id: number): Promise<VersionedPlaylist | undefined>;
  /**
   * Those of these playlists that are still there, in id order, each with the version its songs were read at, and
   * the catalog version read after their songs (undefined when none is left). A playlist edited while its songs
   * were being read is read again whole.
   */
  playlists(
    callerId: number,
    ids: readonly number[],
  ): Promise<{ playlists: PagePlaylist[]; catalog: number | undefined }>;
  /** PostgreSQL: the current versions of these playlists, in one indexed read (an edit elsewhere shows in them). */
  versions(ids: readonly number[]): Promise<Map<number, number>>;
}

/** The most playlist versions one statement reads. */
const VERSIONS_PER_STATEMENT = 1000;

/** The playlists with their songs, from the entries in playlist and position order. */
function assemble(
  heads: readonly { id: number; name: string; version: number; rules: string | null; rules_status: string | null }[],
  rows: readonly PlaylistSongRow[],
) {
  const byPlaylist = new Map<number, VersionedPlaylist>();
  const result = heads.map((h) => {
    const playlist: VersionedPlaylist = {
      id: h.id,
      name: h.name,
      version: h.version,
      rules: h.rules,
      rulesStatus: h.rules_status,
      songs: [],
    };
    byPlaylist.set(h.id, playlist);
    return playlist;
  });
  for (const row of rows)
    byPlaylist.get(row.playlist_id)?.songs.push({ id: row.id, title: row.title, artist: row.artist });
  return result;
}

/**
 * The reads behind the answer cache; long pages (more songs than one read) are read within `longPages`, the bound
 * that holds them one at a time.
 */
export function databaseReads(db: Db, longPages: LargeRequests): AnswerReads {
  const q = db.kysely;
  // The versions the pages asked for in one turn of the event loop, read in one statement (each still after its
  // request's own page was read; nothing is kept between turns).
  const currentVersions = new DataLoader<number, number | undefined>(
    async (ids) => {
      const rows = await q.selectFrom('playlists').select(['id', 'version']).where('id', 'in', ids).execute();
      const byId = new Map(rows.map((row) => [row.id, Number(row.version)]));
      return ids.map((id) => byId.get(id));
    },
    { cache: false, maxBatchSize: VERSIONS_PER_STATEMENT, batchScheduleFn: (dispatch) => setImmediate(dispatch) },
  );
  /**
   * The songs of these playlists. Most pages fit in one read; a page of long playlists (up to 100 000 songs, 7 MB)
   * is read a piece at a time with the event loop free in between, and only one such page is built at once, so
   * that other users' small requests are not held up behind them (nor behind the garbage they leave).
   */
  async function songsOf(callerId: number, ids: readonly number[]): Promise<PlaylistSongRow[]> {
    const rows = await songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ);
    if (rows.length < SONGS_PER_READ) return rows;
    return longPages(callerId, async () => {
      for (let last = rows.at(-1); last !== undefined;) {
        await nextTurn();
        const after = { playlistId: last.playlist_id, ord: last.ord };
        const more = await songsOfPlaylists(q, db.dialect, ids, SONGS_PER_READ, after);
        for (const row of more) rows.push(row);
        last = more.length < SONGS_PER_READ ? undefined : more.at(-1);
      }
      return rows;
    });
  }

  async function playlist(id: number): Promise<VersionedPlaylist | undefined> {
    const rows = await playlistEntries(q, id);
    const [first] = rows;
    if (first === undefined) return undefined;
    const songs = [];
    for (const row of rows) {
      if (row.song_id !== null) songs.push({ id: row.song_id, title: row.title!, artist: row.artist! });
    }
    return {
      id,
      name: first.name,
      version: Number(first.version),
      rules: first.rules,
      rulesStatus: first.rules_status,
      songs,
    };
  }

  return {
    playlist,

    async playlists(callerId, ids) {
      // The versions, then the songs, then the heads: entries go only with their playlist and ids are never reused,
      // so a playlist whose head is still there at the version it had before its songs were read was read whole;
      // one deleted in between is left out rather than shown short, and one edited in between is read again alone
      // (one statement, so it cannot straddle another edit).
      const heads = () =>
        q
          .selectFrom('playlists')
          .select(['id', 'name', 'version', 'rules', 'rules_status', catalogVersion])
          .where('id', 'in', ids)
          .execute();
      const before = new Map((await heads()).map((h) => [h.id, Number(h.version)]));
      const rows = await songsOf(callerId, ids);
      const after = (await heads()).map((h) => ({ ...h, version: Number(h.version) }));
      after.sort((a, b) => a.id - b.id);
      const assembled = assemble(after, rows);
      const playlists: PagePlaylist[] = [];
      for (const [i, head] of after.entries()) {
        if (before.get(head.id) === head.version) playlists.push({ ...assembled[i]!, keep: true });
        else {
          const again = await playlist(head.id);
          if (again !== undefined) playlists.push({ ...again, keep: false });
        }
      }
      return { playlists, catalog: after[0] === undefined ? undefined : Number(after[0].catalog_version) };
    },

    async versions(ids) {
      const found = await currentVersions.loadMany(ids);
      const versions = new Map<number, number>();
      ids.forEach((id, i) => {
        const version = found[i];
        if (version instanceof Error) throw version;
        if (version !== undefined) versions.set(id, version);
      });
      return versions;
    },
  };
}
