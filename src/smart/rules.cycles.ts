/**
 * A smart playlist's rules may not name the playlist itself, directly or through the rules of the playlists they
 * name (its songs would depend on themselves). Checked when rules are saved, against the rules stored then; the
 * check and the write belong in one transaction (on PostgreSQL, two playlists given rules naming each other at the
 * same moment are told apart by the row locks of the writes).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { InvalidRules, rulePlaylists, type Rules } from './rules.js';
import { storedRules } from './smart.repository.js';

/** Playlists read per statement. */
const CHUNK = 500;

/** How rules lead back to their playlist: the path of the condition, and the playlists in between. */
export interface RuleCycle {
  /** The path of the first `playlist` condition that leads back (`rules/conditions/2/value`). */
  readonly path: string;
  /** The playlists from the one that condition names to the one whose stored rules name `playlistId`. */
  readonly through: readonly number[];
}

/**
 * Whether these rules, given to playlist `playlistId`, name it directly or through the stored rules
 * (`playlists.rules`) of the playlists they name, at any depth: the first cycle, in the order of the conditions, by
 * fewest playlists in between; undefined when there is none. One statement per step away from the rules.
 */
export async function findRuleCycle(
  q: Kysely<Database>,
  playlistId: number,
  rules: Rules,
): Promise<RuleCycle | undefined> {
  const named = rulePlaylists(rules);
  const direct = named.find(({ id }) => id === playlistId);
  if (direct !== undefined) return { path: direct.path, through: [] };
  // Each playlist reached, with the way to it from the rules (the path of the first condition and the chain).
  const reached = new Map<number, RuleCycle>();
  let frontier: number[] = [];
  for (const { id, path } of named) {
    if (reached.has(id)) continue;
    reached.set(id, { path, through: [id] });
    frontier.push(id);
  }
  while (frontier.length > 0) {
    const next: number[] = [];
    for (let start = 0; start < frontier.length; start += CHUNK) {
      const byId = await storedRules(q, frontier.slice(start, start + CHUNK));
      // In the frontier's order, so that the first condition's way wins.
      for (const id of frontier.slice(start, start + CHUNK)) {
        const text = byId.get(id);
        if (text === undefined) continue;
        const way = reached.get(id)!;
        for (const { id: onward } of rulePlaylists(JSON.parse(text) as Rules)) {
          if (onward === playlistId) return way;
          if (reached.has(onward)) continue;
          reached.set(onward, { path: way.path, through: [...way.through, onward] });
          next.push(onward);
        }
      }
    }
    frontier = next;
  }
  return undefined;
}

/** The 400 for rules that lead back to their playlist, naming the condition and the way. */
export function ruleCycleError(cycle: RuleCycle): InvalidRules {
  const way = cycle.through.length === 0 ? '' : ` (through ${cycle.through.join(' → ')})`;
  return new InvalidRules(cycle.path, `the rules may not name their own playlist, directly or through others${way}.`);
}
