/**
 * SQLite's own cost of a create of 10 songs and of a one-song append, as the service's statements, by writes a commit,
 * on a copy of a load data set: to tell the service's own CPU (`npm run bench`'s `cpu ms/req`) from SQLite's.
 *
 *   npx tsx bench/create-cost.ts [bench/data/sqlite-10010.db]
 */
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';
import { generateNKeysBetween, generateKeyBetween } from 'fractional-indexing';
import { sqliteCopy } from './micro.js';

const source = process.argv[2] ?? 'bench/data/sqlite-10010.db';
const SONGS = 10;
const WRITES = 960;

/** A fresh copy of the data set, with the service's durability settings and no automatic checkpoints. */
function withCopy<T>(work: (db: SQLite.Database) => T): T {
  const copy = sqliteCopy(source);
  const db = new SQLite(copy.file);
  try {
    for (const pragma of ['journal_mode = WAL', 'synchronous = FULL', 'foreign_keys = ON', 'wal_autocheckpoint = 0'])
      db.pragma(pragma);
    return work(db);
  } finally {
    db.close();
    copy.done();
  }
}

/** `WRITES` writes, `perCommit` to a transaction, each made by `write(n)` inside its savepoint. */
function timed(db: SQLite.Database, perCommit: number, write: (n: number) => void) {
  let committing = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let n = 0; n < WRITES;) {
    db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < perCommit && n < WRITES; i++, n++) {
      db.exec('SAVEPOINT unit');
      write(n);
      db.exec('RELEASE unit');
    }
    const commitStarted = performance.now();
    db.exec('COMMIT');
    committing += performance.now() - commitStarted;
  }
  const elapsed = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const [usPerWrite, cpuUsPerWrite] = [(1000 * elapsed) / WRITES, (cpu.user + cpu.system) / WRITES];
  return { usPerWrite, cpuUsPerWrite, commitShare: committing / elapsed };
}

const songsRead = (n: number) =>
  `SELECT id, title, artist, genre, (SELECT version FROM catalog_version) AS catalog_version FROM songs WHERE id IN (${Array(n).fill('?').join(', ')})`;

const REVISION = `INSERT INTO playlist_revisions (playlist_id, owner_id, version, at, by_id, change, name, song_count,
  splice_at, splice_deleted, songs, entries, chain, rules) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`;

const upsert = (n: number) =>
  `INSERT INTO playlist_songs (playlist_id, entry, ord, song_id) VALUES ${Array(n).fill('(?, ?, ?, ?)').join(', ')}
   ON CONFLICT (playlist_id, entry) DO UPDATE SET ord = excluded.ord`;

const createCost = (perCommit: number) =>
  withCopy((db) => {
    const read = db.prepare(songsRead(SONGS));
    const slot = db.prepare(
      'UPDATE users SET playlist_count = playlist_count + 1 WHERE id = ? AND playlist_count < ? RETURNING playlist_count',
    );
    const playlist = db.prepare(
      'INSERT INTO playlists (owner_id, name, created_at, next_entry, rules) VALUES (?, ?, ?, ?, NULL) RETURNING id',
    );
    const entries = db.prepare(upsert(SONGS));
    const revision = db.prepare(REVISION);
    const document = db.prepare('INSERT INTO playlist_documents (owner_id, playlist_id, doc) VALUES (?, ?, ?)');
    const owners = db.prepare('SELECT id FROM users').pluck().all() as number[];
    const songs = (db.prepare('SELECT max(id) FROM songs').pluck().get() as number) || 1;
    const docs = db.prepare('SELECT doc FROM playlist_documents LIMIT 200').pluck().all() as string[];
    const keys = generateNKeysBetween(null, null, SONGS);
    return timed(db, perCommit, (n) => {
      const ids = Array.from({ length: SONGS }, (_, p) => 1 + ((n * 7919 + p * 104_729) % songs));
      read.all(ids);
      const owner = owners[(n * 37) % owners.length]!;
      slot.get(owner, 1e9);
      const name = `bench ${n}`;
      const { id } = playlist.get(owner, name, Date.now(), SONGS + 1) as { id: number };
      entries.run(ids.flatMap((songId, p) => [id, p + 1, keys[p]!, songId]));
      const entryIds = ids.map((_, p) => p + 1).join(',');
      revision.run(id, owner, 1, Date.now(), owner, 'create', name, SONGS, null, null, ids.join(','), entryIds, 0);
      document.run(owner, id, `${docs[n % docs.length] ?? ''} ${n}`);
    });
  });

const editCost = (perCommit: number) =>
  withCopy((db) => {
    const access = db.prepare(`SELECT p.owner_id, p.version, (SELECT version FROM catalog_version) AS catalog_version,
        m.role, o.name AS owner_name
      FROM playlists p JOIN users o ON o.id = p.owner_id
      LEFT JOIN playlist_members m ON m.playlist_id = p.id AND m.user_id = ?
      WHERE p.id = ? AND (p.owner_id = ? OR m.user_id = ?)`);
    const length = db.prepare('SELECT count(*) AS songs FROM playlist_songs WHERE playlist_id = ?');
    const row = db.prepare(`SELECT p.owner_id, p.name, p.version, p.next_entry, p.rules,
        (SELECT version FROM catalog_version) AS catalog_version,
        (SELECT r.chain FROM playlist_revisions r WHERE r.playlist_id = p.id AND r.version = p.version) AS chain
      FROM playlists p WHERE p.id = ?`);
    const entries = db.prepare(
      'SELECT entry, song_id, ord FROM playlist_songs WHERE playlist_id = ? ORDER BY ord, entry',
    );
    const one = db.prepare(upsert(1));
    const update = db.prepare(`UPDATE playlists SET name = ?, version = ?, next_entry = ?, rules = NULL WHERE id = ?
      RETURNING (SELECT group_concat(playlist_id) FROM smart_sources WHERE source_id = ?) AS dependents`);
    const revision = db.prepare(REVISION);
    const document = db.prepare('UPDATE playlist_documents SET doc = ? WHERE owner_id = ? AND playlist_id = ?');
    const playlists = db.prepare('SELECT id, owner_id FROM playlists ORDER BY id LIMIT 96').all() as {
      id: number;
      owner_id: number;
    }[];
    const songs = (db.prepare('SELECT max(id) FROM songs').pluck().get() as number) || 1;
    const reads = new Map<number, SQLite.Statement>();
    return timed(db, perCommit, (n) => {
      const { id, owner_id: owner } = playlists[n % playlists.length]!;
      access.get(owner, id, owner, owner);
      length.get(id);
      const current = row.get(id) as { name: string; version: number; next_entry: number };
      const held = entries.all(id) as { entry: number; song_id: number; ord: string }[];
      const songIds = [...held.map((e) => e.song_id), 1 + ((n * 7919) % songs)];
      const distinct = [...new Set(songIds)];
      let read = reads.get(distinct.length);
      if (read === undefined) reads.set(distinct.length, (read = db.prepare(songsRead(distinct.length))));
      read.all(distinct);
      const entry = current.next_entry;
      one.run(id, entry, generateKeyBetween(held.at(-1)?.ord ?? null, null), songIds.at(-1));
      const version = current.version + 1;
      update.get(current.name, version, entry + 1, id, id);
      revision.run(
        id,
        owner,
        version,
        Date.now(),
        owner,
        'edit',
        current.name,
        songIds.length,
        held.length,
        0,
        String(songIds.at(-1)),
        String(entry),
        1,
      );
      document.run(`${current.name} ${n}`, owner, id);
    });
  });

console.log(`SQLite alone, ${WRITES} writes each, on a copy of ${source}\n`);
const figures = (c: ReturnType<typeof timed>) =>
  [c.usPerWrite.toFixed(0), `${(100 * c.commitShare).toFixed(0)}%`, c.cpuUsPerWrite.toFixed(0)].join(' | ');
console.log(
  '| writes a commit | create: µs | of which the COMMIT | CPU µs | edit: µs | of which the COMMIT | CPU µs |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const perCommit of [1, 4, 8, 16, 32])
  console.log(`| ${perCommit} | ${figures(createCost(perCommit))} | ${figures(editCost(perCommit))} |`);
