import type { Limits } from '../../config.js';
import type { Db } from '../../db/database.js';
import { changesSince, entryRevisionsFrom, keptVersionName } from '../../history/revision.repository.js';
import type { ExpectedEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import {
  entriesPageEtag,
  entriesText,
  playlistEtag,
  type ShownEntry,
  type AnswerAt,
  type Viewer,
} from '../playlist.render.js';
import { entryOrigins, playlistEntryRows } from '../playlist.repository.js';
import type { PlaylistService } from '../playlist.service.js';
import type { Change } from '../write/change.js';
import type { Written } from '../write/store.js';
import {
  findEditKey,
  insertEditKey,
  keptResults,
  readResults,
  requestDigest,
  writesOfKeys,
} from './edit-keys.repository.js';
import { entryName, entryNumber } from './entry-names.js';
import { entryPageRows } from './entry-pages.repository.js';
import {
  formerLists,
  merge,
  UnknownEntry,
  type EditOp,
  type Entry,
  type EntryId,
  type MergeInput,
  type OpResult,
} from './merge.js';

/** At most this many versions between a merged edit's base and the current one (older: 410, read and retry). */
export const MERGE_VERSIONS = 1000;

/**
 * At most this many changes between a merged edit's base and the current version when an anchor removed since must
 * be placed from them (more: 409, read and retry): the entries each revision removed and inserted and one for each,
 * a whole copy of the list (the history keeps one once the splices before it add up to the list's length) counting
 * its length. Replaying them reads about this many ids, a few milliseconds on the event loop.
 */
export const MERGE_CHANGES = 50_000;

/** An op as the body's schema lets it through (each op's members are checked by `readOps`); entries are strings. */
export interface ApiOp {
  readonly op: 'insert' | 'remove' | 'move' | 'rename';
  readonly songIds?: readonly number[];
  readonly entry?: string;
  readonly name?: string;
  readonly after?: string | null;
  readonly before?: string;
  /** An insert's names for the entries it makes, one per song, which later ops of the request use as `#ref`. */
  readonly refs?: readonly string[];
}

/** `POST …/edits`' body. */
export interface EditsRequest {
  readonly base?: number | undefined;
  readonly key?: string | undefined;
  readonly atomic?: boolean | undefined;
  /** Keys of the caller's earlier requests on this playlist whose writes the client has taken in (offline queues). */
  readonly seen?: readonly string[] | undefined;
  readonly ops: readonly ApiOp[];
}

/** An op's result as the API answers it. */
export type ApiResult =
  | { readonly applied: true; readonly entries?: readonly string[] }
  | { readonly applied: false; readonly reason: 'removed' | 'conflict'; readonly message: string };

/** The entry an API name stands for; 422 naming the op's member for one this playlist cannot have had. */
function entryOf(name: string, path: string): number {
  const entry = entryNumber(name);
  if (entry === undefined) throw neverHad(path, name);
  return entry;
}

const neverHad = (path: string, name: string) =>
  new ApiError(422, `${path}: this playlist never had the entry ${JSON.stringify(name)}.`);

const keyUsed = () =>
  new ApiError(
    422,
    'This key was sent before with another request on this playlist (other ops, "base", "atomic" or "seen"): a key stands ' +
      'for one request; send a new key with a new request.',
  );

/** The merge's ops, from the API's (entries named by number), each checked for its form: 400 naming the op. */
function readOps(ops: readonly ApiOp[]): EditOp[] {
  // The refs the inserts read so far declared: a later op may name their entries as `#ref`.
  const declared = new Set<string>();
  return ops.map((op, i): EditOp => {
    const path = `ops/${i}`;
    const named = (name: string, member: string): EntryId => {
      if (!name.startsWith('#')) return entryOf(name, `${path}/${member}`);
      const ref = name.slice(1);
      if (!declared.has(ref)) {
        throw ApiError.badRequest(
          `${path}/${member}: ${JSON.stringify(name)} names no entry that an earlier insert of this request made (its "refs").`,
        );
      }
      return { ref };
    };
    const anchor = (o: { after?: string | null; before?: string }) => {
      if (o.after !== undefined && o.before !== undefined) {
        throw ApiError.badRequest(`${path}: give "after" or "before", not both.`);
      }
      if (o.before !== undefined) return { before: named(o.before, 'before') };
      if (o.after === null) return { after: null };
      if (o.after !== undefined) return { after: named(o.after, 'after') };
      return {};
    };
    const need = (member: string, present: boolean) => {
      if (!present) throw ApiError.badRequest(`${path}: a ${op.op} needs "${member}".`);
    };
    const only = (...members: string[]) => {
      const extra = Object.keys(op).find((member) => member !== 'op' && !members.includes(member));
      if (extra !== undefined) throw ApiError.badRequest(`${path}/${extra}: a ${op.op} takes no "${extra}".`);
    };
    switch (op.op) {
      case 'insert': {
        only('songIds', 'after', 'before', 'refs');
        need('songIds', op.songIds !== undefined);
        const place = anchor(op);
        if (op.refs === undefined) return { op: 'insert', songIds: op.songIds!, ...place };
        if (op.refs.length !== op.songIds!.length) {
          throw ApiError.badRequest(
            `${path}/refs: one ref per song of "songIds" (${op.songIds!.length}), not ${op.refs.length}.`,
          );
        }
        op.refs.forEach((ref, k) => {
          if (declared.has(ref))
            throw ApiError.badRequest(`${path}/refs/${k}: the ref ${JSON.stringify(ref)} is declared twice.`);
          declared.add(ref);
        });
        return { op: 'insert', songIds: op.songIds!, refs: op.refs, ...place };
      }
      case 'remove':
        only('entry');
        need('entry', op.entry !== undefined);
        return { op: 'remove', entry: named(op.entry!, 'entry') };
      case 'move':
        only('entry', 'after', 'before');
        need('entry', op.entry !== undefined);
        return { op: 'move', entry: named(op.entry!, 'entry'), ...anchor(op) };
      case 'rename':
        only('name');
        need('name', op.name !== undefined);
        return { op: 'rename', name: op.name! };
    }
  });
}

const apiResult = (result: OpResult): ApiResult =>
  result.applied
    ? result.entries === undefined
      ? { applied: true }
      : { applied: true, entries: result.entries.map(entryName) }
    : result;

/**
 * The entries form of a playlist to a reader, as `GET …/entries` answers it and a merged edit's answer holds it: the
 * playlist with its entries, then what its JSON carries after its songs (a smart playlist's `rules` and `rulesStatus`,
 * a member's `owner` and `role`: playlist.render.ts), with the form's ETag.
 */
function entriesAnswer(
  at: AnswerAt,
  name: string,
  entries: readonly ShownEntry[],
  smart: Pick<Written, 'rules' | 'rulesStatus'>,
  viewer: Viewer,
): { text: string; etag: string } {
  return { text: entriesText(at, name, entries, smart, viewer), etag: playlistEtag(at, 'entries', viewer.role) };
}

const gone = (version: number) =>
  ApiError.gone(
    `Version ${version} of this playlist is no longer kept for merging (at most ${MERGE_VERSIONS} versions back, within the history's retention): read its entries, then send the edit on the current version.`,
  );

/**
 * The name the caller's requests named in `seen` (keys of theirs on this playlist) left after `base`: the rename of the
 * newest one that wrote a version after it with a rename applied; undefined when none did. 422 naming a key in `seen`
 * that is not one of the caller's on this playlist (or is no longer kept).
 */
async function nameAfterSeen(
  q: Db['kysely'],
  id: number,
  userId: number,
  seen: readonly string[],
  base: number | undefined,
): Promise<string | undefined> {
  const writes = await writesOfKeys(q, id, userId, [...new Set(seen)]);
  const unknown = seen.findIndex((key) => !writes.has(key));
  if (unknown !== -1) {
    throw new ApiError(
      422,
      `seen/${unknown}: ${JSON.stringify(seen[unknown])} is not a key of one of your requests on this playlist (or it is no longer kept): send only keys you sent here.`,
    );
  }
  let newest: { version: number; renamed: string } | undefined;
  for (const { version, renamed } of writes.values()) {
    if (version === null || renamed === null || (base !== undefined && version <= base)) continue;
    if (newest === undefined || version > newest.version) newest = { version, renamed };
  }
  return newest?.renamed;
}

/**
 * Where the entries a merge asks about stood, for `formerList`: read from the revisions since the base (409 past
 * MERGE_CHANGES, counted first from a few rows) and replayed without copying any version's list (merge.ts).
 */
async function formerListsSince(
  q: Db['kysely'],
  id: number,
  base: number,
  current: number,
  merging: { asked: ReadonlySet<number>; current: readonly Entry[]; ops: readonly EditOp[] },
): Promise<Map<number, readonly number[]>> {
  const changed = await changesSince(q, id, base, current);
  if (changed > MERGE_CHANGES) {
    throw ApiError.conflict(
      `This playlist changed too much since version ${base} to place the entries removed since then (${changed} changes, at most ${MERGE_CHANGES}): read its entries, then send the edit on the current version.`,
    );
  }
  // The base was found kept, and is held, by its name's read in this write (`keptVersionName`).
  const revisions = await entryRevisionsFrom(q, id, base, current);
  const touched = new Set<number>();
  // An entry named by a ref is one this request makes: never one a revision removed.
  for (const op of merging.ops) {
    if ((op.op === 'remove' || op.op === 'move') && typeof op.entry === 'number') touched.add(op.entry);
  }
  return formerLists({
    revisions,
    base,
    asked: merging.asked,
    current: new Set(merging.current.map((e) => e.entry)),
    touched,
  });
}

/** What a read of a playlist's entries gives on each row: the playlist, its version and the catalog's, one entry. */
interface EntryRow {
  readonly name: string;
  readonly version: number | string;
  readonly catalog_version: number | string;
  readonly rules: string | null;
  readonly rules_status: string | null;
  readonly entry: number | string | null;
  readonly song_id: number | null;
  readonly title: string | null;
  readonly artist: string | null;
  readonly added_by: string | null;
  readonly added_at: number | string | null;
}

/** The entries the rows hold, with their songs and origins, in order (an empty playlist's single row holds none). */
const shownEntries = (rows: readonly EntryRow[]): ShownEntry[] =>
  rows.flatMap((row) =>
    row.entry === null || row.song_id === null
      ? []
      : [
          {
            entry: Number(row.entry),
            song: { id: row.song_id, title: row.title!, artist: row.artist! },
            addedBy: row.added_by,
            addedAt: row.added_at === null ? null : Number(row.added_at),
          },
        ],
  );

/**
 * The entries a write left, with who made them and when: read after the commit, when the answer is sent whole (an
 * entry's origin is written once and never changes, so it is the one the write's version has).
 */
async function withOrigins(db: Db, id: number, written: Written['entries']): Promise<ShownEntry[]> {
  const origins = await entryOrigins(
    db.kysely,
    db.dialect,
    id,
    written.map((e) => e.entry),
  );
  return written.map(({ entry, song }) => {
    const origin = origins.get(entry);
    return { entry, song, addedBy: origin?.addedBy ?? null, addedAt: origin?.addedAt ?? null };
  });
}

/** What the rows' answer is at (the versions were read with the entries, in the same statement), and its rules. */
const readAt = (id: number, row: EntryRow) => ({
  at: { id, version: Number(row.version), catalogVersion: Number(row.catalog_version) },
  smart: { rules: row.rules, rulesStatus: row.rules_status },
});

/**
 * Entries and merged edits (API 1.6.0): `GET …/entries` (whole or a page of them), and `POST …/edits`, whose ops
 * name entries and are made on a base version, merged onto the current one (merge.ts), written through the playlist
 * store as one revision.
 */
export function entryEdits(db: Db, playlists: PlaylistService, limits: Limits) {
  const q = db.kysely;

  /**
   * The rows `read` reads of a playlist the caller was granted, at least one: a smart playlist is refreshed first
   * when what its songs follow changed, as for its JSON (the same version), and read again; 404 or 410 when it was
   * deleted since access was granted.
   */
  async function freshRows<R extends EntryRow>(
    userId: number,
    id: number,
    read: () => Promise<R[]>,
  ): Promise<[R, ...R[]]> {
    let rows = await read();
    const head = rows[0];
    if (head?.rules != null && (await playlists.smart.freshen(id, Number(head.version)))) rows = await read();
    if (rows.length === 0) throw await playlists.access.refusal(userId, id);
    return rows as [R, ...R[]];
  }

  return {
    /** The playlist's entries as `GET …/entries` answers them, with their strong ETag; 404, 410 as for GET. */
    async entries(userId: number, id: number): Promise<{ body: Buffer; etag: string }> {
      const grant = await playlists.access.requireAccess(userId, id, 'read');
      const first = await freshRows(userId, id, () => playlistEntryRows(q, id));
      const { at, smart } = readAt(id, first[0]);
      const { text, etag } = entriesAnswer(at, first[0].name, shownEntries(first), smart, grant);
      return { body: Buffer.from(text), etag };
    },

    /**
     * A page of the playlist's entries (`GET …/entries?limit=N&after=E`): the entries form with the `limit` entries
     * that follow entry `after` (from the first without it), read as a page from the playlist's order, with the page's
     * own strong ETag and, when more follow, the entry the next page starts after. 409 when `after` is not an entry
     * of the playlist now; 404, 410 as for GET.
     */
    async entriesPage(
      userId: number,
      id: number,
      limit: number,
      after: string | undefined,
    ): Promise<{ body: Buffer; etag: string; next: string | undefined }> {
      const grant = await playlists.access.requireAccess(userId, id, 'read');
      // A name no entry has (entries count from 1) reads no page, and is refused as an entry removed is.
      const afterEntry = after === undefined ? undefined : (entryNumber(after) ?? 0);
      const rows = await freshRows(userId, id, () => entryPageRows(q, id, limit, afterEntry));
      const [first] = rows;
      if (after !== undefined && first.after_ord === null) {
        throw ApiError.conflict(
          `"after": ${JSON.stringify(after)} is not an entry of this playlist now (it was removed, or it never was one): read the pages again from the first (without "after").`,
        );
      }
      // One more entry than the page holds was read: whether more follow.
      const entries = shownEntries(rows);
      const page = entries.slice(0, limit);
      const { at, smart } = readAt(id, first);
      const { text } = entriesAnswer(at, first.name, page, smart, grant);
      const next = entries.length > limit ? entryName(page[page.length - 1]!.entry) : undefined;
      return { body: Buffer.from(text), etag: entriesPageEtag(at, grant.role, limit, after), next };
    },

    /**
     * Merges the ops, made on `base`, onto the playlist as it is: 403, 404, 410 as an edit; 410 for a base no longer
     * kept; 412 under a failing `If-Match`; 422 for an entry it never had or a song not in the catalog; 409 past
     * the songs limit, or, `atomic`, when an op does not apply, or for an anchor removed since a base more than
     * MERGE_CHANGES changes back. A `key` sent before with the same request answers what it answered then; with
     * another request, 422.
     */
    async edit(userId: number, id: number, request: EditsRequest, expected: ExpectedEtag | undefined) {
      const ops = readOps(request.ops);
      const { key } = request;
      const seen = request.seen ?? [];
      const digest = key === undefined ? undefined : requestDigest(request.base, request.atomic, ops, seen);
      // What the request carries: its ops and the songs its inserts add.
      const cost = ops.reduce((sum, op) => sum + 1 + (op.op === 'insert' ? op.songIds.length : 0), 0);
      const change: Change<ApiResult[]> = {
        kind: 'edit',
        form: 'entries',
        cost,
        readsOnly: false,
        async replay(_current, trx) {
          if (key === undefined) return undefined;
          const sent = await findEditKey(trx, id, userId, key);
          // A key kept before digests were (null) answers whatever request comes with it, as it did then.
          if (sent !== undefined && sent.digest !== null && sent.digest !== digest) throw keyUsed();
          return sent === undefined ? undefined : readResults(sent.results, ops);
        },
        async decide(current, trx, gates) {
          // What the caller's earlier requests named in `seen` wrote is known: their rename is the name expected.
          const seenName = seen.length === 0 ? undefined : await nameAfterSeen(trx, id, userId, seen, request.base);
          const baseVersion = request.base ?? current.version;
          if (baseVersion > current.version) {
            throw ApiError.badRequest(`"base" ${baseVersion} is past the current version, ${current.version}.`);
          }
          let baseName = current.name;
          if (baseVersion < current.version) {
            const name =
              current.version - baseVersion <= MERGE_VERSIONS
                ? await keptVersionName(trx, db.dialect, id, baseVersion)
                : undefined;
            if (name === undefined) throw gone(baseVersion);
            baseName = seenName ?? name;
          }
          const entries: readonly Entry[] = current.entries;
          const mergeWith = (formerList: MergeInput['formerList']) => {
            try {
              return merge({
                current: entries,
                name: current.name,
                nextEntry: current.nextEntry,
                baseName,
                formerList,
                ops,
              });
            } catch (error) {
              if (error instanceof UnknownEntry) throw neverHad(error.path, entryName(error.entry));
              throw error;
            }
          };
          // First without the history: what applies, and how many songs it leaves, do not depend on where a removed
          // anchor stood, so a request refused costs no read of it; nor does one whose anchors all stand (it asks
          // about none). Then again, knowing where those it asked about stood: only places change.
          const asked = new Set<number>();
          let merged = mergeWith((entry) => {
            asked.add(entry);
            return undefined;
          });
          const results = merged.results.map(apiResult);
          if (request.atomic === true && results.some((result) => !result.applied)) {
            const message = 'Not every op applies to the playlist as it is now, so none was applied.';
            throw new ApiError(409, message, {}, { results });
          }
          // Before the history is read: where removed anchors stood changes places, not the count.
          gates.songs(merged.entries.length);
          if (asked.size > 0 && baseVersion < current.version) {
            const lists = await formerListsSince(trx, id, baseVersion, current.version, {
              asked,
              current: entries,
              ops,
            });
            merged = mergeWith((entry) => lists.get(entry));
          }
          const same =
            merged.name === current.name &&
            merged.entries.length === current.entries.length &&
            merged.entries.every((e, i) => e.entry === current.entries[i]!.entry);
          if (key !== undefined) {
            await insertEditKey(
              trx,
              {
                playlistId: id,
                userId,
                key,
                at: Date.now(),
                results: keptResults(results, ops),
                digest: digest!,
                version: same ? null : current.version + 1,
                renamed: ops.some((op, i) => op.op === 'rename' && results[i]!.applied) ? merged.name : null,
              },
              limits.editKeysPerUser,
            );
          }
          if (same) return { unchanged: true, result: results };
          return {
            name: merged.name,
            slots: merged.entries.map((e) => ({ songId: e.songId, entry: e.entry })),
            result: results,
          };
        },
      };
      const { grant, edited } = await playlists.writer.apply(userId, id, change, expected);
      // The answer holds the entries form, as `GET …/entries` now answers it (written only when it is sent: not with
      // `Prefer: return=minimal`), and carries that form's ETag.
      const { snapshot } = edited;
      const results = edited.result;
      return {
        etag: playlistEtag(snapshot, 'entries', grant.role),
        minimal: { version: snapshot.version, results },
        body: async () => {
          const entries = await withOrigins(db, id, edited.entries);
          const playlist = entriesAnswer(snapshot, snapshot.name, entries, edited, grant);
          return Buffer.from(`{"playlist":${playlist.text},"results":${JSON.stringify(results)}}`);
        },
      };
    },
  };
}

export type EntryEdits = ReturnType<typeof entryEdits>;
