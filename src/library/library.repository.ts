import { sql, type Kysely, type OnConflictBuilder } from 'kysely';
import type { Dialect } from '../db/database.js';
import { ownPlaylists, ownedBy, sharedPlaylists, sharedWith } from '../db/access-rule.js';
import { compiledOnce } from '../db/compiled.js';
import { catalogVersion, type BigintColumn } from '../db/playlist-changes.js';
import type { Database } from '../db/schema.js';
import type { MemberRole } from '../domain/roles.js';

/**
 * What the library reads and writes (migration 2026-12-15-library): each user's folders, where they filed the
 * playlists they may read, and the version of their tree. The tree is one order per parent (a folder, or the top
 * level: `null`) across folders and placements, by order keys compared as bytes; a readable playlist with no placement
 * is at the end of the top level, in the order it came.
 */

type Q = Kysely<Database>;

/** The 404 of a folder that is not the caller's (or none). */
export const NO_SUCH_FOLDER = 'No such folder.';

/** A folder's or the top level's (`null`) id. */
export type Parent = number | null;

/** What changed in users' trees, written in the transaction of the write that changed it. */
export interface LibraryChange {
  /** These users' trees changed. */
  readonly users?: readonly number[];
  /** And those of this playlist's members. */
  readonly membersOf?: number;
  /** This playlist leaves the trees of those users (a delete, an unshare): their placements of it are removed. */
  readonly unplace?: number;
}

/**
 * Counts up the version of the trees of the users `change` names (a new row of `library_changes` each, the older one
 * replaced), and takes their playlist out of them when asked: called in the transaction of every write that changes
 * what a tree shows (a playlist created, renamed, deleted or restored, a share or an unshare, and every write of the
 * library itself, whose first statement it is). On PostgreSQL the rows it writes stay locked until the commit: the
 * writes of one user's tree run one after the other. The versions are written first, in user order, so that two
 * writes that name the same users wait for each other rather than deadlock.
 */
export async function libraryChanged(trx: Q, dialect: Dialect, change: LibraryChange): Promise<void> {
  const users = [...new Set(change.users ?? [])];
  if (users.length === 0 && change.membersOf === undefined) return;
  if (users.length === 1) {
    // The everyday case (a write by one user, of their own playlist and its members' trees): compiled once.
    const params = { user: users[0]!, at: Date.now() };
    if (change.membersOf === undefined) await versions[dialect].own(trx, params);
    else await versions[dialect].withMembers(trx, { ...params, id: change.membersOf });
  } else await manyChanged(trx, dialect, users, change.membersOf);
  if (change.unplace !== undefined) await unplace(trx, users, change.membersOf, change.unplace);
}

/** The next version on SQLite, one writer at a time: the largest written plus one (several users may share it). */
const nextSqlite = sql<number>`(SELECT coalesce(max(seq), 0) + 1 FROM library_changes)`;
/** On PostgreSQL: the sequence's next number. */
const nextPg = sql<number>`nextval('library_changes_seq')`;
const thisXid = sql<number>`pg_current_xact_id()::text::bigint`;

/**
 * The statements of `libraryChanged` for one user, and for one user and a playlist's members, compiled once for a
 * dialect: the next version (SQLite: the largest plus one; PostgreSQL: the sequence, and the transaction's id).
 */
function versionWrites(dialect: Dialect) {
  const next = dialect === 'postgres' ? nextPg : nextSqlite;
  const bump = (oc: OnConflictBuilder<Database, 'library_changes'>) =>
    oc
      .column('user_id')
      .doUpdateSet((eb) =>
        dialect === 'postgres'
          ? { seq: nextPg, xid: thisXid, at: eb.ref('excluded.at') }
          : { seq: eb.ref('excluded.seq'), at: eb.ref('excluded.at') },
      );
  return {
    own: compiledOnce(
      'library-changed',
      (p: { user: number; at: number }) => (q) =>
        q.insertInto('library_changes').values({ user_id: p.user, seq: next, at: p.at }).onConflict(bump),
    ),
    withMembers: compiledOnce('library-changed-members', (p: { user: number; id: number; at: number }) => (q) => {
      // The user (first: the lower ids lock first on PostgreSQL) and the members of the playlist `id`.
      const named = q
        .selectFrom('users')
        .select('id as user_id')
        .where('id', '=', p.user)
        .union(q.selectFrom('playlist_members').select('user_id').where('playlist_id', '=', p.id));
      const rows = q
        .selectFrom(named.as('x'))
        .select(['x.user_id', next.as('seq'), sql<number>`CAST(${p.at} AS bigint)`.as('at')]);
      return (
        q
          .insertInto('library_changes')
          .columns(['user_id', 'seq', 'at'])
          // SQLite reads an upsert's ON after a bare FROM as a join's: a WHERE ends the select.
          .expression(dialect === 'postgres' ? rows.orderBy('x.user_id') : rows.where(sql<boolean>`true`))
          .onConflict(bump)
      );
    }),
  };
}
const versions = { sqlite: versionWrites('sqlite'), postgres: versionWrites('postgres') };

/** `libraryChanged` for several users (a share names two), built for each call. */
async function manyChanged(trx: Q, dialect: Dialect, users: readonly number[], membersOf: number | undefined) {
  const sources = [
    ...(users.length === 0 ? [] : [sql`SELECT id AS user_id FROM users WHERE id IN (${sql.join(users)})`]),
    ...(membersOf === undefined ? [] : [sql`SELECT user_id FROM playlist_members WHERE playlist_id = ${membersOf}`]),
  ];
  const named = sql.join(sources, sql` UNION `);
  const at = Date.now();
  if (dialect === 'postgres') {
    await sql`INSERT INTO library_changes (user_id, seq, at)
      SELECT x.user_id, nextval('library_changes_seq'), ${at} FROM (${named}) x ORDER BY x.user_id
      ON CONFLICT (user_id) DO UPDATE SET seq = nextval('library_changes_seq'),
        xid = pg_current_xact_id()::text::bigint, at = excluded.at`.execute(trx);
  } else {
    // One writer at a time: the next number is the largest written plus one (several users may share it).
    await sql`INSERT INTO library_changes (user_id, seq, at)
      SELECT x.user_id, (SELECT coalesce(max(seq), 0) + 1 FROM library_changes), ${at} FROM (${named}) x
      WHERE true
      ON CONFLICT (user_id) DO UPDATE SET seq = excluded.seq, at = excluded.at`.execute(trx);
  }
}

/** Takes the playlist `id` out of the trees of `users` and of its members'. */
async function unplace(trx: Q, users: readonly number[], membersOf: number | undefined, id: number) {
  await trx
    .deleteFrom('library_placements')
    .where('playlist_id', '=', id)
    .where((eb) => {
      const either = [];
      if (users.length > 0) either.push(eb('user_id', 'in', users));
      if (membersOf !== undefined) {
        either.push(
          eb('user_id', 'in', eb.selectFrom('playlist_members').select('user_id').where('playlist_id', '=', membersOf)),
        );
      }
      return eb.or(either);
    })
    .execute();
}

/** The version of the user's tree: 0 before its first change. */
export async function libraryVersion(db: Q, userId: number): Promise<number> {
  const row = await db.selectFrom('library_changes').select('seq').where('user_id', '=', userId).executeTakeFirst();
  return Number(row?.seq ?? 0);
}

/** A folder as the tree reads it. */
export interface FolderRow {
  readonly id: number;
  readonly parent: Parent;
  readonly name: string;
  readonly key: string;
}

const folderRow = (row: {
  id: number | string;
  parent_id: number | string | null;
  name: string;
  order_key: string;
}): FolderRow => ({
  id: Number(row.id),
  parent: row.parent_id === null ? null : Number(row.parent_id),
  name: row.name,
  key: row.order_key,
});

/** What a row of the tree's read is: the version of the tree, a folder, or a playlist the user may read. */
export const TREE_VERSION = 0;
export const TREE_FOLDER = 1;
export const TREE_PLAYLIST = 2;

/**
 * A row of the tree's read: its version (`id`, null before the first change), one of the user's folders (`parent`,
 * `name`, `order_key`), or one of the playlists they may read with where they filed it (`parent` and `order_key`
 * null when they did not) and when it came into their library (`came`); a shared one with the member's `role` and
 * the owner's name (`owner`).
 */
export interface TreeRow {
  readonly kind: number;
  readonly id: number | string | null;
  readonly parent: number | string | null;
  readonly name: string | null;
  readonly order_key: string | null;
  readonly role: MemberRole | null;
  readonly owner: string | null;
  readonly came: BigintColumn | null;
}

/**
 * The whole tree in one statement, so in one snapshot: the version, the folders, and the playlists the user may read
 * (the two halves of the access rule, each through its key) with their placements. Compiled once (a prepared
 * statement on PostgreSQL); the rows come in no order. The first branch names and types the columns (PostgreSQL
 * would take its untyped nulls for text).
 */
const readTree = compiledOnce('library-tree', (p: { userId: number }) => (q) => {
  const placement = sql`LEFT JOIN library_placements l ON l.playlist_id = p.id AND l.user_id = ${p.userId}`;
  const query = sql<TreeRow>`SELECT ${sql.lit(TREE_VERSION)} AS kind,
      (SELECT seq FROM library_changes WHERE user_id = ${p.userId}) AS id, CAST(NULL AS bigint) AS parent,
      CAST(NULL AS text) AS name, CAST(NULL AS text) AS order_key, CAST(NULL AS text) AS role,
      CAST(NULL AS text) AS owner, CAST(NULL AS bigint) AS came
    UNION ALL
    SELECT ${sql.lit(TREE_FOLDER)}, f.id, f.parent_id, f.name, f.order_key, NULL, NULL, NULL
      FROM folders f WHERE f.user_id = ${p.userId}
    UNION ALL
    SELECT ${sql.lit(TREE_PLAYLIST)}, p.id, l.folder_id, p.name, l.order_key, NULL, NULL, p.created_at
      FROM playlists p ${placement} WHERE ${ownedBy(p.userId)}
    UNION ALL
    SELECT ${sql.lit(TREE_PLAYLIST)}, p.id, l.folder_id, p.name, l.order_key, m.role, o.name, m.added_at
      FROM playlist_members m JOIN playlists p ON p.id = m.playlist_id JOIN users o ON o.id = m.owner_id ${placement}
      WHERE ${sharedWith(p.userId)}`;
  return { compile: () => query.compile(q) };
});

/** The user's tree as rows (see TreeRow), read in one statement. */
export async function treeRows(db: Q, userId: number): Promise<TreeRow[]> {
  return (await readTree(db, { userId })).rows;
}

/** Every folder of the user, in a write's transaction. */
export async function foldersOf(db: Q, userId: number): Promise<FolderRow[]> {
  const rows = await db
    .selectFrom('folders')
    .select(['id', 'parent_id', 'name', 'order_key'])
    .where('user_id', '=', userId)
    .execute();
  return rows.map(folderRow);
}

/**
 * The playlists the user may read (their own, and the current ones shared with them), each with their placement
 * (left joined) and, for a shared one, the member's role and the owner's name: the two halves of the access rule read
 * apart through their keys, put together.
 */
function readableWithPlacement(db: Q, userId: number) {
  const own = ownPlaylists(db, userId)
    .leftJoin('library_placements as l', (join) =>
      join.onRef('l.playlist_id', '=', 'p.id').on('l.user_id', '=', userId),
    )
    .select([
      'p.id',
      'p.name',
      'p.version',
      sql<MemberRole | null>`NULL`.as('role'),
      sql<string | null>`NULL`.as('owner_name'),
      'l.folder_id',
      'l.order_key',
      sql<BigintColumn>`p.created_at`.as('came'),
    ]);
  const shared = sharedPlaylists(db, userId)
    .innerJoin('users as o', 'o.id', 'm.owner_id')
    .leftJoin('library_placements as l', (join) =>
      join.onRef('l.playlist_id', '=', 'p.id').on('l.user_id', '=', userId),
    )
    .select([
      'p.id',
      'p.name',
      'p.version',
      'm.role',
      'o.name as owner_name',
      'l.folder_id',
      'l.order_key',
      sql<BigintColumn>`m.added_at`.as('came'),
    ]);
  return db.selectFrom(own.unionAll(shared).as('x'));
}

/** The order of a parent's playlists: the placed ones by key, then those with no placement as they came. */
function inOrder(dialect: Dialect) {
  const key = dialect === 'postgres' ? sql`x.order_key COLLATE "C"` : sql`x.order_key`;
  return sql`CASE WHEN x.order_key IS NULL THEN 1 ELSE 0 END, ${key}, x.came, x.id`;
}

/** The condition "in this parent" on the rows of `readableWithPlacement`. */
const inParent = (parent: Parent) =>
  parent === null ? sql<boolean>`x.folder_id IS NULL` : sql<boolean>`x.folder_id = ${parent}`;

/**
 * A page of the playlists the user filed in `parent` (a folder, or the top level), in their order, each with its
 * version, the member's role and the owner's name for a shared one, how many there are in all and the catalog version
 * (a page past the end has no row; `countFiled` tells then).
 */
export async function pageOfFiled(
  db: Q,
  dialect: Dialect,
  userId: number,
  parent: Parent,
  limit: number,
  offset: number,
) {
  return readableWithPlacement(db, userId)
    .select([
      'x.id',
      'x.version',
      'x.role',
      'x.owner_name',
      sql<BigintColumn>`count(*) OVER ()`.as('total'),
      catalogVersion,
    ])
    .where(inParent(parent))
    .orderBy(inOrder(dialect))
    .limit(limit)
    .offset(offset)
    .execute();
}

/** How many playlists the user filed in `parent`. */
export async function countFiled(db: Q, userId: number, parent: Parent): Promise<number> {
  const row = await readableWithPlacement(db, userId)
    .select((eb) => eb.fn.countAll<BigintColumn>().as('n'))
    .where(inParent(parent))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The ids of the playlists the user filed in `parent`, in their order. */
export async function filedIds(db: Q, dialect: Dialect, userId: number, parent: Parent): Promise<number[]> {
  const rows = await readableWithPlacement(db, userId)
    .select('x.id')
    .where(inParent(parent))
    .orderBy(inOrder(dialect))
    .execute();
  return rows.map((row) => row.id);
}

/** The readable playlists the user has not filed (at the end of the top level), in the order they came. */
export async function unfiled(db: Q, dialect: Dialect, userId: number): Promise<number[]> {
  const rows = await readableWithPlacement(db, userId)
    .select('x.id')
    .where('x.order_key', 'is', null)
    .orderBy(inOrder(dialect))
    .execute();
  return rows.map((row) => row.id);
}

/** The user's folder; undefined when it is not theirs (or none). */
export async function findFolder(db: Q, userId: number, id: number): Promise<FolderRow | undefined> {
  const row = await db
    .selectFrom('folders')
    .select(['id', 'parent_id', 'name', 'order_key'])
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row === undefined ? undefined : folderRow(row);
}

/** Where the user filed a playlist; undefined when they did not. */
export async function findPlacement(
  db: Q,
  userId: number,
  playlistId: number,
): Promise<{ folder: Parent; key: string } | undefined> {
  const row = await db
    .selectFrom('library_placements')
    .select(['folder_id', 'order_key'])
    .where('user_id', '=', userId)
    .where('playlist_id', '=', playlistId)
    .executeTakeFirst();
  return row === undefined
    ? undefined
    : { folder: row.folder_id === null ? null : Number(row.folder_id), key: row.order_key };
}

/**
 * The key of the parent's item next to `key`: the first after it (`after`), or the last before it (`before`), or with
 * no `key` the last of all; null when there is none. Two indexed reads of one row each (folders, placements).
 */
export async function neighbourKey(
  db: Q,
  userId: number,
  parent: Parent,
  key: string | null,
  side: 'after' | 'before',
): Promise<string | null> {
  const last = side === 'before' || key === null;
  const direction = last ? 'desc' : 'asc';
  const compare = side === 'after' ? '>' : '<';
  let folders = db
    .selectFrom('folders')
    .select('order_key')
    .where('user_id', '=', userId)
    .where('parent_id', parent === null ? 'is' : '=', parent);
  let placed = db
    .selectFrom('library_placements')
    .select('order_key')
    .where('user_id', '=', userId)
    .where('folder_id', parent === null ? 'is' : '=', parent);
  if (key !== null) {
    folders = folders.where('order_key', compare, key);
    placed = placed.where('order_key', compare, key);
  }
  const rows = await Promise.all([
    folders.orderBy('order_key', direction).limit(1).executeTakeFirst(),
    placed.orderBy('order_key', direction).limit(1).executeTakeFirst(),
  ]);
  const found = rows.flatMap((row) => (row === undefined ? [] : [row.order_key]));
  if (found.length === 0) return null;
  // Keys compare as bytes: their characters are ASCII.
  return found.reduce((a, b) => (last ? (a > b ? a : b) : a < b ? a : b));
}

/** Files a playlist for the user: in `folder` (null: the top level) at `key`. */
export async function placePlaylist(db: Q, userId: number, playlistId: number, folder: Parent, key: string) {
  await db
    .insertInto('library_placements')
    .values({ user_id: userId, playlist_id: playlistId, folder_id: folder, order_key: key })
    .onConflict((oc) => oc.columns(['user_id', 'playlist_id']).doUpdateSet({ folder_id: folder, order_key: key }))
    .execute();
}

/** Files several playlists at the top level, each at its key (those that had none). */
export async function placeAtTop(
  db: Q,
  userId: number,
  placed: readonly { readonly playlistId: number; readonly key: string }[],
) {
  // A thousand rows a statement: SQLite takes at most 32 766 parameters in one.
  for (let at = 0; at < placed.length; at += 1000) {
    await db
      .insertInto('library_placements')
      .values(
        placed
          .slice(at, at + 1000)
          .map((p) => ({ user_id: userId, playlist_id: p.playlistId, folder_id: null, order_key: p.key })),
      )
      .execute();
  }
}

/** A new folder of the user's; its id. */
export async function insertFolder(
  db: Q,
  folder: { userId: number; parent: Parent; name: string; key: string },
): Promise<number> {
  const row = await db
    .insertInto('folders')
    .values({
      user_id: folder.userId,
      parent_id: folder.parent,
      name: folder.name,
      order_key: folder.key,
      created_at: Date.now(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** The folder's name, parent and key, as given. */
export async function updateFolder(
  db: Q,
  userId: number,
  id: number,
  changes: { name?: string; parent?: Parent; key?: string },
): Promise<void> {
  await db
    .updateTable('folders')
    .set({
      ...(changes.name === undefined ? {} : { name: changes.name }),
      ...(changes.parent === undefined ? {} : { parent_id: changes.parent }),
      ...(changes.key === undefined ? {} : { order_key: changes.key }),
    })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .execute();
}

/** An item of a folder or of the top level, with its key. */
export interface KeyedItem {
  readonly kind: 'folder' | 'playlist';
  readonly id: number;
  readonly key: string;
}

/** A parent's items (folders and placements), in their order. */
export async function itemsIn(db: Q, userId: number, parent: Parent): Promise<KeyedItem[]> {
  const [folders, placed] = await Promise.all([
    db
      .selectFrom('folders')
      .select(['id', 'order_key'])
      .where('user_id', '=', userId)
      .where('parent_id', parent === null ? 'is' : '=', parent)
      .execute(),
    db
      .selectFrom('library_placements')
      .select(['playlist_id as id', 'order_key'])
      .where('user_id', '=', userId)
      .where('folder_id', parent === null ? 'is' : '=', parent)
      .execute(),
  ]);
  return [
    ...folders.map((f) => ({ kind: 'folder' as const, id: Number(f.id), key: f.order_key })),
    ...placed.map((p) => ({ kind: 'playlist' as const, id: p.id, key: p.order_key })),
  ].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Gives the user's folder's items, in order, these keys in `parent`; then removes the folder. */
export async function dissolveFolder(
  db: Q,
  userId: number,
  id: number,
  parent: Parent,
  moved: readonly KeyedItem[],
): Promise<void> {
  await rekey(db, userId, parent, moved);
  await db.deleteFrom('folders').where('id', '=', id).where('user_id', '=', userId).execute();
}

/** Puts these items of the user's in `parent`, each at its key: a statement each. */
export async function rekey(db: Q, userId: number, parent: Parent, items: readonly KeyedItem[]): Promise<void> {
  for (const item of items) {
    if (item.kind === 'folder') {
      await db
        .updateTable('folders')
        .set({ parent_id: parent, order_key: item.key })
        .where('id', '=', item.id)
        .where('user_id', '=', userId)
        .execute();
    } else {
      await db
        .updateTable('library_placements')
        .set({ folder_id: parent, order_key: item.key })
        .where('user_id', '=', userId)
        .where('playlist_id', '=', item.id)
        .execute();
    }
  }
}
