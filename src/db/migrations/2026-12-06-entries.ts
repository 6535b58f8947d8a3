import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen and must not depend on today's schema types */

/** The digits of an order key, in the order both databases compare them (byte order; `COLLATE "C"` on PostgreSQL). */
const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Entries (API 1.6.0): every slot of a playlist gets an id of its own (`entry`, counted per playlist from 1 and never
 * given twice: `playlists.next_entry` is the next one) and an order key (`ord`, compared as bytes), so that an insert
 * or a move writes its own rows only, with a key between its neighbours' (see playlists/entry-order.ts). Existing
 * slots get the entries 1, 2, … in playlist order and the integer keys `a0`, `a1`, … `az`, `b00`… of their positions
 * (the keys the ordering library makes for integers: a head letter for the number of base-62 digits, then the
 * digits). A revision records its entries beside its songs (`entries`, as `songs` holds ids); revisions written
 * before this have none (the empty text), so a restore of such a version gives its songs new entries. `edit_keys`
 * keeps what a merged edit sent with a key answered, so that the same request sent again applies nothing twice.
 */
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const int = dialect === 'sqlite' ? 'integer' : 'bigint';
  await db.schema
    .alterTable('playlists')
    .addColumn('next_entry', int, (col: any) => col.notNull().defaultTo(1))
    .execute();
  await sql`UPDATE playlists SET next_entry = 1 + (SELECT count(*) FROM playlist_songs WHERE playlist_id = playlists.id)`.execute(
    db,
  );
  // A deleted playlist keeps its next entry, so that one restored never gives an entry id again.
  await db.schema
    .alterTable('deleted_playlists')
    .addColumn('next_entry', int, (col: any) => col.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('playlist_revisions')
    .addColumn('entries', 'text', (col: any) => col.notNull().defaultTo(''))
    .execute();

  const d = (n: any) => sql`substr(${DIGITS}, ${n} + 1, 1)`;
  const p = sql.ref('position');
  const two = sql`(${p} - 62)`;
  const three = sql`(${p} - 3906)`;
  const key = sql`CASE
      WHEN ${p} < 62 THEN 'a' || ${d(p)}
      WHEN ${p} < 3906 THEN 'b' || ${d(sql`${two} / 62`)} || ${d(sql`${two} % 62`)}
      ELSE 'c' || ${d(sql`${three} / 3844`)} || ${d(sql`(${three} / 62) % 62`)} || ${d(sql`${three} % 62`)}
    END`;
  if (dialect === 'sqlite') {
    await sql`CREATE TABLE playlist_entries (
      playlist_id integer NOT NULL REFERENCES playlists (id) ON DELETE CASCADE,
      entry integer NOT NULL,
      ord text NOT NULL,
      song_id integer NOT NULL REFERENCES songs (id),
      PRIMARY KEY (playlist_id, entry)
    ) WITHOUT ROWID`.execute(db);
    await sql`INSERT INTO playlist_entries (playlist_id, entry, ord, song_id)
      SELECT playlist_id, position + 1, ${key}, song_id FROM playlist_songs`.execute(db);
    await sql`DROP TABLE playlist_songs`.execute(db);
    await sql`ALTER TABLE playlist_entries RENAME TO playlist_songs`.execute(db);
  } else {
    await sql`ALTER TABLE playlist_songs ADD COLUMN entry bigint, ADD COLUMN ord text COLLATE "C"`.execute(db);
    await sql`UPDATE playlist_songs SET entry = position + 1, ord = ${key}`.execute(db);
    await sql`ALTER TABLE playlist_songs ALTER COLUMN entry SET NOT NULL, ALTER COLUMN ord SET NOT NULL,
      DROP CONSTRAINT playlist_songs_pk, DROP COLUMN position`.execute(db);
    await sql`ALTER TABLE playlist_songs ADD CONSTRAINT playlist_songs_pk PRIMARY KEY (playlist_id, entry)`.execute(db);
  }
  // A merged edit's key (`POST …/edits`): what it answered, kept while the history is (pruned with it).
  await db.schema
    .createTable('edit_keys')
    .addColumn('playlist_id', int, (col: any) => col.notNull())
    .addColumn('user_id', int, (col: any) => col.notNull())
    .addColumn('key', 'text', (col: any) => col.notNull())
    .addColumn('at', 'bigint', (col: any) => col.notNull())
    .addColumn('results', 'text', (col: any) => col.notNull())
    .addPrimaryKeyConstraint('edit_keys_pk', ['playlist_id', 'user_id', 'key'])
    .execute();
  await db.schema.createIndex('edit_keys_at').on('edit_keys').column('at').execute();
  // Not unique: within one statement a removed entry's key may be given to a new one before the removal is seen.
  // The keys a write leaves are distinct all the same (entry-order.ts), and readers order by (ord, entry).
  await sql`CREATE INDEX playlist_songs_order ON playlist_songs (playlist_id, ord)`.execute(db);
}

export async function down(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema.dropTable('edit_keys').execute();
  if (dialect === 'sqlite') {
    await sql`CREATE TABLE playlist_positions (
      playlist_id integer NOT NULL REFERENCES playlists (id) ON DELETE CASCADE,
      position integer NOT NULL,
      song_id integer NOT NULL REFERENCES songs (id),
      CONSTRAINT playlist_songs_pk PRIMARY KEY (playlist_id, position)
    )`.execute(db);
    await sql`INSERT INTO playlist_positions (playlist_id, position, song_id)
      SELECT playlist_id, row_number() OVER (PARTITION BY playlist_id ORDER BY ord) - 1, song_id
      FROM playlist_songs`.execute(db);
    await sql`DROP TABLE playlist_songs`.execute(db);
    await sql`ALTER TABLE playlist_positions RENAME TO playlist_songs`.execute(db);
  } else {
    await sql`DROP INDEX playlist_songs_order`.execute(db);
    await sql`ALTER TABLE playlist_songs ADD COLUMN position integer`.execute(db);
    await sql`UPDATE playlist_songs s SET position = r.n - 1 FROM (
      SELECT playlist_id, entry, row_number() OVER (PARTITION BY playlist_id ORDER BY ord) AS n FROM playlist_songs
    ) r WHERE r.playlist_id = s.playlist_id AND r.entry = s.entry`.execute(db);
    await sql`ALTER TABLE playlist_songs DROP CONSTRAINT playlist_songs_pk, DROP COLUMN entry, DROP COLUMN ord,
      ALTER COLUMN position SET NOT NULL`.execute(db);
    await sql`ALTER TABLE playlist_songs ADD CONSTRAINT playlist_songs_pk PRIMARY KEY (playlist_id, position)`.execute(
      db,
    );
  }
  await db.schema.alterTable('playlist_revisions').dropColumn('entries').execute();
  await db.schema.alterTable('deleted_playlists').dropColumn('next_entry').execute();
  await db.schema.alterTable('playlists').dropColumn('next_entry').execute();
}
