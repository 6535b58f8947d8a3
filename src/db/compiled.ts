import { type Compilable, type CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import { preparedText } from './postgres.js';
import type { Database } from './schema.js';

/**
 * Queries built and compiled once, then run with new values: building a query with Kysely and compiling it to SQL
 * cost 8 to 30 µs a statement, about as much as SQLite takes to run one of the short statements a write is made of
 * (bench/results/HISTORY.md, "Writes compiled once"). A query compiled once keeps its SQL text, so the driver's
 * statement cache (sqlite.ts, `withStatementCache`) and PostgreSQL's plans see the same text each time.
 *
 *   const setVersion = compiledOnce('set-version', (p: { id: number; version: number }) => (q) =>
 *     q.updateTable('playlists').set({ version: p.version }).where('id', '=', p.id));
 *   await setVersion(trx, { id, version });
 *
 * `build` receives stand-ins for the values, not the values: it may only pass them into the query (as values to
 * compare, insert or set), never test them, loop over them or compute with them. A query whose shape depends on how
 * many rows it writes or names takes them as `rows` (`compiledRows`): it is compiled once for each count.
 *
 * `name`, which no other query may have, runs it on PostgreSQL as a prepared statement of that name (postgres.ts,
 * `prepared`), parsed and planned once per connection; the name of a query over rows gets their count.
 */

type Q = Kysely<Database>;

/** Stands for one value in a query built once: where to find it among the values of a run. */
class Slot {
  constructor(readonly read: (params: Record<string, unknown>, rows: readonly Record<string, unknown>[]) => unknown) {}
}

interface Compiled<R> {
  readonly query: CompiledQuery<R>;
  /** For each parameter of the SQL: where its value comes from, or the constant the query was built with. */
  readonly filling: readonly (Slot | { readonly constant: unknown })[];
}

/** An object whose every property is a stand-in, read as `read` says. */
const standIns = (read: (name: string) => Slot): object =>
  new Proxy({}, { get: (_target, name) => read(String(name)) });

/** `compiledOnce` for a query over `rows` (each an object of values): compiled once for each number of rows. */
export function compiledRows<P extends object, Row extends object, R>(
  name: string,
  build: (params: P, rows: readonly Row[]) => (q: Q) => Compilable<R>,
): (q: Q, params: P, rows: readonly Row[]) => Promise<QueryResult<R>> {
  // Compiled for each dialect's adapter (SQLite and PostgreSQL write one query differently), then each row count.
  const byAdapter = new WeakMap<object, Map<number, Compiled<R>>>();
  return async (q, params, rows) => {
    const adapter = q.getExecutor().adapter;
    let byCount = byAdapter.get(adapter);
    if (byCount === undefined) byAdapter.set(adapter, (byCount = new Map<number, Compiled<R>>()));
    let compiled = byCount.get(rows.length);
    if (compiled === undefined) {
      const p = standIns((name) => new Slot((values) => values[name])) as P;
      const r = Array.from(
        { length: rows.length },
        (_row, i) => standIns((name) => new Slot((_values, given) => given[i]![name])) as Row,
      );
      const built = build(p, r)(q).compile();
      const query = { ...built, sql: preparedText(rows.length === 0 ? name : `${name}-${rows.length}`, built.sql) };
      const filling = query.parameters.map((value) => (value instanceof Slot ? value : { constant: value }));
      compiled = { query, filling };
      byCount.set(rows.length, compiled);
    }
    const values = params as Record<string, unknown>;
    const given = rows as readonly Record<string, unknown>[];
    const parameters = compiled.filling.map((fill) =>
      fill instanceof Slot ? fill.read(values, given) : fill.constant,
    );
    return q.executeQuery<R>({ ...compiled.query, parameters });
  };
}

/** A query built and compiled once (for each dialect), run with the values of `params`. */
export function compiledOnce<P extends object, R>(
  name: string,
  build: (params: P) => (q: Q) => Compilable<R>,
): (q: Q, params: P) => Promise<QueryResult<R>> {
  const run = compiledRows<P, object, R>(name, (params) => build(params));
  return (q, params) => run(q, params, []);
}
