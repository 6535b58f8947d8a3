import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';

type Q = Kysely<Database>;

/** What a row counts: failures of an address and a name, of an address, of a name; or an address known for a name. */
export type BudgetKind = 'address-and-name' | 'address' | 'name' | 'known';

const PREFIX: Record<BudgetKind, string> = { 'address-and-name': 'an', address: 'a', name: 'n', known: 'k' };

/**
 * The row key: the kind and a digest of the parts, so that any name (one no user can have, with a NUL or 1000
 * characters long, is counted too) and any address make a short key that both databases store as text.
 */
export function budgetKey(kind: BudgetKind, ...parts: readonly string[]): string {
  return `${PREFIX[kind]}:${createHash('sha256').update(parts.join('\u0000')).digest('base64url')}`;
}

/** A budget's window after a failure was counted in it. */
export interface BudgetWindow {
  readonly key: string;
  readonly failures: number;
  /** When the window ends, in Unix ms. */
  readonly expiresAt: number;
}

/**
 * Counts one failure against each key, in one statement, starting a new window of `windowMs` where there was none
 * or it had ended; returns each window as it now is. Rows are locked in the order given: callers sort the keys, so
 * that two counts of overlapping budgets cannot wait for each other.
 */
export async function countFailures(
  db: Q,
  keys: readonly string[],
  now: number,
  windowMs: number,
): Promise<BudgetWindow[]> {
  const rows = await db
    .insertInto('sign_in_budgets')
    .values(keys.map((key) => ({ key, failures: 1, expires_at: now + windowMs })))
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        failures: sql<number>`CASE WHEN sign_in_budgets.expires_at <= ${now} THEN 1 ELSE sign_in_budgets.failures + 1 END`,
        expires_at: sql<number>`CASE WHEN sign_in_budgets.expires_at <= ${now} THEN excluded.expires_at ELSE sign_in_budgets.expires_at END`,
      }),
    )
    .returning(['key', 'failures', 'expires_at'])
    .execute();
  return rows.map((row) => ({ key: row.key, failures: row.failures, expiresAt: Number(row.expires_at) }));
}

/** Takes one failure back from each key's window that has not ended (a sign-in that succeeded). */
export async function giveBackFailure(db: Q, keys: readonly string[], now: number): Promise<void> {
  // One key at a time, in the callers' order, as countFailures locks them.
  for (const key of keys) {
    await db
      .updateTable('sign_in_budgets')
      .set({ failures: sql<number>`failures - 1` })
      .where('key', '=', key)
      .where('expires_at', '>', now)
      .where('failures', '>', 0)
      .execute();
  }
}

/** The rows of these keys as they are now, by key: a budget's failures and window, or until when a key is known. */
export async function readBudgets(db: Q, keys: readonly string[]): Promise<Map<string, BudgetWindow>> {
  const rows = await db
    .selectFrom('sign_in_budgets')
    .select(['key', 'failures', 'expires_at'])
    .where('key', 'in', keys)
    .execute();
  return new Map(
    rows.map((row) => [row.key, { key: row.key, failures: row.failures, expiresAt: Number(row.expires_at) }]),
  );
}

export async function markKnown(db: Q, key: string, until: number): Promise<void> {
  await db
    .insertInto('sign_in_budgets')
    .values({ key, failures: 0, expires_at: until })
    .onConflict((oc) => oc.column('key').doUpdateSet({ expires_at: (eb) => eb.ref('excluded.expires_at') }))
    .execute();
}

/**
 * Removes up to `limit` rows whose window has ended, oldest first; returns how many. On PostgreSQL, rows another
 * transaction holds (a count starting their new window) are skipped rather than waited for.
 */
export async function removeExpired(db: Q, dialect: Dialect, now: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('sign_in_budgets')
    .where('expires_at', '<=', now)
    .where('key', 'in', (eb) =>
      eb
        .selectFrom('sign_in_budgets')
        .select('key')
        .where('expires_at', '<=', now)
        .orderBy('expires_at')
        .limit(limit)
        .$if(dialect === 'postgres', (qb) => qb.forUpdate().skipLocked()),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
