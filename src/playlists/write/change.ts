import type { Db } from '../../db/database.js';
import type { EditKind } from '../../domain/change-kinds.js';
import type { Rules } from '../../smart/rules.js';
import type { Current, Decision } from './store.js';

/**
 * What a change does to a smart playlist's rules (1.7.0): undefined leaves them; rules (from `readRules`) make the
 * playlist a smart playlist of the songs they choose; null makes it an ordinary playlist that keeps its songs.
 */
export type RulesChange = Rules | null | undefined;

/**
 * One kind of change of a playlist (a JSON Patch, a merge patch, a PUT, songs added, a restore, merged ops), as the
 * writer applies it: a translator from the playlist as it is, read in the write's transaction, to what it becomes
 * (a `Decision`), or a refusal (an `ApiError` thrown, and nothing is written). A change sees no header and no caller:
 * who may write, the turns, the cost, the precondition, the rules, smart playlists' songs and the songs limit are the
 * writer's (writer.ts), decided there once for every kind.
 */
export interface Change<T> {
  /** What the revision records. */
  readonly kind: EditKind;
  /** The form of the playlist the write answers, whose ETag a failed precondition carries. */
  readonly form: 'json' | 'entries';
  /** The songs and operations the request carries: with the playlist's length, what the write costs. */
  readonly cost: number;
  /** What the change does to a smart playlist's rules; the writer chooses the songs of new ones. */
  readonly rules?: RulesChange;
  /** Whether `decide` writes nothing of its own (on PostgreSQL such a change may be tried without a transaction). */
  readonly readsOnly: boolean;
  /**
   * The answer of the same request answered before (a merged edit's key), asked before the precondition: a replay
   * answers what it answered then; undefined for a request not seen before.
   */
  readonly replay?: ((current: Current, trx: Db['kysely']) => Promise<T | undefined>) | undefined;
  /**
   * The playlist as it will be, from the playlist as it is (locked, in the write's transaction). `gates` are the
   * writer's own checks, for a change that can tell early, before costly reads, that it would fail them (the writer
   * holds them on the decision in any case).
   */
  readonly decide: (current: Current, trx: Db['kysely'], gates: WriterGates) => Decision<T> | Promise<Decision<T>>;
}

/** The writer's checks a change may ask early. */
export interface WriterGates {
  /** Throws the writer's 409 when a playlist of this many songs is past the songs limit. */
  readonly songs: (count: number) => void;
}
