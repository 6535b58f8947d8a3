import pg from 'pg';
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

/** Songs per INSERT: the arrays are sent as one text parameter each, so this only bounds a statement's size. */
const SONG_CHUNK = 10_000;

/** A data set in a PostgreSQL database of its own, written with multi-row inserts over `unnest` arrays. */
export function postgresStore(adminUrl: string, database: string): DatasetStore {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();

  async function withClient<T>(connectionString: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  return {
    databaseUrl,
    // Without the credentials, if the URL had any.
    location: databaseUrl.replace(/\/\/[^@/]*@/, '//'),

    async readMeta() {
      const exists = await withClient(adminUrl, (admin) =>
        admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]),
      );
      if (exists.rowCount === 0) return undefined;
      return withClient(databaseUrl, async (client) => {
        const table = await client.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [
          META_TABLE,
        ]);
        if (table.rows[0]?.found == null) return undefined;
        const row = await client.query<{ meta: string }>(`SELECT meta FROM ${META_TABLE}`);
        return row.rows[0] === undefined ? undefined : (JSON.parse(row.rows[0].meta) as DatasetMeta);
      });
    },

    async create() {
      await withClient(adminUrl, async (admin) => {
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await admin.query(`CREATE DATABASE ${database}`);
      });
      // The schema comes from the service's own migrations, through its own connection code.
      const db = openDatabase(loadConfig({ DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: '1' }).database);
      try {
        await migrateToLatest(db);
      } finally {
        await db.close();
      }
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      return postgresWriter(client);
    },

    reset(meta) {
      return withClient(databaseUrl, async (client) => {
        await client.query('BEGIN');
        await client.query(
          `UPDATE users SET playlist_count = playlist_count -
             (SELECT count(*) FROM playlists p WHERE p.owner_id = users.id AND p.id > $1)
           WHERE id IN (SELECT owner_id FROM playlists WHERE id > $1)`,
          [meta.lastPlaylistId],
        );
        await client.query('DELETE FROM deleted_playlists');
        // The generated data has no history: every revision is a run's.
        await client.query('DELETE FROM playlist_revisions');
        const edited = await client.query<{ id: string; name: string }>(
          'SELECT id, name FROM playlists WHERE id <= $1 AND version > 1',
          [meta.lastPlaylistId],
        );
        for (const { id, name } of edited.rows) {
          await client.query('DELETE FROM playlist_songs WHERE playlist_id = $1 AND entry > $2', [
            id,
            EDITED_PLAYLIST_SONGS,
          ]);
          const songs = await client.query<{ title: string; artist: string; genre: string }>(
            `SELECT s.title, s.artist, s.genre FROM playlist_songs ps JOIN songs s ON s.id = ps.song_id
             WHERE ps.playlist_id = $1 ORDER BY ps.ord, ps.entry`,
            [id],
          );
          await client.query('UPDATE playlist_documents SET doc = $1 WHERE playlist_id = $2', [
            playlistDocument(name, songs.rows),
            id,
          ]);
          await client.query('UPDATE playlists SET version = 1 WHERE id = $1', [id]);
        }
        // Cascades to the entries and the search documents.
        const removed = await client.query('DELETE FROM playlists WHERE id > $1', [meta.lastPlaylistId]);
        await client.query('COMMIT');
        // Dead rows and stale statistics change the planner's choices (the list query's join flips to a hash join
        // over the whole catalog), so the next run would not measure the generated state.
        if ((removed.rowCount ?? 0) > 0) await client.query('VACUUM ANALYZE');
        return removed.rowCount ?? 0;
      });
    },

    size() {
      return withClient(databaseUrl, async (client) => {
        const row = await client.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes');
        return Number(row.rows[0]?.bytes ?? 0);
      });
    },
  };
}

async function postgresWriter(client: pg.Client): Promise<DatasetWriter> {
  // For the load only: a crash means regenerating, so commits need not wait for the disk.
  await client.query('SET synchronous_commit = off');
  await client.query(`SET maintenance_work_mem = '1GB'`);

  // Secondary indexes (the trigram index above all) are built once at the end, far faster than row by row.
  const deferred = await client.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename = ANY($1)
       AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
    [BULK_TABLES],
  );
  for (const index of deferred.rows) await client.query(`DROP INDEX "${index.indexname}"`);

  return {
    async insertUsers(users, passwordHash, createdAt) {
      await client.query(
        `INSERT INTO users (id, name, password_hash, playlist_count, created_at)
         SELECT id, name, $3, playlist_count, $4 FROM unnest($1::bigint[], $2::text[], $5::int[])
           AS u(id, name, playlist_count)`,
        [users.map((u) => u.id), users.map((u) => u.name), passwordHash, createdAt, users.map((u) => u.playlists)],
      );
    },

    async insertSongs(songs) {
      for (let start = 0; start < songs.length; start += SONG_CHUNK) {
        const chunk = songs.slice(start, start + SONG_CHUNK);
        await client.query(
          `INSERT INTO songs (id, title, artist, album, genre, duration, search_doc)
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[])`,
          [
            chunk.map((_, i) => start + i + 1),
            chunk.map((s) => s.title),
            chunk.map((s) => s.artist),
            chunk.map((s) => s.album),
            chunk.map((s) => s.genre),
            chunk.map((s) => s.duration),
            chunk.map((s) => s.searchDoc),
          ],
        );
      }
    },

    async insertPlaylists(batch) {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO playlists (id, owner_id, name, created_at, next_entry)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])`,
        [batch.ids, batch.ownerIds, batch.names, batch.createdAt, nextEntries(batch)],
      );
      await client.query(
        `INSERT INTO playlist_songs (playlist_id, entry, ord, song_id)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[])`,
        [
          batch.entryPlaylistIds,
          batch.entryPositions.map((position) => position + 1),
          batch.entryPositions.map(orderKey),
          batch.entrySongIds,
        ],
      );
      await client.query(
        `INSERT INTO playlist_documents (owner_id, playlist_id, doc)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])`,
        [batch.ownerIds, batch.ids, batch.docs],
      );
      await client.query('COMMIT');
    },

    async insertSharing(rows) {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO playlist_members (playlist_id, user_id, owner_id, role, added_at)
         SELECT playlist_id, user_id, owner_id, 'viewer', $4 FROM unnest($1::bigint[], $2::bigint[], $3::bigint[])
           AS m(playlist_id, user_id, owner_id)`,
        [rows.memberPlaylistIds, rows.memberUserIds, rows.memberOwnerIds, rows.at],
      );
      await client.query(
        `INSERT INTO playlist_links (playlist_id, owner_id, digest, created_at, expires_at)
         SELECT playlist_id, owner_id, digest, $4, NULL FROM unnest($1::bigint[], $2::bigint[], $3::text[])
           AS l(playlist_id, owner_id, digest)`,
        [rows.linkPlaylistIds, rows.linkOwnerIds, rows.linkDigests, rows.at],
      );
      await client.query('COMMIT');
    },

    async finish(onPhase) {
      onPhase('indexes');
      for (const index of deferred.rows) await client.query(index.indexdef);
      // Rows came with their ids, which leaves the identity sequences behind: the service's next insert would clash.
      for (const table of ['users', 'songs', 'playlists']) {
        await client.query(
          `SELECT setval(pg_get_serial_sequence('${table}', 'id'), GREATEST((SELECT max(id) FROM ${table}), 1))`,
        );
      }
      // Autovacuum would get there on a live server; doing it now gives the planner its statistics from the start.
      onPhase('vacuum analyze');
      await client.query('VACUUM ANALYZE');
    },

    async storeMeta(meta) {
      try {
        await client.query('SET synchronous_commit = on');
        await client.query(`CREATE TABLE ${META_TABLE} (meta TEXT NOT NULL)`);
        await client.query(`INSERT INTO ${META_TABLE} (meta) VALUES ($1)`, [JSON.stringify(meta)]);
      } finally {
        await client.end();
      }
    },
  };
}
