import { mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { playlistDocument } from '../src/domain/search-text.js';
import type { DatasetMeta } from './dataset.js';
import {
  BULK_TABLES,
  EDITED_PLAYLIST_SONGS,
  META_TABLE,
  nextEntries,
  orderKey,
  type DatasetStore,
  type DatasetWriter,
} from './store.js';

const FILES = (file: string) => [file, `${file}-wal`, `${file}-shm`];

/** A data set in a SQLite file, written with better-sqlite3 directly: prepared statements in large transactions. */
export function sqliteStore(file: string): DatasetStore {
  const databaseUrl = `sqlite:${file}`;

  function open(): SQLite.Database {
    const sqlite = new SQLite(file, { fileMustExist: true });
    sqlite.pragma('busy_timeout = 5000');
    return sqlite;
  }

  return {
    databaseUrl,
    location: file,

    readMeta() {
      let sqlite: SQLite.Database;
      try {
        sqlite = open();
      } catch {
        return Promise.resolve(undefined);
      }
      try {
        const table = sqlite
          .prepare('SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?')
          .get('table', META_TABLE);
        if (table === undefined) return Promise.resolve(undefined);
        const row = sqlite.prepare(`SELECT meta FROM ${META_TABLE}`).get() as { meta: string } | undefined;
        return Promise.resolve(row === undefined ? undefined : (JSON.parse(row.meta) as DatasetMeta));
      } finally {
        sqlite.close();
      }
    },

    async create() {
      for (const path of FILES(file)) rmSync(path, { force: true });
      mkdirSync(dirname(file), { recursive: true });
      // The schema comes from the service's own migrations, through its own connection code.
      const db = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
      try {
        await migrateToLatest(db);
      } finally {
        await db.close();
      }
      return sqliteWriter(open());
    },

    reset(meta) {
      const sqlite = open();
      try {
        // Cascades to the entries; the service's triggers remove the search documents and log the deletes.
        sqlite.pragma('foreign_keys = ON');
        const removed = sqlite.transaction(() => {
          sqlite
            .prepare(
              `UPDATE users SET playlist_count = playlist_count -
                 (SELECT count(*) FROM playlists p WHERE p.owner_id = users.id AND p.id > ?)
               WHERE id IN (SELECT owner_id FROM playlists WHERE id > ?)`,
            )
            .run(meta.lastPlaylistId, meta.lastPlaylistId);
          sqlite.prepare('DELETE FROM deleted_playlists').run();
          // The generated data has no history: every revision is a run's.
          sqlite.prepare('DELETE FROM playlist_revisions').run();
          const edited = sqlite
            .prepare('SELECT id, name FROM playlists WHERE id <= ? AND version > 1')
            .all(meta.lastPlaylistId) as { id: number; name: string }[];
          const songsOf = sqlite.prepare(
            `SELECT s.title, s.artist, s.genre FROM playlist_songs ps JOIN songs s ON s.id = ps.song_id
             WHERE ps.playlist_id = ? ORDER BY ps.ord, ps.entry`,
          );
          for (const { id, name } of edited) {
            sqlite
              .prepare('DELETE FROM playlist_songs WHERE playlist_id = ? AND entry > ?')
              .run(id, EDITED_PLAYLIST_SONGS);
            const songs = songsOf.all(id) as { title: string; artist: string; genre: string }[];
            sqlite
              .prepare('UPDATE playlist_documents SET doc = ? WHERE playlist_id = ?')
              .run(playlistDocument(name, songs), id);
            sqlite.prepare('UPDATE playlists SET version = 1 WHERE id = ?').run(id);
          }
          return sqlite.prepare('DELETE FROM playlists WHERE id > ?').run(meta.lastPlaylistId).changes;
        })();
        sqlite.pragma('wal_checkpoint(TRUNCATE)');
        return Promise.resolve(removed);
      } finally {
        sqlite.close();
      }
    },

    size() {
      let bytes = 0;
      for (const path of FILES(file)) {
        try {
          bytes += statSync(path).size;
        } catch {
          // No -wal or -shm file: nothing to add.
        }
      }
      return Promise.resolve(bytes);
    },
  };
}

function sqliteWriter(sqlite: SQLite.Database): DatasetWriter {
  // For the load only: nothing is synced, the rows are consistent by construction, and a crash means regenerating.
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('foreign_keys = OFF');
  sqlite.pragma('cache_size = -1048576');
  sqlite.pragma('temp_store = MEMORY');

  // Secondary indexes are built once at the end from sorted data, far faster than maintained row by row.
  const deferred = sqlite
    .prepare(
      `SELECT name, sql FROM sqlite_master
       WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${BULK_TABLES.map(() => '?').join(', ')})`,
    )
    .all(...BULK_TABLES) as { name: string; sql: string }[];
  for (const index of deferred) sqlite.exec(`DROP INDEX "${index.name}"`);

  const insertPlaylist = sqlite.prepare(
    'INSERT INTO playlists (id, owner_id, name, created_at, next_entry) VALUES (?, ?, ?, ?, ?)',
  );
  const insertEntry = sqlite.prepare(
    'INSERT INTO playlist_songs (playlist_id, entry, ord, song_id) VALUES (?, ?, ?, ?)',
  );
  const insertDocument = sqlite.prepare('INSERT INTO playlist_documents (owner_id, playlist_id, doc) VALUES (?, ?, ?)');

  return {
    insertUsers(users, passwordHash, createdAt) {
      const insert = sqlite.prepare(
        'INSERT INTO users (id, name, password_hash, playlist_count, created_at) VALUES (?, ?, ?, ?, ?)',
      );
      sqlite.transaction(() => {
        for (const user of users) insert.run(user.id, user.name, passwordHash, user.playlists, createdAt);
      })();
      return Promise.resolve();
    },

    insertSongs(songs) {
      const insert = sqlite.prepare(
        'INSERT INTO songs (id, title, artist, album, genre, duration, search_doc) VALUES (?, ?, ?, ?, ?, ?, ?)',
      );
      sqlite.transaction(() => {
        songs.forEach((s, i) => insert.run(i + 1, s.title, s.artist, s.album, s.genre, s.duration, s.searchDoc));
      })();
      return Promise.resolve();
    },

    insertPlaylists(batch) {
      const next = nextEntries(batch);
      sqlite.transaction(() => {
        for (let i = 0; i < batch.ids.length; i += 1) {
          insertPlaylist.run(batch.ids[i], batch.ownerIds[i], batch.names[i], batch.createdAt[i], next[i]);
          insertDocument.run(batch.ownerIds[i], batch.ids[i], batch.docs[i]);
        }
        for (let i = 0; i < batch.entryPlaylistIds.length; i += 1) {
          const position = batch.entryPositions[i]!;
          insertEntry.run(batch.entryPlaylistIds[i], position + 1, orderKey(position), batch.entrySongIds[i]);
        }
      })();
      return Promise.resolve();
    },

    insertSharing(rows) {
      const member = sqlite.prepare(
        `INSERT INTO playlist_members (playlist_id, user_id, owner_id, role, added_at) VALUES (?, ?, ?, 'viewer', ?)`,
      );
      const link = sqlite.prepare(
        'INSERT INTO playlist_links (playlist_id, owner_id, digest, created_at, expires_at) VALUES (?, ?, ?, ?, NULL)',
      );
      sqlite.transaction(() => {
        for (let i = 0; i < rows.memberPlaylistIds.length; i += 1) {
          member.run(rows.memberPlaylistIds[i], rows.memberUserIds[i], rows.memberOwnerIds[i], rows.at);
        }
        for (let i = 0; i < rows.linkPlaylistIds.length; i += 1) {
          link.run(rows.linkPlaylistIds[i], rows.linkOwnerIds[i], rows.linkDigests[i], rows.at);
        }
      })();
      return Promise.resolve();
    },

    finish(onPhase) {
      onPhase('indexes');
      for (const index of deferred) sqlite.exec(index.sql);
      // No ANALYZE: the service never runs it, so its query plans are made without statistics.
      sqlite.pragma('synchronous = FULL');
      sqlite.pragma('foreign_keys = ON');
      onPhase('checkpoint');
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
      return Promise.resolve();
    },

    storeMeta(meta) {
      sqlite.exec(`CREATE TABLE ${META_TABLE} (meta TEXT NOT NULL)`);
      sqlite.prepare(`INSERT INTO ${META_TABLE} (meta) VALUES (?)`).run(JSON.stringify(meta));
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
      sqlite.close();
      return Promise.resolve();
    },
  };
}
