import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from './schema.js';
import { ImmediateSqliteDialect, openSqlite, withStatementCache } from './sqlite.js';
import { WriteBatcher, type WriteWork } from './write-batch.js';

/**
 * The group commit on a SQLite file of its own: the batcher's connection writes, another connection (as the service's
 * reads do) sees what was committed. Notes are inserted in order, so their ids tell the order of the writes; a child
 * whose parent is missing fails only at COMMIT (its foreign key is deferred).
 */
const TABLES = `
  CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE);
  CREATE TABLE parents (id INTEGER PRIMARY KEY);
  CREATE TABLE children (
    id INTEGER PRIMARY KEY,
    parent_id INTEGER NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED
  );`;

let dir: string;
let file: string;
let writerSqlite: SQLite.Database;
let writer: Kysely<Database>;
let reader: SQLite.Database;
/** The writer's statements that succeeded, oldest first; an insert of a note as `note <body>`. */
let trace: string[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mixtape-write-batch-'));
  file = join(dir, 'batch.db');
  reader = openSqlite(file, 5000);
  reader.exec(TABLES);
  trace = [];
  writerSqlite = openSqlite(file, 0);
  writer = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: withStatementCache(writerSqlite) }),
    log: (event) => {
      if (event.level !== 'query') return;
      const { sql: text, parameters } = event.query;
      trace.push(text.startsWith('INSERT INTO notes') ? `note ${String(parameters[0])}` : text);
    },
  });
});

afterEach(async () => {
  await writer.destroy();
  reader.close();
  rmSync(dir, { recursive: true, force: true });
});

const insertNote = (trx: Kysely<Database>, body: string) => sql`INSERT INTO notes (body) VALUES (${body})`.execute(trx);

/** A unit that inserts one note and answers with its body. */
const note =
  (body: string): WriteWork<string> =>
  async (trx) => {
    await insertNote(trx, body);
    return body;
  };

/** The notes another connection sees, in the order they were written. */
const committed = (): string[] => reader.prepare<[], string>('SELECT body FROM notes ORDER BY id').pluck().all();

/** The writer's trace cut into transactions: the notes each one wrote. */
const transactions = (): string[][] => {
  const batches: string[][] = [];
  for (const statement of trace) {
    if (statement === 'BEGIN IMMEDIATE') batches.push([]);
    else if (statement.startsWith('note ')) batches.at(-1)!.push(statement.slice('note '.length));
  }
  return batches;
};

const commits = () => trace.filter((statement) => statement === 'COMMIT').length;

/** How each of `promises` settled, in their order. */
const outcomes = (promises: Promise<unknown>[]) => Promise.allSettled(promises);

describe('WriteBatcher', () => {
  it('gives writes that arrive together one transaction, each in a savepoint, and answers none before the commit', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    const seenAtAnswer: string[][] = [];
    const writes = ['a', 'b', 'c'].map((body) =>
      batcher.run(note(body)).then((value) => {
        seenAtAnswer.push(committed());
        return value;
      }),
    );

    expect(await Promise.all(writes)).toEqual(['a', 'b', 'c']);
    // Every answer came when all three were already visible to another connection.
    expect(seenAtAnswer).toEqual([
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
    ]);
    expect(trace).toEqual([
      'BEGIN IMMEDIATE',
      ...['a', 'b', 'c'].flatMap((body) => ['SAVEPOINT unit', `note ${body}`, 'RELEASE unit']),
      'COMMIT',
    ]);
  });

  it('undoes a failing write alone: its savepoint is rolled back, and the rest of the batch commits', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    const refused = new Error('over quota');
    const writes = [
      batcher.run(note('kept 1')),
      batcher.run(async (trx) => {
        await insertNote(trx, 'undone by its own error');
        throw refused;
      }),
      batcher.run(async (trx) => {
        await insertNote(trx, 'undone by a constraint');
        await insertNote(trx, 'kept 1');
      }),
      batcher.run(note('kept 2')),
    ];

    const [first, second, third, fourth] = await outcomes(writes);
    expect(first).toEqual({ status: 'fulfilled', value: 'kept 1' });
    expect(second).toEqual({ status: 'rejected', reason: refused });
    expect(third).toMatchObject({ status: 'rejected', reason: { code: 'SQLITE_CONSTRAINT_UNIQUE' } });
    expect(fourth).toEqual({ status: 'fulfilled', value: 'kept 2' });
    expect(committed()).toEqual(['kept 1', 'kept 2']);
    expect(trace.filter((statement) => statement === 'ROLLBACK TO unit')).toHaveLength(2);
    expect(commits()).toBe(1);
    expect(batcher.failure).toBeUndefined();
  });

  it('fails every write of the batch, and commits none, when its COMMIT fails', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    const writes = [
      batcher.run(note('a')),
      batcher.run((trx) => sql`INSERT INTO children (parent_id) VALUES (42)`.execute(trx)),
      batcher.run(note('c')),
    ];

    const settled = await outcomes(writes);
    expect(settled.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const reasons = settled.map((outcome) => (outcome as PromiseRejectedResult).reason as { code?: string });
    expect(reasons[0]!.code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(new Set(reasons).size).toBe(1);
    expect(commits()).toBe(0);
    expect(trace.at(-1)).toBe('ROLLBACK');
    expect(committed()).toEqual([]);
    // A broken constraint is not the database failing: nothing is remembered, and the next write commits.
    expect(batcher.failure).toBeUndefined();
    await expect(batcher.run(note('after'))).resolves.toBe('after');
    expect(committed()).toEqual(['after']);
  });

  it('fails the whole batch with the original error when the database cannot take a write, until a batch commits again', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    // The file may not grow: a large write finds the disk full.
    const pages = writerSqlite.pragma('page_count', { simple: true }) as number;
    writerSqlite.pragma(`max_page_count = ${pages}`);
    const writes = [
      batcher.run(note('small, before')),
      batcher.run(note('x'.repeat(100_000))),
      batcher.run(note('small, after')),
    ];

    const settled = await outcomes(writes);
    const reasons = settled.map((outcome) => (outcome as PromiseRejectedResult).reason as { code?: string });
    expect(settled.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(reasons[0]!.code).toBe('SQLITE_FULL');
    expect(new Set(reasons).size).toBe(1);
    expect(batcher.failure).toBe(reasons[0]);
    expect(committed()).toEqual([]);
    // The unit before the failing one had written, and is undone with it; the one after never ran.
    expect(trace).toContain('note small, before');
    expect(trace).not.toContain('note small, after');

    writerSqlite.pragma('max_page_count = 1000000');
    await expect(batcher.run(note('room again'))).resolves.toBe('room again');
    expect(batcher.failure).toBeUndefined();
    expect(committed()).toEqual(['room again']);
  });

  it("waits for another connection's write lock, and fails the batch as unavailable when it is held past the wait", async () => {
    const holder = openSqlite(file, 0);
    try {
      holder.exec('BEGIN IMMEDIATE');
      const patient = new WriteBatcher(writer, 10_000);
      const waiting = patient.run(note('waited'));
      setTimeout(() => holder.exec('COMMIT'), 100);
      await expect(waiting).resolves.toBe('waited');
      expect(committed()).toEqual(['waited']);

      holder.exec('BEGIN IMMEDIATE');
      const impatient = new WriteBatcher(writer, 50);
      const writes = [impatient.run(note('a')), impatient.run(note('b'))];
      const settled = await outcomes(writes);
      expect(settled).toMatchObject([
        { status: 'rejected', reason: { code: 'SQLITE_BUSY' } },
        { status: 'rejected', reason: { code: 'SQLITE_BUSY' } },
      ]);
      expect(impatient.failure).toBe((settled[0] as PromiseRejectedResult).reason);
      holder.exec('COMMIT');
      await expect(impatient.run(note('c'))).resolves.toBe('c');
      expect(impatient.failure).toBeUndefined();
      expect(committed()).toEqual(['waited', 'c']);
    } finally {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
    }
  });

  it('keeps the order of arrival, and puts a write that arrives during a batch into the next one', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    let late: Promise<string> | undefined;
    const first = [
      batcher.run(async (trx) => {
        await insertNote(trx, 'a');
        late = batcher.run(note('late'));
        return 'a';
      }),
      batcher.run(note('b')),
    ];
    await Promise.all(first);
    await expect(late).resolves.toBe('late');
    expect(transactions()).toEqual([['a', 'b'], ['late']]);
    expect(committed()).toEqual(['a', 'b', 'late']);
  });

  it('takes at most `maxBatch` writes into one transaction, in order', async () => {
    const batcher = new WriteBatcher(writer, 1000, 2);
    const bodies = ['a', 'b', 'c', 'd', 'e'];
    expect(await Promise.all(bodies.map((body) => batcher.run(note(body))))).toEqual(bodies);
    expect(transactions()).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(committed()).toEqual(bodies);
  });

  it('lets the event loop serve other work between two units of a batch', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    const marks: string[] = [];
    await Promise.all([
      batcher.run(async (trx) => {
        setImmediate(() => marks.push('other work'));
        await insertNote(trx, 'a');
        marks.push('a');
      }),
      batcher.run(async (trx) => {
        await insertNote(trx, 'b');
        marks.push('b');
      }),
    ]);
    expect(marks).toEqual(['a', 'other work', 'b']);
  });

  it('settles every write with an error, and commits none, when its connection closes during a batch; refuses writes after', async () => {
    const batcher = new WriteBatcher(writer, 1000);
    let started!: () => void;
    const inside = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const writes = [
      batcher.run(async (trx) => {
        await insertNote(trx, 'a');
        started();
        await gate;
      }),
      batcher.run(note('b')),
    ];

    await inside;
    await writer.destroy();
    release();
    const settled = await outcomes(writes);
    expect(settled.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect(committed()).toEqual([]);
    await expect(batcher.run(note('after close'))).rejects.toThrow();
    expect(committed()).toEqual([]);
  });
});
