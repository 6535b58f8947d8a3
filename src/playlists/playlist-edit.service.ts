import { boundedPerKey } from '../concurrency/bounded.js';
import type { Db } from '../db/database.js';
import type { EditKind } from '../domain/change-kinds.js';
import { isExpected, preconditionFailed, type ExpectedEtag } from '../http/conditional.js';
import { ApiError } from '../http/errors.js';
import { keepCommon } from './entry-order.js';
import { playlistLength } from './write/store.repository.js';
import type { Current, Decision, PlaylistStore } from './write/store.js';
import { EditRefused } from './playlist-edit.checks.js';
import type { PlaylistDocument } from './playlist-edit.operations.js';
import { playlistEtag, playlistEtags, writeAnswer, type WriteAnswer } from './playlist.render.js';
import { LONG_PLAYLIST, largeRequests } from './large-requests.js';
import type { Grant, PlaylistAccess } from './playlist.access.js';
import { findRuleCycle, ruleCycleError } from '../smart/rules.cycles.js';
import type { RulesRunner } from '../smart/rules-runner.js';
import type { SmartRefresher } from '../smart/smart.refresh.js';
import { writeSmartInputs } from '../smart/smart.repository.js';
import type { Rules } from '../smart/rules.js';
import { checkRulePlaylists, smartSongsByHand } from '../smart/smart.checks.js';

/**
 * An edit's answer: the edited playlist as the editor now reads it (its version, its ETag, and its JSON written only
 * when asked for), and how many songs it holds.
 */
export type Edited = WriteAnswer & { readonly id: number; readonly songCount: number };

/** An edit: the playlist as it is now to the playlist as it will be, or an EditRefused that changes nothing. */
export type Edit = (current: PlaylistDocument) => PlaylistDocument;

/**
 * What an edit does to a smart playlist's rules (1.7.0): undefined leaves them; rules (from `readRules`) make the
 * playlist a smart playlist of the songs they choose; null makes it an ordinary playlist that keeps its songs.
 */
export type RulesChange = Rules | null | undefined;

const sameSongs = (a: PlaylistDocument['songs'], b: PlaylistDocument['songs']) =>
  a.length === b.length && a.every((song, i) => song.id === b[i]!.id && song.entry === b[i]!.entry);

/**
 * Edits through the one write path (SQLite's group commit, a transaction on PostgreSQL). First the caller's access
 * is asked for (another user's playlist answers 404 or 410 with none of its songs read), then the edit waits its
 * turn: edits of one playlist one at a time in this process (so none holds a pooled connection waiting for another's
 * lock), and long ones a few at a time, one of them a user's.
 *
 * Everything else that decides the outcome is read inside the transaction: whether the playlist is still there (410
 * before any precondition; an owner never changes, ids are never reused), its version and the catalog's for
 * `If-Match` (the ETag is made of them), and the songs it holds, so two edits can never both pass the same tag and
 * appends sent together all land. The answer is the edited playlist as GET will answer it, with its new ETag.
 */
export function playlistEditor(
  db: Db,
  store: PlaylistStore,
  access: PlaylistAccess,
  songsMax: number,
  runner: RulesRunner,
  inputsOf: SmartRefresher['inputsOf'],
) {
  const longEdits = largeRequests(2, 'Your previous long edits are still being saved; wait for them first.');
  const busyPlaylist = () =>
    ApiError.unavailable('This playlist has many edits waiting already; try again shortly.', 1);
  const perPlaylist = boundedPerKey({ limit: 1, queue: 64, waitMs: 10_000, refuse: busyPlaylist });

  async function edit(
    userId: number,
    grant: Grant,
    id: number,
    expected: ExpectedEtag | undefined,
    change: Edit,
    kind: EditKind,
    rules: RulesChange,
  ): Promise<Edited> {
    // With the owner's rights: an editor cannot make the owner's playlist follow one only the editor may read.
    if (rules != null) await checkRulePlaylists(access, grant.ownerId, rules);
    // The songs the new rules choose, read before the write (rules-runner.ts): the query holds neither the event loop
    // nor the write's transaction, and is stopped with 422 when it runs too long.
    // What they are worked out from, read before them, is kept with the rules (smart.refresh.ts `freshen`).
    const inputs = rules == null ? undefined : await inputsOf(db.kysely, grant.ownerId, rules);
    const chosen = rules == null ? [] : await runner.songIds(rules, { now: Date.now(), songsMax }, userId);
    const decide = async (current: Current, trx: Db['kysely']): Promise<Decision<undefined>> => {
      // The edit is worked out first, but a refusal of it answers only once the precondition holds.
      const document = {
        name: current.name,
        songs: current.entries.map((e) => ({ id: e.songId, entry: e.entry })),
      };
      let next: PlaylistDocument | undefined;
      let refused: unknown;
      try {
        next = applied(change, document);
      } catch (error) {
        refused = error;
      }
      if (expected !== undefined) {
        // The caller's own view of it (a member's answers carry the owner and their role), in any form: its tags, from
        // versions. A 412 carries that of the JSON, which the edit answers.
        const at = { id, version: current.version, catalogVersion: current.catalogVersion };
        if (!isExpected(expected, playlistEtags(at, grant.role))) {
          throw preconditionFailed(playlistEtag(at, 'json', grant.role));
        }
      }
      if (next === undefined) throw refused;
      const rulesAfter = rules === undefined ? current.rules : rules === null ? null : JSON.stringify(rules);
      if (rules != null) {
        // The songs are those the rules choose (a restore of a smart version sends the songs it had besides).
        // The cycle check is in the write's transaction: rules stored meanwhile by another write are seen
        // (rules.cycles.ts).
        const cycle = await findRuleCycle(trx, id, rules);
        if (cycle !== undefined) throw ruleCycleError(cycle);
        if (inputs !== undefined) await writeSmartInputs(trx, id, inputs.text);
        return { name: next.name, slots: keepCommon(current.entries, chosen), result: undefined, rules: rulesAfter };
      }
      if (rulesAfter !== null && !sameSongs(document.songs, next.songs)) throw ApiError.conflict(smartSongsByHand(id));
      // A whole new list of songs (no slot kept by the edit itself) keeps the entries of the songs it keeps in order.
      const slots = next.songs.some((song) => song.entry !== undefined)
        ? next.songs.map((song) => ({ songId: song.id, entry: song.entry }))
        : keepCommon(
            current.entries,
            next.songs.map((song) => song.id),
          );
      return { name: next.name, slots, result: undefined, rules: rulesAfter };
    };
    // Without rules to check, deciding only reads: on PostgreSQL the edit is tried first without a transaction.
    const edited = await store.edit(id, userId, kind, decide, { readsOnly: rules == null });
    if (edited === undefined) throw await access.refusal(userId, id);
    return { id, ...writeAnswer(edited.snapshot, grant), songCount: edited.entries.length };
  }

  return {
    /** Runs another write of the playlist in its turn among this process's edits of it (a merged edit). */
    inTurn: <T>(id: number, work: () => Promise<T>): Promise<T> => perPlaylist(id, work),

    /**
     * Applies `change` to the playlist when `If-Match` (if sent) names its current answer; `kind` is the revision it
     * records (a restore goes this way too); `rules`, what it does to a smart playlist's rules. A change of the songs
     * of a playlist that has rules after the edit is a 409.
     */
    async edit(
      userId: number,
      id: number,
      expected: ExpectedEtag | undefined,
      change: Edit,
      cost = 0,
      kind: EditKind = 'edit',
      rules?: RulesChange,
    ) {
      // PostgreSQL counts the songs in the access read; SQLite in a read of its own, in process.
      const { grant, songCount } = await access.requireEdit(userId, id);
      const length = songCount ?? (await playlistLength(db.kysely, id));
      const run = () => edit(userId, grant, id, expected, change, kind, rules);
      return perPlaylist(id, () => (length + cost > LONG_PLAYLIST ? longEdits(userId, run) : run()));
    },
  };
}

/** The edited playlist; a refused edit is a 400 (malformed) or a 409 (a conflict with the playlist as it is). */
function applied(change: Edit, current: PlaylistDocument): PlaylistDocument {
  try {
    return change(current);
  } catch (error) {
    if (!(error instanceof EditRefused)) throw error;
    throw error.reason === 'malformed' ? ApiError.badRequest(error.message) : ApiError.conflict(error.message);
  }
}
