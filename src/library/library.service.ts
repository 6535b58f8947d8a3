import { generateKeyBetween, generateNKeysBetween } from 'fractional-indexing';
import type { Limits } from '../config.js';
import { readableBy } from '../db/access-rule.js';
import type { Db } from '../db/database.js';
import type { ContentCoding } from '../http/compression.js';
import { ApiError } from '../http/errors.js';
import type { PlaylistAccess } from '../playlists/playlist.access.js';
import {
  dissolveFolder,
  findFolder,
  findPlacement,
  foldersOf,
  insertFolder,
  itemsIn,
  libraryChanged,
  libraryVersion,
  neighbourKey,
  placeAtTop,
  placePlaylist,
  rekey,
  treeRows,
  unfiled,
  updateFolder,
  NO_SUCH_FOLDER,
  TREE_FOLDER,
  TREE_VERSION,
  type FolderRow,
  type Parent,
  type TreeRow,
} from './library.repository.js';
import { LibraryAnswers, type TreeAnswer } from './library.answers.js';

/** How deep folders nest: a top-level folder is at depth 1. */
export const FOLDER_DEPTH_MAX = 8;

/**
 * Past this length a key is not used: the parent's items are given fresh short keys instead (a bounded rewrite, which
 * a long run of moves into one gap makes necessary once in a while), as a playlist's entries are (entry-order.ts).
 */
const LONGEST_KEY = 48;

/** An item of a folder or of the top level, as `after` and `before` name it. */
export interface AnchorBody {
  readonly folder?: number | undefined;
  readonly playlist?: number | undefined;
}

/** Where an item goes among the items of its parent: after or before one of them, or (neither) at the end. */
export interface Placing {
  readonly after?: AnchorBody | undefined;
  readonly before?: AnchorBody | undefined;
}

type Anchor = { readonly kind: 'folder' | 'playlist'; readonly id: number };
type Side = 'after' | 'before';

/** A folder as its writes answer it. */
export interface FolderAnswer {
  readonly id: number;
  readonly name: string;
  readonly parent: number | null;
}

/** The one anchor `placing` names (`after` or `before`), or 400 naming the field. */
function anchorOf(placing: Placing): { side: Side; anchor: Anchor } | undefined {
  if (placing.after !== undefined && placing.before !== undefined) {
    throw ApiError.badRequest('Send "after" or "before", not both.');
  }
  const side: Side | undefined =
    placing.after !== undefined ? 'after' : placing.before !== undefined ? 'before' : undefined;
  if (side === undefined) return undefined;
  const body = placing[side]!;
  if ((body.folder === undefined) === (body.playlist === undefined)) {
    throw ApiError.badRequest(`"${side}" must name one item: {"folder": id} or {"playlist": id}.`);
  }
  return {
    side,
    anchor: body.folder !== undefined ? { kind: 'folder', id: body.folder } : { kind: 'playlist', id: body.playlist! },
  };
}

const where = (parent: Parent) => (parent === null ? 'the top level' : `folder ${parent}`);

/** The depth of a folder (a top-level one is at 1; the top level itself at 0). */
function depthOf(byId: ReadonlyMap<number, FolderRow>, parent: Parent): number {
  let depth = 0;
  for (let at = parent; at !== null; at = byId.get(at)?.parent ?? null) {
    depth += 1;
    // A loop cannot be stored (every move is checked); this only bounds the walk.
    if (depth > byId.size) break;
  }
  return depth;
}

/** How many levels a folder and those inside it take: 1 for a folder with no folder inside. */
function heightOf(folders: readonly FolderRow[], id: number): number {
  const children = folders.filter((f) => f.parent === id);
  return 1 + Math.max(0, ...children.map((child) => heightOf(folders, child.id)));
}

/** Whether `inner` is `outer` or inside it. */
function within(byId: ReadonlyMap<number, FolderRow>, inner: number, outer: number): boolean {
  let steps = 0;
  for (let at: Parent = inner; at !== null && steps <= byId.size; at = byId.get(at)?.parent ?? null, steps += 1) {
    if (at === outer) return true;
  }
  return false;
}

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** An item of a parent in the tree: a folder (its id and name) or a playlist (its JSON text), by its key. */
type Child =
  | { readonly key: string; readonly folder: number; readonly name: string }
  | { readonly key: string; readonly text: string };

/** A playlist of the tree as JSON; a shared one with its owner's name and the caller's role. */
const playlistJson = (id: number, name: string, owner: string | null, role: string | null) =>
  role === null || owner === null
    ? `{"playlist":${id},"name":${JSON.stringify(name)}}`
    : `{"playlist":${id},"name":${JSON.stringify(name)},"owner":${JSON.stringify(owner)},"role":${JSON.stringify(role)}}`;

/**
 * The tree's answer, `{"version": …, "items": […]}`, as JSON text straight from its rows (treeRows), in the caller's
 * order: each parent's folders and placed playlists by key; then, at the end of the top level, the playlists not
 * filed (or filed in a folder that is no longer there) in the order they came. A folder whose parent is not there is
 * not shown.
 */
export function treeJson(rows: readonly TreeRow[]): { version: number; json: string } {
  let version = 0;
  const folders = new Set<number>();
  for (const row of rows) {
    if (row.kind === TREE_VERSION) version = Number(row.id ?? 0);
    else if (row.kind === TREE_FOLDER) folders.add(Number(row.id));
  }
  const children = new Map<Parent, Child[]>();
  const add = (parent: Parent, child: Child) => {
    const list = children.get(parent);
    if (list === undefined) children.set(parent, [child]);
    else list.push(child);
  };
  const unfiledRows: { came: number; id: number; text: string }[] = [];
  // Folders first, then playlists, as the rows of each parent are sorted stably by key.
  for (const row of rows) {
    if (row.kind !== TREE_FOLDER) continue;
    const parent = row.parent === null ? null : Number(row.parent);
    add(parent, { key: row.order_key!, folder: Number(row.id), name: row.name! });
  }
  for (const row of rows) {
    if (row.kind === TREE_VERSION || row.kind === TREE_FOLDER) continue;
    const id = Number(row.id);
    const text = playlistJson(id, row.name!, row.owner, row.role);
    const parent = row.parent === null ? null : Number(row.parent);
    // A placement in a folder that is no longer there counts as none.
    if (row.order_key === null || (parent !== null && !folders.has(parent))) {
      unfiledRows.push({ came: Number(row.came), id, text });
    } else add(parent, { key: row.order_key, text });
  }
  const render = (parent: Parent): string[] => {
    const list = children.get(parent);
    if (list === undefined) return [];
    list.sort(byKey);
    return list.map((child) =>
      'text' in child
        ? child.text
        : `{"folder":${child.folder},"name":${JSON.stringify(child.name)},"items":[${render(child.folder).join(',')}]}`,
    );
  };
  const top = render(null);
  unfiledRows.sort((a, b) => a.came - b.came || a.id - b.id);
  for (const row of unfiledRows) top.push(row.text);
  return { version, json: `{"version":${version},"items":[${top.join(',')}]}` };
}

/**
 * Each user's own folders and order of the playlists they may read (API 1.10.0, docs/api.md, Folders). Every write
 * runs in one transaction whose first statement counts up the version of the caller's tree (and so, on PostgreSQL,
 * holds their tree's writes one after the other: no two moves can make a loop or file a playlist twice), and tells
 * `changed` after its commit, to wake the caller's waiting requests.
 */
/** The strong ETag of a user's tree at a version. */
export const libraryEtag = (userId: number, version: number): string => `"library-${userId}-${version}"`;

export function libraryService(
  db: Db,
  access: Pick<PlaylistAccess, 'requireRead' | 'refusal'>,
  limits: Pick<Limits, 'foldersMax'>,
  changed: (userId: number) => void = () => {},
  answers: LibraryAnswers = new LibraryAnswers(0),
) {
  const q = db.kysely;
  type Trx = Db['kysely'];

  /** Runs a write of the user's tree: the version first, then `work`; `changed` once it is committed. */
  async function write<T>(userId: number, work: (trx: Trx) => Promise<T>): Promise<T> {
    const result = await db.write(async (trx) => {
      await libraryChanged(trx, db.dialect, { users: [userId] });
      return work(trx);
    });
    changed(userId);
    return result;
  }

  /**
   * Files the readable playlists the user has not filed at the end of the top level, in the order they came, so that
   * an item may go after them (or among them): once each, after which they are placed like any other. `except`: the
   * playlist being placed. Their keys, by playlist id.
   */
  async function fileTheUnfiled(trx: Trx, userId: number, except?: number): Promise<Map<number, string>> {
    const ids = (await unfiled(trx, db.dialect, userId)).filter((id) => id !== except);
    if (ids.length === 0) return new Map();
    const last = await neighbourKey(trx, userId, null, null, 'after');
    const keys = generateNKeysBetween(last, null, ids.length);
    await placeAtTop(
      trx,
      userId,
      ids.map((playlistId, i) => ({ playlistId, key: keys[i]! })),
    );
    return new Map(ids.map((id, i) => [id, keys[i]!]));
  }

  /** The key of the anchor in `parent`; 422 when it is not an item of it. */
  async function anchorKey(trx: Trx, userId: number, parent: Parent, side: Side, anchor: Anchor): Promise<string> {
    const notThere = () =>
      ApiError.unprocessable(`"${side}": ${anchor.kind} ${anchor.id} is not an item of ${where(parent)}.`);
    if (anchor.kind === 'folder') {
      const folder = await findFolder(trx, userId, anchor.id);
      if (folder?.parent !== parent) throw notThere();
      return folder.key;
    }
    const placement = await findPlacement(trx, userId, anchor.id);
    if (placement !== undefined) {
      if (placement.folder !== parent) throw notThere();
      return placement.key;
    }
    // A playlist not filed yet is at the end of the top level, if the user may read it.
    if (parent !== null) throw notThere();
    const keys = await fileTheUnfiled(trx, userId);
    const key = keys.get(anchor.id);
    if (key === undefined) throw notThere();
    return key;
  }

  /** The key of an item (`moving`) that goes into `parent` as `placing` says. */
  async function keyFor(trx: Trx, userId: number, parent: Parent, placing: Placing, moving: Anchor): Promise<string> {
    const wanted = anchorOf(placing);
    if (wanted === undefined) {
      // At the end: of the top level, after the playlists not filed yet too.
      if (parent === null) await fileTheUnfiled(trx, userId, moving.kind === 'playlist' ? moving.id : undefined);
      const last = await neighbourKey(trx, userId, parent, null, 'after');
      return short(trx, userId, parent, moving, generateKeyBetween(last, null));
    }
    const { side, anchor } = wanted;
    if (anchor.kind === moving.kind && anchor.id === moving.id) {
      throw ApiError.unprocessable(`"${side}": an item cannot be placed ${side} itself.`);
    }
    const key = await anchorKey(trx, userId, parent, side, anchor);
    const other = await neighbourKey(trx, userId, parent, key, side);
    return short(
      trx,
      userId,
      parent,
      moving,
      side === 'after' ? generateKeyBetween(key, other) : generateKeyBetween(other, key),
    );
  }

  /** `key`, or when it is too long, a fresh key at its place after the parent's other items are given fresh keys. */
  async function short(trx: Trx, userId: number, parent: Parent, moving: Anchor, key: string): Promise<string> {
    if (key.length <= LONGEST_KEY) return key;
    const others = (await itemsIn(trx, userId, parent)).filter((i) => i.kind !== moving.kind || i.id !== moving.id);
    const at = others.filter((item) => item.key < key).length;
    const keys = generateNKeysBetween(null, null, others.length + 1);
    await rekey(
      trx,
      userId,
      parent,
      others.map((item, i) => ({ ...item, key: keys[i < at ? i : i + 1]! })),
    );
    return keys[at]!;
  }

  /** The folder `parent` names, of the user's; 404 naming the field otherwise. */
  function parentFolder(byId: ReadonlyMap<number, FolderRow>, parent: number, field: string): FolderRow {
    const found = byId.get(parent);
    if (found === undefined) throw ApiError.notFound(`${NO_SUCH_FOLDER} "${field}" names none of yours.`);
    return found;
  }

  function tooDeep(): ApiError {
    return ApiError.conflict(`Folders nest at most ${FOLDER_DEPTH_MAX} deep; this would nest deeper.`);
  }

  return {
    /** The version of the user's tree (what its ETag is made of), one row. */
    version: (userId: number): Promise<number> => libraryVersion(q, userId),

    /**
     * The user's tree as its answer, at `version` (just read: see `version`) when it is kept at that version, or read
     * now in one statement (at that version or a newer one, which its answer names) and kept.
     */
    async answer(userId: number, version: number): Promise<TreeAnswer> {
      const kept = answers.kept(userId, version);
      if (kept !== undefined) return kept;
      const built = treeJson(await treeRows(q, userId));
      return answers.keep(userId, built.version, Buffer.from(built.json));
    },

    /** The answer's bytes in `coding`, compressed once for its version. */
    encoded: (answer: TreeAnswer, coding: ContentCoding): Promise<Buffer> => answers.encoded(answer, coding),

    /** A new folder, in `parent` (null: the top level), placed as `placing` says. */
    async createFolder(userId: number, folder: { name: string; parent: Parent } & Placing): Promise<FolderAnswer> {
      anchorOf(folder);
      return write(userId, async (trx) => {
        const folders = await foldersOf(trx, userId);
        if (folders.length >= limits.foldersMax) {
          throw ApiError.conflict(`You have ${limits.foldersMax} folders, the most one user may have.`);
        }
        const byId = new Map(folders.map((f) => [f.id, f]));
        if (folder.parent !== null) parentFolder(byId, folder.parent, 'parent');
        if (depthOf(byId, folder.parent) + 1 > FOLDER_DEPTH_MAX) throw tooDeep();
        const key = await keyFor(trx, userId, folder.parent, folder, { kind: 'folder', id: 0 });
        const id = await insertFolder(trx, { userId, parent: folder.parent, name: folder.name, key });
        return { id, name: folder.name, parent: folder.parent };
      });
    },

    /**
     * Renames a folder of the user's, or moves it: into `parent` (null: the top level; absent: where it is), placed as
     * `placing` says (neither: at the end).
     */
    async editFolder(
      userId: number,
      id: number,
      edit: { name?: string | undefined; parent?: Parent | undefined } & Placing,
    ): Promise<FolderAnswer> {
      const moves = edit.parent !== undefined || edit.after !== undefined || edit.before !== undefined;
      if (edit.name === undefined && !moves) {
        throw ApiError.badRequest('Send "name", "parent", "after" or "before": what to change.');
      }
      anchorOf(edit);
      return write(userId, async (trx) => {
        const folders = await foldersOf(trx, userId);
        const byId = new Map(folders.map((f) => [f.id, f]));
        const folder = byId.get(id);
        if (folder === undefined) throw ApiError.notFound(NO_SUCH_FOLDER);
        const parent = edit.parent === undefined ? folder.parent : edit.parent;
        let key: string | undefined;
        if (moves) {
          if (parent !== null) {
            parentFolder(byId, parent, 'parent');
            if (within(byId, parent, id)) {
              throw ApiError.conflict('A folder cannot be moved into itself or into a folder inside it.');
            }
          }
          if (depthOf(byId, parent) + heightOf(folders, id) > FOLDER_DEPTH_MAX) throw tooDeep();
          key = await keyFor(trx, userId, parent, edit, { kind: 'folder', id });
        }
        const name = edit.name ?? folder.name;
        await updateFolder(trx, userId, id, { name, ...(key === undefined ? {} : { parent, key }) });
        return { id, name, parent };
      });
    },

    /** Removes a folder of the user's: what it held takes its place in its parent, in the same order. */
    async removeFolder(userId: number, id: number): Promise<void> {
      await write(userId, async (trx) => {
        const folder = await findFolder(trx, userId, id);
        if (folder === undefined) throw ApiError.notFound(NO_SUCH_FOLDER);
        const items = await itemsIn(trx, userId, id);
        let moved: { kind: 'folder' | 'playlist'; id: number; key: string }[] = [];
        if (items.length > 0) {
          const before = await neighbourKey(trx, userId, folder.parent, folder.key, 'before');
          const after = await neighbourKey(trx, userId, folder.parent, folder.key, 'after');
          const keys = generateNKeysBetween(before, after, items.length);
          moved = items.sort(byKey).map((item, i) => ({ ...item, key: keys[i]! }));
        }
        await dissolveFolder(trx, userId, id, folder.parent, moved);
      });
    },

    /**
     * Files a playlist the user may read in one of their folders (null: the top level), placed as `placing` says; 404
     * or 410 for a playlist they may not read, as every playlist route answers.
     */
    async place(userId: number, playlistId: number, folder: Parent, placing: Placing): Promise<void> {
      anchorOf(placing);
      await access.requireRead(userId, playlistId);
      await write(userId, async (trx) => {
        // Read again after the version's lock: a delete or an unshare that committed meanwhile took it away.
        const readable = await trx
          .selectFrom('playlists as p')
          .select('p.id')
          .where('p.id', '=', playlistId)
          .where((eb) => readableBy(eb, userId))
          .executeTakeFirst();
        if (readable === undefined) throw await access.refusal(userId, playlistId, trx);
        if (folder !== null && (await findFolder(trx, userId, folder)) === undefined) {
          throw ApiError.notFound(`${NO_SUCH_FOLDER} "folder" names none of yours.`);
        }
        const key = await keyFor(trx, userId, folder, placing, { kind: 'playlist', id: playlistId });
        await placePlaylist(trx, userId, playlistId, folder, key);
      });
    },

    /** The user's folder, or 404 (a `?folder=` of the playlist list). */
    async requireFolder(userId: number, id: number): Promise<void> {
      if ((await findFolder(q, userId, id)) === undefined) throw ApiError.notFound(NO_SUCH_FOLDER);
    },
  };
}

export type LibraryService = ReturnType<typeof libraryService>;
