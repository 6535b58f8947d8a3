import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ApiResult } from './edits.service.js';
import { entryName, entryNumber } from './entry-names.js';
import { removedMessage, type EditOp } from './merge.js';

type Q = Kysely<Database>;

/**
 * What a merged edit sent with this key by this user on this playlist answered (as `keptResults` keeps it, below) and the digest
 * of its request (null for a key kept before digests were), if the key is kept.
 */
export function findEditKey(
  q: Q,
  playlistId: number,
  userId: number,
  key: string,
): Promise<{ results: string; digest: string | null } | undefined> {
  return q
    .selectFrom('edit_keys')
    .select(['results', 'digest'])
    .where('playlist_id', '=', playlistId)
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/**
 * Keeps what a merged edit with a key answered, in the edit's own transaction, and forgets the user's keys past the
 * newest `keep`, oldest first (in the order of their time, then playlist and key, which no two keys share), through
 * the index (user_id, at): the user's keys are read up to the first one forgotten.
 */
export async function insertEditKey(
  trx: Q,
  row: {
    playlistId: number;
    userId: number;
    key: string;
    at: number;
    results: string;
    digest: string;
    /** The version the edit made; null when it changed nothing. */
    version: number | null;
    /** The name its applied renames left; null when none applied. */
    renamed: string | null;
  },
  keep: number,
): Promise<void> {
  await trx
    .insertInto('edit_keys')
    .values({
      playlist_id: row.playlistId,
      user_id: row.userId,
      key: row.key,
      at: row.at,
      results: row.results,
      digest: row.digest,
      version: row.version,
      renamed: row.renamed,
    })
    .execute();
  const past = await trx
    .selectFrom('edit_keys')
    .select(['at', 'playlist_id', 'key'])
    .where('user_id', '=', row.userId)
    .orderBy('at', 'desc')
    .orderBy('playlist_id', 'desc')
    .orderBy('key', 'desc')
    .offset(keep)
    .limit(1)
    .executeTakeFirst();
  if (past === undefined) return;
  await trx
    .deleteFrom('edit_keys')
    .where('user_id', '=', row.userId)
    .where(sql<boolean>`(at, playlist_id, key) <= (${Number(past.at)}, ${past.playlist_id}, ${past.key})`)
    .execute();
}

/** What the user's kept keys among `keys` on this playlist wrote: the version each made and the name it left. */
export async function writesOfKeys(
  q: Q,
  playlistId: number,
  userId: number,
  keys: readonly string[],
): Promise<Map<string, { version: number | null; renamed: string | null }>> {
  const rows = await q
    .selectFrom('edit_keys')
    .select(['key', 'version', 'renamed'])
    .where('playlist_id', '=', playlistId)
    .where('user_id', '=', userId)
    .where('key', 'in', keys)
    .execute();
  return new Map(
    rows.map((row) => [row.key, { version: row.version === null ? null : Number(row.version), renamed: row.renamed }]),
  );
}

/** Forgets the oldest keys older than `cutoff` (Unix ms), about `limit` of them at most; returns how many. */
export async function deleteEditKeysBefore(trx: Q, cutoff: number, limit: number): Promise<number> {
  // The time of the limit-th oldest key bounds the batch (keys made in the same millisecond go together).
  const last = await trx
    .selectFrom('edit_keys')
    .select('at')
    .where('at', '<', cutoff)
    .orderBy('at')
    .offset(limit - 1)
    .limit(1)
    .executeTakeFirst();
  const result = await trx
    .deleteFrom('edit_keys')
    .where('at', last === undefined ? '<' : '<=', last === undefined ? cutoff : Number(last.at))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * What a merged edit's key keeps (`edit_keys`): a digest of the request, and its results in as few bytes as answering
 * the same request again allows.
 *
 * The results are rebuilt from the request's ops, which the digest has shown to be the same: one letter per op, `a`
 * applied, `r` not applied as removed (its message is the op's, made again from its entry), `c` not applied as a
 * conflict, a run of one letter written once with its length after it (`a2r98`); then, when an insert applied, `@` and
 * the first entry the inserts made (each makes as many as it has songs, in turn); then, when an op met a conflict, the
 * conflicts' messages as a JSON array. A hundred removes of entries removed already keep `r100`. Results that this
 * would not give back byte for byte are kept as their JSON array, as every key was before (it starts with `[`).
 */
const COMPACT = /^((?:[arc][0-9]*)+)(?:@([0-9]+))?(\[.*\])?$/s;

/**
 * The digest a key keeps of its request: the ops as read (entries by number, members in one order), base, atomic, and
 * `seen` when it names any key (so that a request without one digests as it did before `seen` was).
 */
export function requestDigest(
  base: number | undefined,
  atomic: boolean | undefined,
  ops: readonly EditOp[],
  seen: readonly string[] = [],
): string {
  const request = seen.length === 0 ? [base ?? null, atomic === true, ops] : [base ?? null, atomic === true, ops, seen];
  return createHash('sha256').update(JSON.stringify(request)).digest('base64url');
}

/** The results as a key keeps them, for the request of these ops. */
export function keptResults(results: readonly ApiResult[], ops: readonly EditOp[]): string {
  const json = JSON.stringify(results);
  let runs = '';
  let last = '';
  let length = 0;
  const close = () => {
    if (length > 0) runs += last + (length > 1 ? String(length) : '');
  };
  let first: number | undefined;
  const conflicts: string[] = [];
  for (const result of results) {
    let letter: string;
    if (result.applied) {
      letter = 'a';
      const made = result.entries?.[0];
      if (first === undefined && made !== undefined) first = entryNumber(made);
    } else if (result.reason === 'removed') {
      letter = 'r';
    } else {
      letter = 'c';
      conflicts.push(result.message);
    }
    if (letter === last) {
      length += 1;
    } else {
      close();
      last = letter;
      length = 1;
    }
  }
  close();
  const compact =
    runs + (first === undefined ? '' : `@${first}`) + (conflicts.length === 0 ? '' : JSON.stringify(conflicts));
  const rebuilt = rebuild(compact, ops);
  return rebuilt !== undefined && compact.length < json.length && JSON.stringify(rebuilt) === json ? compact : json;
}

/** The results a key kept, for the same request's ops. */
export function readResults(kept: string, ops: readonly EditOp[]): ApiResult[] {
  if (kept.startsWith('[')) return JSON.parse(kept) as ApiResult[];
  const results = rebuild(kept, ops);
  if (results === undefined) throw new Error(`A merged edit's key kept results its request cannot give: ${kept}`);
  return results;
}

/** The results the compact form stands for with these ops; undefined when it does not fit them. */
function rebuild(kept: string, ops: readonly EditOp[]): ApiResult[] | undefined {
  const form = COMPACT.exec(kept);
  if (form === null) return undefined;
  let next = form[2] === undefined ? undefined : Number(form[2]);
  const conflicts = form[3] === undefined ? [] : (JSON.parse(form[3]) as unknown[]);
  const results: ApiResult[] = [];
  for (const [, letter, count] of form[1]!.matchAll(/([arc])([0-9]*)/g)) {
    const times = count === '' ? 1 : Number(count);
    if (times > ops.length - results.length) return undefined;
    for (let i = 0; i < times; i++) {
      const op = ops[results.length]!;
      if (letter === 'a') {
        if (op.op !== 'insert') {
          results.push({ applied: true });
          continue;
        }
        if (next === undefined) return undefined;
        const from = next;
        results.push({ applied: true, entries: op.songIds.map((_, k) => entryName(from + k)) });
        next += op.songIds.length;
      } else if (letter === 'r') {
        // An entry named by a ref: its id is in the results kept as JSON, not in the ops.
        if ((op.op !== 'remove' && op.op !== 'move') || typeof op.entry !== 'number') return undefined;
        results.push({ applied: false, reason: 'removed', message: removedMessage(op.op, op.entry) });
      } else {
        const message = conflicts.shift();
        if (typeof message !== 'string') return undefined;
        results.push({ applied: false, reason: 'conflict', message });
      }
    }
  }
  return results.length === ops.length && conflicts.length === 0 ? results : undefined;
}
