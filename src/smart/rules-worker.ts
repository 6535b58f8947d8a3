/**
 * What each thread of the rules runner (rules-runner.ts) loads: a smart playlist's rules query, compiled on the
 * event loop, run on a read-only connection of the thread's own to the service's SQLite file (opened with its first
 * query; in WAL mode it reads the last committed state while the service writes). The event loop never runs it.
 *
 * A thread that is terminated goes on with the statement it is in until SQLite returns, so a query is stopped from
 * inside instead: it calls DEADLINE_FUNCTION on each song it reads, before the rules' conditions, and that function
 * fails the statement once its time is up.
 */
import { workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

/** The SQL function a rules query calls on each song it reads; it fails the statement once its time is up. */
export const DEADLINE_FUNCTION = 'mixtape_rules_deadline';

export interface RulesQueryInput {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  /** How long the statement may run. */
  readonly timeoutMs: number;
}

/** The ids of the songs chosen, in their order, or that the statement ran out of time and was stopped. */
export type RulesQueryOutput = { readonly ids: number[] } | { readonly timedOut: true };

/** What the runner gives each thread. */
export interface RulesThreadData {
  /** The SQLite database file. */
  readonly file: string;
}

/** Songs read between two looks at the clock: a look costs more than the call itself. */
const CLOCK_EVERY = 64;

/** What the deadline function throws; SQLite hands it on as the statement's error. */
class OutOfTime extends Error {}

let connection: SQLite.Database | undefined;
let deadline = Infinity;
let calls = 0;

function open(): SQLite.Database {
  const { file } = workerData as RulesThreadData;
  const sqlite = new SQLite(file, { readonly: true, fileMustExist: true });
  sqlite.function(DEADLINE_FUNCTION, { deterministic: false }, () => {
    calls += 1;
    if (calls % CLOCK_EVERY === 0 && performance.now() > deadline) {
      throw new OutOfTime('The rules query ran out of time.');
    }
    return 1;
  });
  return sqlite;
}

/** Runs one compiled rules query, for at most its `timeoutMs`. */
export function rulesQuery({ sql, parameters, timeoutMs }: RulesQueryInput): RulesQueryOutput {
  connection ??= open();
  const statement = connection.prepare<unknown[], number>(sql).pluck();
  deadline = performance.now() + timeoutMs;
  try {
    return { ids: statement.all(...parameters) };
  } catch (error) {
    if (error instanceof OutOfTime) return { timedOut: true };
    throw error;
  } finally {
    deadline = Infinity;
  }
}
