import { boundedPerKey } from '../../concurrency/bounded.js';
import type { Db } from '../../db/database.js';
import { isExpected, preconditionFailed, type ExpectedEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import type { RulesRunner } from '../../smart/rules-runner.js';
import { findRuleCycle, ruleCycleError } from '../../smart/rules.cycles.js';
import { checkRulePlaylists, smartSongsByHand } from '../../smart/smart.checks.js';
import { writeSmartInputs } from '../../smart/smart.repository.js';
import type { Rules } from '../../smart/rules.js';
import { keepCommon, type Entry, type WantedSlot } from '../entry-order.js';
import { LONG_PLAYLIST, largeRequests } from '../large-requests.js';
import type { Grant, PlaylistAccess } from '../playlist.access.js';
import { playlistEtag, playlistEtags } from '../playlist.render.js';
import type { Change, WriterGates } from './change.js';
import type { Current, Decision, Edited, PlaylistStore } from './store.js';
import { playlistLength } from './store.repository.js';

/** A user's writes running at once, and waiting for their turn; one more is refused with 429. */
const WRITES_PER_USER = 2;
const WRITES_WAITING_PER_USER = 64;

/** What a smart playlist's refresh reads its rules from, kept with them (smart.refresh.ts `inputsOf`). */
export type RuleInputs = (q: Db['kysely'], ownerId: number, rules: Rules) => Promise<{ readonly text: string }>;

/** The refusal of a write that would leave more songs than a playlist may hold: one sentence for every way in. */
export function tooManySongs(count: number, songsMax: number): ApiError {
  return ApiError.conflict(`A playlist holds at most ${songsMax} songs; this edit would leave it with ${count}.`);
}

/** Whether the slots keep the playlist's songs as they are: the same songs in the same entries, in order. */
const sameSongs = (entries: readonly Entry[], slots: readonly WantedSlot[]) =>
  entries.length === slots.length &&
  entries.every((entry, i) => entry.songId === slots[i]!.songId && entry.entry === slots[i]!.entry);

/**
 * The one door for every change of a playlist by a user (`apply`) and the turns of every other write of theirs
 * (`inTurn`). In this order, once each, whatever the kind of change (change.ts):
 *
 * 1. who may write: the caller's grant to edit (404, 403 or 410 before anything is read of the playlist);
 * 2. the turns: a user's writes two at a time, a playlist's edits one at a time in this process (so none holds a
 *    pooled connection waiting for another's lock), and a write that touches more than `LONG_PLAYLIST` songs (the
 *    playlist's and those the request carries) a few at a time, one of them a user's;
 * 3. new rules: the playlists they name readable with the owner's rights, and the songs they choose, read off the
 *    event loop and bounded in time (rules-runner.ts), before the transaction;
 * 4. in the write's transaction (the store's): a replay of a request answered before; the precondition (`If-Match`,
 *    read by the route, compared with the current tag of every form of the caller's view: the versions decide it,
 *    so two edits never both pass the same tag); the change itself; the rules' cycle check; a smart playlist's songs
 *    changed by hand (409); the songs limit (409); then the store's catalog check, entries, revision and event.
 */
export function playlistWriter(
  db: Db,
  store: PlaylistStore,
  access: PlaylistAccess,
  songsMax: number,
  runner: RulesRunner,
  inputsOf: RuleInputs,
) {
  const writes = boundedPerKey({
    limit: WRITES_PER_USER,
    queue: WRITES_WAITING_PER_USER,
    refuse: () => ApiError.tooManyRequests(1, 'Your previous changes are still being saved; wait for them first.'),
  });
  const longEdits = largeRequests(2, 'Your previous long edits are still being saved; wait for them first.');
  const busyPlaylist = () =>
    ApiError.unavailable('This playlist has many edits waiting already; try again shortly.', 1);
  const perPlaylist = boundedPerKey({ limit: 1, queue: 64, waitMs: 10_000, refuse: busyPlaylist });
  const gates: WriterGates = {
    songs(count) {
      if (count > songsMax) throw tooManySongs(count, songsMax);
    },
  };

  async function applyNow<T>(
    userId: number,
    grant: Grant,
    id: number,
    change: Change<T>,
    expected: ExpectedEtag | undefined,
  ): Promise<Edited<T>> {
    const { rules } = change;
    // With the owner's rights: an editor cannot make the owner's playlist follow one only the editor may read.
    if (rules != null) await checkRulePlaylists(access, grant.ownerId, rules);
    // What the songs are worked out from, read before them, is kept with the rules (smart.refresh.ts `freshen`).
    const inputs = rules == null ? undefined : await inputsOf(db.kysely, grant.ownerId, rules);
    const chosen = rules == null ? [] : await runner.songIds(rules, { now: Date.now(), songsMax }, userId);
    const decide = async (current: Current, trx: Db['kysely']): Promise<Decision<T>> => {
      const replayed = await change.replay?.(current, trx);
      if (replayed !== undefined) return { unchanged: true, result: replayed };
      if (expected !== undefined) {
        const at = { id, version: current.version, catalogVersion: current.catalogVersion };
        if (!isExpected(expected, playlistEtags(at, grant.role))) {
          throw preconditionFailed(playlistEtag(at, change.form, grant.role));
        }
      }
      const decision = await change.decide(current, trx, gates);
      if ('unchanged' in decision) return decision;
      if (rules != null) {
        // The cycle check is in the write's transaction: rules stored meanwhile by another write are seen.
        const cycle = await findRuleCycle(trx, id, rules);
        if (cycle !== undefined) throw ruleCycleError(cycle);
        if (inputs !== undefined) await writeSmartInputs(trx, id, inputs.text);
        const slots = keepCommon(current.entries, chosen);
        return { ...decision, slots, rules: JSON.stringify(rules) };
      }
      const rulesAfter = rules === null ? null : current.rules;
      if (rulesAfter !== null && !sameSongs(current.entries, decision.slots)) {
        throw ApiError.conflict(smartSongsByHand(id));
      }
      gates.songs(decision.slots.length);
      return { ...decision, rules: rulesAfter };
    };
    // A change that only reads, with no rules to check: on PostgreSQL it is tried first without a transaction.
    const edited = await store.edit(id, userId, change.kind, decide, { readsOnly: change.readsOnly && rules == null });
    if (edited === undefined) throw await access.refusal(userId, id);
    return edited;
  }

  return {
    /** What each committed write tells after its commit (see PlaylistEvents). */
    events: store.events,

    /**
     * Applies a change of the playlist by `userId`, when `expected` (`If-Match`, if sent) names its current answer:
     * the playlist as the change left it (a new version when it changed), the change's result, and the caller's
     * grant, which the answer is rendered for.
     */
    async apply<T>(
      userId: number,
      id: number,
      change: Change<T>,
      expected: ExpectedEtag | undefined,
    ): Promise<{ readonly grant: Grant; readonly edited: Edited<T> }> {
      // PostgreSQL counts the songs in the access read; SQLite in a read of its own, in process.
      const { grant, songCount } = await access.requireEdit(userId, id);
      const length = songCount ?? (await playlistLength(db.kysely, id));
      const run = async () => ({ grant, edited: await applyNow(userId, grant, id, change, expected) });
      const long = length + change.cost > LONG_PLAYLIST;
      return writes(userId, () => perPlaylist(id, () => (long ? longEdits(userId, run) : run())));
    },

    /** Runs another write of the user's (a create, a delete, a restore of a deleted playlist, a share) in its turn. */
    inTurn: <T>(userId: number, work: () => Promise<T>): Promise<T> => writes(userId, work),
  };
}

export type PlaylistWriter = ReturnType<typeof playlistWriter>;
