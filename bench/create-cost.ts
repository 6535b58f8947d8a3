/**
 * SQLite's own cost of a create, by schema: the service's statements for 960 creates of 10 songs in groups of 16
 * (one transaction, one fsync, a savepoint per create, as the group commit does), run with better-sqlite3 alone
 * on a copy of a bench data set, with and without the index of entries by song and the trigram index. Then the
 * statements a create runs now (the songs read, the owner's slot, the row, the first revision, the entries, the
 * search document, each in its savepoint) by group size, with the share of the time spent in the `COMMIT`: what
 * SQLite alone costs a create before any of the service's own work.
 *
 *   npx tsx bench/create-cost.ts [bench/data/sqlite-10000.db]
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';

const source = process.argv[2] ?? 'bench/data/sqlite-10000.db';
const GROUPS = 60;
const PER_GROUP = 16;
const SONGS = 10;

interface Variant {
  readonly label: string;
  readonly songIndex: boolean;
  readonly trigrams: 'none' | 'with each create' | 'at the end of the group';
}

const VARIANTS: readonly Variant[] = [
  {
    label: 'entries indexed by song, trigrams with each create (before)',
    songIndex: true,
    trigrams: 'with each create',
  },
  {
    label: 'entries indexed by song, trigrams at the end of the group',
    songIndex: true,
    trigrams: 'at the end of the group',
  },
  { label: 'entries indexed by song, no trigrams', songIndex: true, trigrams: 'none' },
  { label: 'no index by song, no trigrams (now, a library under 2000)', songIndex: false, trigrams: 'none' },
  {
    label: 'no index by song, trigrams at the end (now, a library past 2000)',
    songIndex: false,
    trigrams: 'at the end of the group',
  },
];

/** A fresh copy of the data set, with the service's durability settings and no automatic checkpoints. */
function openCopy(dir: string): SQLite.Database {
  const file = join(dir, 'copy.db');
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  copyFileSync(source, file);
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('wal_autocheckpoint = 0');
  return db;
}

function measure(variant: Variant, dir: string): { msPerCreate: number; walPagesPerCreate: number } {
  const db = openCopy(dir);
  try {
    if (variant.songIndex) db.exec('CREATE INDEX IF NOT EXISTS playlist_songs_song_id ON playlist_songs (song_id)');
    const slot = db.prepare(
      'UPDATE users SET playlist_count = playlist_count + 1 WHERE id = ? RETURNING playlist_count',
    );
    const playlist = db.prepare('INSERT INTO playlists (owner_id, name, created_at) VALUES (?, ?, ?) RETURNING id');
    const entries = db.prepare(
      `INSERT INTO playlist_songs (playlist_id, position, song_id) VALUES ${Array(SONGS).fill('(?, ?, ?)').join(', ')}`,
    );
    const document = db.prepare('INSERT INTO playlist_documents (owner_id, playlist_id, doc) VALUES (?, ?, ?)');
    // The service no longer keeps a trigram index (search reads the owner's documents): made here to measure it.
    db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS playlist_trigrams
      USING fts5(doc, tokenize = 'trigram', content = '', contentless_delete = 1)`);
    const trigrams = db.prepare('INSERT INTO playlist_trigrams (rowid, doc) VALUES (?, ?)');
    const owners = db.prepare('SELECT id FROM users').pluck().all() as number[];
    const songs = (db.prepare('SELECT max(id) FROM songs').pluck().get() as number) || 1;
    const docs = db.prepare('SELECT doc FROM playlist_documents LIMIT 200').pluck().all() as string[];
    const started = performance.now();
    let n = 0;
    for (let group = 0; group < GROUPS; group++) {
      db.exec('BEGIN IMMEDIATE');
      const atEnd: [number, string][] = [];
      for (let i = 0; i < PER_GROUP; i++, n++) {
        db.exec('SAVEPOINT unit');
        const owner = owners[(n * 37) % owners.length]!;
        slot.get(owner);
        const { id } = playlist.get(owner, `bench ${n}`, Date.now()) as { id: number };
        entries.run(Array.from({ length: SONGS }, (_, p) => [id, p, 1 + ((n * 7919 + p * 104_729) % songs)]).flat());
        const doc = `${docs[n % docs.length] ?? ''} ${n}`;
        document.run(owner, id, doc);
        if (variant.trigrams === 'with each create') trigrams.run(id, doc);
        if (variant.trigrams === 'at the end of the group') atEnd.push([id, doc]);
        db.exec('RELEASE unit');
      }
      for (const [id, doc] of atEnd) trigrams.run(id, doc);
      db.exec('COMMIT');
    }
    const elapsed = performance.now() - started;
    const [checkpoint] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
    return { msPerCreate: elapsed / n, walPagesPerCreate: (checkpoint?.log ?? 0) / n };
  } finally {
    db.close();
  }
}

/** The statements of a create as the service runs them now, `perCommit` creates to a transaction. */
function measureNow(perCommit: number, dir: string): { usPerCreate: number; commitShare: number } {
  const db = openCopy(dir);
  try {
    const read = db.prepare(
      `SELECT id, title, artist, genre FROM songs WHERE id IN (${Array(SONGS).fill('?').join(', ')})`,
    );
    const slot = db.prepare(
      'UPDATE users SET playlist_count = playlist_count + 1 WHERE id = ? AND playlist_count < ? RETURNING playlist_count',
    );
    const playlist = db.prepare('INSERT INTO playlists (owner_id, name, created_at) VALUES (?, ?, ?) RETURNING id');
    const revision = db.prepare(`INSERT INTO playlist_revisions (playlist_id, owner_id, version, at, by_id, change,
      name, song_count, splice_at, splice_deleted, songs, chain) VALUES (?, ?, 1, ?, ?, 'create', ?, ?, NULL, NULL, ?, 0)`);
    const entries = db.prepare(
      `INSERT INTO playlist_songs (playlist_id, position, song_id) VALUES ${Array(SONGS).fill('(?, ?, ?)').join(', ')}`,
    );
    const document = db.prepare('INSERT INTO playlist_documents (owner_id, playlist_id, doc) VALUES (?, ?, ?)');
    const owners = db.prepare('SELECT id FROM users').pluck().all() as number[];
    const songs = (db.prepare('SELECT max(id) FROM songs').pluck().get() as number) || 1;
    const docs = db.prepare('SELECT doc FROM playlist_documents LIMIT 200').pluck().all() as string[];
    const total = 960;
    let committing = 0;
    const started = performance.now();
    for (let n = 0; n < total;) {
      db.exec('BEGIN IMMEDIATE');
      for (let i = 0; i < perCommit && n < total; i++, n++) {
        const ids = Array.from({ length: SONGS }, (_, p) => 1 + ((n * 7919 + p * 104_729) % songs));
        read.all(ids);
        db.exec('SAVEPOINT unit');
        const owner = owners[(n * 37) % owners.length]!;
        slot.get(owner, 1e9);
        const name = `bench ${n}`;
        const { id } = playlist.get(owner, name, Date.now()) as { id: number };
        revision.run(id, owner, Date.now(), owner, name, SONGS, ids.join(','));
        entries.run(ids.flatMap((songId, p) => [id, p, songId]));
        document.run(owner, id, `${docs[n % docs.length] ?? ''} ${n}`);
        db.exec('RELEASE unit');
      }
      const commitStarted = performance.now();
      db.exec('COMMIT');
      committing += performance.now() - commitStarted;
    }
    const elapsed = performance.now() - started;
    return { usPerCreate: (1000 * elapsed) / total, commitShare: committing / elapsed };
  } finally {
    db.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'mixtape-create-cost-'));
try {
  console.log(`${GROUPS * PER_GROUP} creates of ${SONGS} songs in groups of ${PER_GROUP}, on a copy of ${source}\n`);
  console.log('| schema | ms per create | WAL pages per create |\n| --- | --- | --- |');
  for (const variant of VARIANTS) {
    const { msPerCreate, walPagesPerCreate } = measure(variant, dir);
    console.log(`| ${variant.label} | ${msPerCreate.toFixed(3)} | ${walPagesPerCreate.toFixed(1)} |`);
  }
  console.log('\nThe statements of a create now, 960 creates:\n');
  console.log('| creates a commit | µs per create | of which the COMMIT |\n| --- | --- | --- |');
  for (const perCommit of [1, 4, 8, 16, 32]) {
    const { usPerCreate, commitShare } = measureNow(perCommit, dir);
    console.log(`| ${perCommit} | ${usPerCreate.toFixed(0)} | ${(100 * commitShare).toFixed(0)}% |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
