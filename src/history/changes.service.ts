import type { Db } from '../db/database.js';
import { HmacKey } from '../credentials/hmac.js';
import { ApiError } from '../http/errors.js';
import { rfc3339 } from '../http/times.js';
import {
  catalogChangesAfter,
  type CatalogFeedRow,
  currentCatalog,
  feedHorizon,
  feedKey,
  libraryChangesAfter,
  type LibraryFeedRow,
  memberEventsAfter,
  mergeSorted,
  playlistsAfter,
  revisionsAfter,
  type FeedPosition,
  userNames,
  type FeedRow,
} from './changes.repository.js';
import { openToken, signToken, type FeedToken } from './feed-token.js';
import type { FeedChange } from '../domain/change-kinds.js';

/** A token is refused this long before its revisions may be pruned: a write's time is taken before it commits. */
const PRUNE_MARGIN_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface ChangeEntry {
  readonly id: number;
  readonly version?: number;
  readonly change: FeedChange;
  readonly at: string;
  /** A change of a playlist (not of a membership, nor the list of what the caller has): who made it (1.8.0). */
  readonly by?: string;
}

/** A catalog import that changed songs (1.8.0, `types=catalog`): the catalog version it reached. */
export interface CatalogEntry {
  readonly catalog: number;
  readonly change: 'catalog';
  readonly at: string;
}

/**
 * A change of the caller's tree of folders (1.10.0, `types=library`): the tree's version now, for a copy to read
 * `GET /v3/library` again. At most one per answer, the latest.
 */
export interface LibraryEntry {
  readonly library: number;
  readonly change: 'library';
  readonly at: string;
}

export type FeedEntry = ChangeEntry | CatalogEntry | LibraryEntry;

export interface ChangesPage {
  readonly changes: FeedEntry[];
  readonly next: string;
  readonly more: boolean;
}

/**
 * The kinds of items a feed lists (`types`, 1.8.0): section 11's playlist items, the catalog's imports, and (1.10.0)
 * the changes of the caller's tree of folders.
 */
export const FEED_TYPES = ['playlist', 'catalog', 'library'] as const;
export type FeedType = (typeof FEED_TYPES)[number];
export type FeedTypes = ReadonlySet<FeedType>;

/** What a feed lists when `types` is not given: the playlists' items, as before 1.8.0. */
export const PLAYLIST_ITEMS: FeedTypes = new Set(['playlist']);

/** The kinds `types` names (a comma list), or 400 naming the one that is not a kind. */
export function feedTypes(text: string | undefined): FeedTypes {
  if (text === undefined) return PLAYLIST_ITEMS;
  const types = new Set<FeedType>();
  for (const name of text.split(',')) {
    const kind = FEED_TYPES.find((known) => known === name.trim());
    if (kind === undefined) {
      throw ApiError.badRequest(
        `types: ${JSON.stringify(name.trim())} is not a kind of item; the kinds are ${FEED_TYPES.slice(0, -1).join(', ')} and ${FEED_TYPES.at(-1)!}, in a comma list.`,
      );
    }
    types.add(kind);
  }
  return types;
}

const MALFORMED = 'This token is not one the service gave: sync again from the start (call without since).';

/**
 * The change feed (README.md, History). Tokens are `base64url(fields).base64url(HMAC)`, signed with a key every instance
 * reads from the database, so any instance takes any instance's token and none can be forged or altered.
 */
export function changeFeed(db: Db, historyDays: number) {
  const q = db.kysely;
  let key: Promise<HmacKey> | undefined;
  const signer = () => {
    key ??= feedKey(q).then((k) => new HmacKey(Buffer.from(k, 'base64')));
    key.catch(() => {
      key = undefined;
    });
    return key;
  };

  const sign = async (token: FeedToken): Promise<string> => signToken(await signer(), token);

  async function verify(text: string, userId: number): Promise<FeedToken> {
    const token = openToken(await signer(), text);
    // Another user's token is as good as a forged one.
    if (token?.userId !== userId) throw ApiError.badRequest(MALFORMED);
    if (token.issuedAt < Date.now() - historyDays * DAY_MS + PRUNE_MARGIN_MS) {
      throw ApiError.gone(
        `This token is older than the ${historyDays} days changes are kept: sync again from the start (call without since).`,
      );
    }
    return token;
  }

  const entry = (row: { id: number; version: number; change: FeedChange; at: number }): ChangeEntry =>
    row.change === 'delete' || row.change === 'unshared'
      ? { id: row.id, change: row.change, at: rfc3339(row.at) }
      : { id: row.id, version: row.version, change: row.change, at: rfc3339(row.at) };

  /**
   * Several revisions of one playlist that a page read come as one entry, its latest, where that latest stands. Only
   * what this page read: the token still moves past every row of it, so neither the horizon nor paging changes.
   */
  const latestOnly = <T extends { id: number }>(rows: readonly T[]): T[] => {
    const last = new Map(rows.map((row, i) => [row.id, i]));
    return rows.filter((row, i) => last.get(row.id) === i);
  };

  const later = (a: FeedPosition, b: FeedPosition) => (a.xid > b.xid || (a.xid === b.xid && a.seq > b.seq) ? a : b);

  /** The catalog's item of a first answer: its version now. */
  const catalogNow = async (now: number): Promise<CatalogEntry> => {
    const { catalog, at } = await currentCatalog(q);
    return { catalog, change: 'catalog', at: rfc3339(at ?? now) };
  };

  type Logged =
    | (FeedRow & { log: 'revisions' | 'members' })
    | (CatalogFeedRow & { log: 'catalog' })
    | (LibraryFeedRow & { log: 'library' });

  return {
    /**
     * The caller's changes after `since` (every playlist they have, without it; from the current point for `now`), at
     * most `limit`, of the kinds `types` names. Each log moves only when its kind is asked for, so a token used with
     * fewer kinds still delivers the others' items later.
     */
    async changes(
      userId: number,
      since: string | undefined,
      limit: number,
      types: FeedTypes = PLAYLIST_ITEMS,
    ): Promise<ChangesPage> {
      const now = Date.now();
      const playlists = types.has('playlist');
      let token: FeedToken;
      if (since === undefined) {
        // The horizon first: the list read after it shows at least every change before it. The library's log from its
        // start: it holds the caller's latest change only, which says where their tree stands.
        const positions = { ...(await feedHorizon(q, db.dialect)), library: { xid: 0, seq: 0 } };
        token = { userId, positions, listedUpTo: playlists ? 0 : undefined, issuedAt: now };
      } else if (since === 'now') {
        // From the horizon, without the list of what the caller has.
        token = { userId, positions: await feedHorizon(q, db.dialect), listedUpTo: undefined, issuedAt: now };
      } else {
        token = await verify(since, userId);
      }
      // The first answer says where the catalog stands.
      const first: CatalogEntry[] = since === undefined && types.has('catalog') ? [await catalogNow(now)] : [];
      if (playlists && token.listedUpTo !== undefined) {
        const room = limit - first.length;
        const rows = room === 0 ? [] : await playlistsAfter(q, userId, token.listedUpTo, room + 1);
        const more = rows.length > room || room === 0;
        const shown = rows.slice(0, room);
        const listedUpTo = more ? (shown.at(-1)?.id ?? token.listedUpTo) : undefined;
        const next = await sign({ ...token, listedUpTo, issuedAt: now });
        return { changes: [...first, ...shown.map(entry)], next, more };
      }
      const horizon = db.dialect === 'postgres' ? (await feedHorizon(q, db.dialect)).revisions.xid : undefined;
      const { revisions, members, catalog, library } = token.positions;
      const room = limit - first.length;
      const none = Promise.resolve([]);
      const [revisionRows, memberRows, catalogRows, libraryRows] = await Promise.all([
        playlists ? revisionsAfter(q, db.dialect, userId, revisions, horizon, room + 1) : none,
        playlists ? memberEventsAfter(q, userId, members, horizon, room + 1) : none,
        types.has('catalog') ? catalogChangesAfter(q, catalog, horizon, room + 1) : none,
        types.has('library') ? libraryChangesAfter(q, userId, library, horizon) : none,
      ]);
      // One order for the logs: by transaction, then by time (their sequences number each log apart).
      const order = (a: { position: FeedPosition; at: number }, b: { position: FeedPosition; at: number }) =>
        a.position.xid - b.position.xid || a.at - b.at;
      const shown: Logged[] = mergeSorted<Logged>(
        mergeSorted<Logged>(
          mergeSorted<Logged>(
            revisionRows.map((row) => ({ ...row, log: 'revisions' as const })),
            memberRows.map((row) => ({ ...row, log: 'members' as const })),
            order,
            room,
          ),
          catalogRows.map((row) => ({ ...row, log: 'catalog' as const })),
          order,
          room,
        ),
        libraryRows.map((row) => ({ ...row, log: 'library' as const })),
        order,
        room,
      );
      const more = revisionRows.length + memberRows.length + catalogRows.length + libraryRows.length > room;
      /** Each log moves past what this page delivered of it; one it delivered all of, up to the horizon. */
      const moved = (log: Logged['log'], read: readonly unknown[], from: FeedPosition, asked: boolean) => {
        if (!asked) return from;
        const delivered = shown.filter((row) => row.log === log);
        const position = delivered.at(-1)?.position ?? from;
        // Everything of this log below the horizon was delivered: the next read starts there.
        const exhausted = delivered.length === read.length && read.length <= room;
        return exhausted && horizon !== undefined ? later({ xid: horizon, seq: 0 }, position) : position;
      };
      const positions = {
        revisions: moved('revisions', revisionRows, revisions, playlists),
        members: moved('members', memberRows, members, playlists),
        catalog: moved('catalog', catalogRows, catalog, types.has('catalog')),
        library: moved('library', libraryRows, library, types.has('library')),
      };
      const next = await sign({ userId, positions, listedUpTo: token.listedUpTo, issuedAt: now });
      const playlistRows = latestOnly(
        shown.filter(
          (row): row is FeedRow & { log: 'revisions' | 'members' } => row.log !== 'catalog' && row.log !== 'library',
        ),
      );
      const kept = new Set<Logged>(playlistRows);
      const lastImport = shown.findLast((row) => row.log === 'catalog');
      const lastLibrary = shown.findLast((row) => row.log === 'library');
      const names = await userNames(q, [
        ...new Set(playlistRows.flatMap((row) => (row.byId === undefined ? [] : [row.byId]))),
      ]);
      const changes: FeedEntry[] = [...first];
      // Several revisions of a playlist, or several imports, in one page come as one item, the latest, where it stands.
      for (const row of shown) {
        if (row.log === 'catalog') {
          if (row === lastImport) changes.push({ catalog: row.catalog, change: 'catalog', at: rfc3339(row.at) });
          continue;
        }
        if (row.log === 'library') {
          if (row === lastLibrary) changes.push({ library: row.library, change: 'library', at: rfc3339(row.at) });
          continue;
        }
        if (!kept.has(row)) continue;
        const by = row.byId === undefined ? undefined : names.get(row.byId);
        changes.push(by === undefined ? entry(row) : { ...entry(row), by });
      }
      return { changes, next, more };
    },
  };
}

export type ChangeFeed = ReturnType<typeof changeFeed>;
