import type { Kysely } from 'kysely';
import { catalogVersion } from '../../db/playlist-changes.js';
import type { Database } from '../../db/schema.js';

type Q = Kysely<Database>;

/**
 * A page of a playlist's entries (`GET …/entries?limit=N&after=E`), in one statement, so that the page is that of the
 * version read with it: the playlist's name, version, rules and their status, the catalog's version, and the
 * `limit + 1` entries with their songs and origins that follow entry `after` in playlist order (`ord`, then `entry`, as every read
 * orders them), from the first without `after`; the one more says whether more follow. The entries are read from the
 * playlist's order index from where `after` stands, so a page costs its own length whatever the playlist's.
 * `after_ord` is the order key of `after`, null when it is not an entry of the playlist now. One row with no entry
 * when the page is empty; none when there is no such playlist.
 */
export function entryPageRows(db: Q, id: number, limit: number, after: number | undefined) {
  const afterOrd = db
    .selectFrom('playlist_songs')
    .select('ord')
    .where('playlist_id', '=', id)
    .where('entry', '=', after ?? 0);
  let entries = db
    .selectFrom('playlist_songs as ps')
    .innerJoin('songs as s', 's.id', 'ps.song_id')
    .leftJoin('playlist_entry_origins as o', (join) =>
      join.onRef('o.playlist_id', '=', 'ps.playlist_id').onRef('o.entry', '=', 'ps.entry'),
    )
    .leftJoin('users as u', 'u.id', 'o.added_by')
    .select(['ps.ord', 'ps.entry', 's.id as song_id', 's.title', 's.artist', 'u.name as added_by', 'o.added_at'])
    .where('ps.playlist_id', '=', id);
  if (after !== undefined) {
    // After (ord, entry) of `after`: `ord >=` bounds the index's range, the rest breaks a tie of keys.
    entries = entries.where((eb) =>
      eb.and([eb('ps.ord', '>=', afterOrd), eb.or([eb('ps.ord', '>', afterOrd), eb('ps.entry', '>', after)])]),
    );
  }
  const page = entries
    .orderBy('ps.ord')
    .orderBy('ps.entry')
    .limit(limit + 1)
    .as('pg');
  return db
    .selectFrom('playlists as p')
    .leftJoin(page, (join) => join.onTrue())
    .select([
      'p.name',
      'p.version',
      'p.rules',
      'p.rules_status',
      catalogVersion,
      afterOrd.as('after_ord'),
      'pg.entry',
      'pg.song_id',
      'pg.title',
      'pg.artist',
      'pg.added_by',
      'pg.added_at',
    ])
    .where('p.id', '=', id)
    .orderBy('pg.ord')
    .orderBy('pg.entry')
    .execute();
}
