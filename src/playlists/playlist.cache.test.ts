import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../../test/helpers/databases.js';
import { importCatalog, seedDemoCatalog } from '../catalog/catalog.service.js';
import { loadConfig } from '../config.js';
import { openDatabase, type Db } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { CHANGE_LOG_LENGTH, type BigintColumn } from '../db/playlist-changes.js';
import { ApiError } from '../http/errors.js';
import { databaseReads, type AnswerReads } from './playlist-answers.repository.js';
import { Freshness } from './freshness.js';
import { playlistAccess } from './playlist.access.js';
import { longPages, PlaylistCache, type PageRow } from './playlist.cache.js';
import { OWNER, render, type PlaylistAnswer } from './playlist.render.js';
import { pageOfPlaylists } from './playlist.repository.js';
import { playlistStore } from './write/store.js';
import type { PlaylistWithSongs } from './playlist.schemas.js';

/** A database opened as an instance of the service opens it, with the statements it runs. */
interface Instance {
  readonly db: Db;
  readonly statements: string[];
}

function openInstance(url: string): Instance {
  const statements: string[] = [];
  const db = openDatabase(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' }).database, {
    onQuery: (query) => statements.push(query.sql),
  });
  return { db, statements };
}

/** The statements `run` made on the instance, and what it returned. */
async function traced<T>(instance: Instance, run: () => Promise<T>): Promise<{ value: T; statements: string[] }> {
  const before = instance.statements.length;
  const value = await run();
  return { value, statements: instance.statements.slice(before) };
}

/** Whether any of the statements read a playlist's songs (the cache had no current answer). */
const readSongs = (statements: readonly string[]) => statements.some((s) => /playlist_songs/.test(s));

const parsed = (answer: PlaylistAnswer | undefined) => JSON.parse(answer!.body.toString('utf8')) as PlaylistWithSongs;

/** Reads that stop half-way when asked to: after the database answered, before the cache sees the answer. */
function holdableReads(db: Db) {
  const reads = databaseReads(db, longPages());
  let held: { reached: () => void; release: Promise<void> } | undefined;
  const wait = async () => {
    const hold = held;
    held = undefined;
    if (hold === undefined) return;
    hold.reached();
    await hold.release;
  };
  const wrapped: AnswerReads = {
    async playlist(id) {
      const found = await reads.playlist(id);
      await wait();
      return found;
    },
    async playlists(ownerId, ids) {
      const found = await reads.playlists(ownerId, ids);
      await wait();
      return found;
    },
    versions: (ids) => reads.versions(ids),
  };
  return {
    reads: wrapped,
    /** Holds the next read once the database has answered it; `reached` resolves then, `release()` lets it go on. */
    holdNext() {
      let release!: () => void;
      let reached!: () => void;
      const hold = {
        release: new Promise<void>((resolve) => (release = resolve)),
        reached: new Promise<void>((resolve) => (reached = resolve)),
      };
      held = { reached, release: hold.release };
      return { reached: hold.reached, release };
    },
  };
}

/** The answers as the service asks for them: access first (undefined for a 404 or 410), then the cache. */
function answers(db: Db, maxBytes: number, reads?: AnswerReads) {
  const freshness = new Freshness(db);
  const access = playlistAccess(db, freshness);
  const cache = new PlaylistCache(db, maxBytes, freshness, reads);
  return {
    async playlist(userId: number, id: number): Promise<PlaylistAnswer | undefined> {
      const grant = await access.requireCurrent(userId, id).catch((error: unknown) => {
        if (error instanceof ApiError) return undefined;
        throw error;
      });
      const snapshot = grant === undefined ? undefined : await cache.playlist(grant);
      return snapshot === undefined ? undefined : render(snapshot, OWNER);
    },
    async page<R extends PageRow & { readonly catalog_version: BigintColumn }>(
      userId: number,
      read: () => Promise<R[]>,
    ) {
      const found = await cache.page(userId, read);
      return { ...found, answers: found.snapshots.map((snapshot) => render(snapshot, OWNER)) };
    },
    forget: (id: number) => {
      freshness.forget(id);
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`PlaylistCache on ${dialect}`, () => {
    let database: TestDatabase;
    /** This instance, whose cache is tested, and another one on the same database. */
    let here: Instance;
    let there: Instance;
    let owner: number;
    let stranger: number;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      here = openInstance(database.url);
      await migrateToLatest(here.db);
      await seedDemoCatalog(here.db);
      there = openInstance(database.url);
      owner = await addUser(here.db, 'owner');
      stranger = await addUser(here.db, 'stranger');
    });
    afterAll(async () => {
      await there.db.close();
      await here.db.close();
      await database.drop();
    });

    const newCache = (reads?: AnswerReads, maxBytes = 1024 * 1024) => answers(here.db, maxBytes, reads);
    const page = (cache: ReturnType<typeof newCache>, limit = 100) =>
      cache.page(owner, () => pageOfPlaylists(here.db.kysely, owner, limit, 0));

    it('reads a playlist once, then answers it from memory, to its owner only', async () => {
      const cache = newCache();
      const id = await addPlaylist(here.db, owner, 'Kept', [1, 2, 3]);
      const first = await traced(here, () => cache.playlist(owner, id));
      expect(readSongs(first.statements)).toBe(true);
      expect(parsed(first.value)).toMatchObject({ id, name: 'Kept', songs: [{ id: 1 }, { id: 2 }, { id: 3 }] });

      const again = await traced(here, () => cache.playlist(owner, id));
      expect(readSongs(again.statements)).toBe(false);
      expect(again.value?.body).toEqual(first.value?.body);
      expect(again.value?.etag).toBe(first.value?.etag);

      // Another user: no answer, by the same statements as for an id that was never used.
      const foreign = await traced(here, () => cache.playlist(stranger, id));
      const never = await traced(here, () => cache.playlist(stranger, Number.MAX_SAFE_INTEGER));
      expect(foreign.value).toBeUndefined();
      expect(never.value).toBeUndefined();
      expect(foreign.statements).toEqual(never.statements);
      expect(foreign.statements.length).toBeGreaterThan(0);
    });

    it("leaves the owner's entries as they were when another user asks for them", async () => {
      const user = await addUser(here.db, 'recency');
      const [a, b, c] = [
        await addPlaylist(here.db, user, 'Kept A', [1, 2]),
        await addPlaylist(here.db, user, 'Kept B', [1, 2]),
        await addPlaylist(here.db, user, 'Kept C', [1, 2]),
      ] as const;
      // Room for any two of the three entries, never for all three.
      const probe = newCache();
      const sizes = await Promise.all([a, b, c].map(async (id) => (await probe.playlist(user, id))!.body.length));
      const entry = Math.max(...sizes) + 200;
      const cache = newCache(undefined, 2 * entry + Math.floor(entry / 2));
      await cache.playlist(user, a);
      await cache.playlist(user, b);
      // A stranger asking for the older one does not make it recent: the owner's next read pushes it out.
      for (let i = 0; i < 3; i++) expect(await cache.playlist(stranger, a)).toBeUndefined();
      await cache.playlist(user, c);
      expect(readSongs((await traced(here, () => cache.playlist(user, b))).statements)).toBe(false);
      expect(readSongs((await traced(here, () => cache.playlist(user, a))).statements)).toBe(true);
    });

    it("keeps a page's playlists and reads only the page's ids the next time", async () => {
      const cache = newCache();
      const user = await addUser(here.db, 'pager');
      const ids = [
        await addPlaylist(here.db, user, 'One', [4]),
        await addPlaylist(here.db, user, 'Two', []),
        await addPlaylist(here.db, user, 'Three', [5, 6]),
      ];
      // A first single read, so that the cache has looked at the database's changes (see the test of a first look).
      await cache.playlist(user, ids[0]!);
      const read = () => cache.page(user, () => pageOfPlaylists(here.db.kysely, user, 10, 0));
      const first = await traced(here, read);
      expect(first.value.rows.map((row) => row.id)).toEqual(ids);
      expect(first.value.rows.map((row) => row.total)).toEqual([3, 3, 3]);
      expect(first.value.answers.map((answer) => parsed(answer).name)).toEqual(['One', 'Two', 'Three']);
      expect(readSongs(first.statements)).toBe(true);

      const again = await traced(here, read);
      // One statement on both databases: the page's ids with their versions, which confirm the kept answers (an
      // edit elsewhere changes them).
      expect(again.statements).toHaveLength(1);
      expect(again.value.answers.map((a) => a.etag)).toEqual(first.value.answers.map((a) => a.etag));
      // What a page kept answers a single read as well.
      expect(readSongs((await traced(here, () => cache.playlist(user, ids[2]!))).statements)).toBe(false);
      // A page of someone else's playlists never comes from this user's entries.
      const foreign = await cache.page(stranger, () => pageOfPlaylists(here.db.kysely, stranger, 10, 0));
      expect(foreign.answers).toEqual([]);
    });

    for (const by of ['this instance', 'another instance'] as const) {
      it(`forgets a playlist deleted by ${by}, and only that one`, async () => {
        const cache = newCache();
        const doomed = await addPlaylist(here.db, owner, 'Doomed', [7, 8]);
        const kept = await addPlaylist(here.db, owner, 'Kept too', [9]);
        await cache.playlist(owner, doomed);
        await cache.playlist(owner, kept);
        await page(cache);

        if (by === 'this instance') {
          await removePlaylist(here.db, owner, doomed);
          cache.forget(doomed);
        } else await removePlaylist(there.db, owner, doomed);

        expect(await cache.playlist(owner, doomed)).toBeUndefined();
        const pageIds = (await page(cache)).rows.map((row) => row.id);
        expect(pageIds).toContain(kept);
        expect(pageIds).not.toContain(doomed);
        const other = await traced(here, () => cache.playlist(owner, kept));
        expect(parsed(other.value).name).toBe('Kept too');
        expect(readSongs(other.statements)).toBe(false);
      });
    }

    it('does not keep what a read begun before a delete returns after it', async () => {
      const holdable = holdableReads(here.db);
      const cache = newCache(holdable.reads);
      const doomed = await addPlaylist(here.db, owner, 'Raced', [10, 11]);
      const other = await addPlaylist(here.db, owner, 'Bystander', [12]);
      await cache.playlist(owner, other);

      const hold = holdable.holdNext();
      const racing = cache.playlist(owner, doomed);
      await hold.reached;
      await removePlaylist(there.db, owner, doomed);
      // Another request looks at the database meanwhile: on SQLite it catches up with the delete here.
      expect(parsed(await cache.playlist(owner, other)).name).toBe('Bystander');
      hold.release();
      // The read began before the delete: it may answer what it read, but must not keep it.
      expect(parsed(await racing).name).toBe('Raced');
      expect(await cache.playlist(owner, doomed)).toBeUndefined();
    });

    it("does not keep a page's playlists read across a delete made here", async () => {
      const holdable = holdableReads(here.db);
      const cache = newCache(holdable.reads);
      const user = await addUser(here.db, 'racer');
      const doomed = await addPlaylist(here.db, user, 'Raced page', [13]);
      const other = await addPlaylist(here.db, owner, 'Onlooker', [14]);
      await cache.playlist(owner, other);

      const hold = holdable.holdNext();
      const racing = cache.page(user, () => pageOfPlaylists(here.db.kysely, user, 10, 0));
      await hold.reached;
      await removePlaylist(here.db, user, doomed);
      cache.forget(doomed);
      expect(parsed(await cache.playlist(owner, other)).name).toBe('Onlooker');
      hold.release();
      expect((await racing).answers.map((answer) => parsed(answer).id)).toEqual([doomed]);
      expect(await cache.playlist(user, doomed)).toBeUndefined();
    });

    for (const by of ['this instance', 'another instance'] as const) {
      it(`answers with the songs' new text after a catalog import through ${by}`, async () => {
        const cache = newCache();
        const user = await addUser(here.db, `listener-${by.replace(' ', '-')}`);
        const [song] = await here.db.kysely.selectFrom('songs').selectAll().where('id', '=', 14).execute();
        const id = await addPlaylist(here.db, user, 'Renamed', [14, 15]);
        const neighbour = await addPlaylist(here.db, user, 'Untouched', [16]);
        await cache.playlist(user, id);
        await cache.playlist(user, neighbour);
        await cache.page(user, () => pageOfPlaylists(here.db.kysely, user, 10, 0));

        const title = `${song!.title} (${by})`;
        await importCatalog((by === 'this instance' ? here : there).db, [{ id: 14, title, artist: song!.artist }]);

        // Every entry may answer differently after a catalog change: each is read again, once.
        const first = await traced(here, () => cache.playlist(user, neighbour));
        const second = await traced(here, () => cache.playlist(user, neighbour));
        expect([readSongs(first.statements), readSongs(second.statements)]).toEqual([true, false]);
        expect(parsed(second.value).name).toBe('Untouched');
        expect(parsed(await cache.playlist(user, id)).songs[0]!.title).toBe(title);
        const pageAfter = await cache.page(user, () => pageOfPlaylists(here.db.kysely, user, 10, 0));
        expect(parsed(pageAfter.answers[0]).songs[0]!.title).toBe(title);
      });
    }

    it('forgets what a page kept before its first look at the database, once a delete follows', async () => {
      const cache = newCache();
      const user = await addUser(here.db, 'first-look');
      const id = await addPlaylist(here.db, user, 'Early', [17]);
      expect((await cache.page(user, () => pageOfPlaylists(here.db.kysely, user, 10, 0))).answers).toHaveLength(1);
      await removePlaylist(there.db, user, id);
      expect(await cache.playlist(user, id)).toBeUndefined();
    });

    if (dialect === 'sqlite') {
      describe('catching up with the change log', () => {
        /** Deletes `count` new playlists of a user of their own through the other instance, in one statement. */
        async function deleteMany(count: number): Promise<void> {
          const user = await addUser(there.db, `bulk-${count}-${Date.now()}`);
          await sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
            INSERT INTO playlists (owner_id, name, created_at) SELECT ${user}, 'Bulk ' || i, 0 FROM n`.execute(
            there.db.kysely,
          );
          await sql`DELETE FROM playlists WHERE owner_id = ${user}`.execute(there.db.kysely);
        }

        it(`keeps the other entries after ${CHANGE_LOG_LENGTH} deletes, which the log still holds`, async () => {
          const cache = newCache();
          const id = await addPlaylist(here.db, owner, 'Survivor', [18]);
          await cache.playlist(owner, id);
          await deleteMany(CHANGE_LOG_LENGTH);
          const after = await traced(here, () => cache.playlist(owner, id));
          expect(after.statements.some((s) => /playlist_changes/.test(s))).toBe(true);
          expect(readSongs(after.statements)).toBe(false);
        });

        it('forgets everything once more deletes came than the log holds', async () => {
          const cache = newCache();
          const id = await addPlaylist(here.db, owner, 'Forgotten', [19]);
          await cache.playlist(owner, id);
          await deleteMany(CHANGE_LOG_LENGTH + 1);
          const after = await traced(here, () => cache.playlist(owner, id));
          expect(readSongs(after.statements)).toBe(true);
          expect(parsed(after.value).name).toBe('Forgotten');
        });

        it("holds as many deletes as the migration's trigger keeps", async () => {
          await deleteMany(CHANGE_LOG_LENGTH + 1);
          const { count } = await here.db.kysely
            .selectFrom('playlist_changes')
            .select((eb) => eb.fn.countAll<number>().as('count'))
            .executeTakeFirstOrThrow();
          expect(count).toBe(CHANGE_LOG_LENGTH);
        });

        it('reads nothing while nothing was committed', async () => {
          const cache = newCache();
          const id = await addPlaylist(here.db, owner, 'Quiet', [20]);
          await cache.playlist(owner, id);
          const again = await traced(here, () => cache.playlist(owner, id));
          expect(again.statements).toEqual([]);
          expect(parsed(again.value).name).toBe('Quiet');
        });
      });
    } else {
      it('confirms every single read with one statement, for the owner only', async () => {
        const cache = newCache();
        const id = await addPlaylist(here.db, owner, 'Confirmed', [21]);
        await cache.playlist(owner, id);
        const again = await traced(here, () => cache.playlist(owner, id));
        expect(again.statements).toHaveLength(1);
        expect(again.statements[0]).toMatch(/owner_id/);
        expect(parsed(again.value).name).toBe('Confirmed');
      });
    }
  });
}

async function addUser(db: Db, name: string): Promise<number> {
  const row = await db.kysely
    .insertInto('users')
    .values({ name, password_hash: 'not used', created_at: 0 })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function addPlaylist(db: Db, ownerId: number, name: string, songIds: readonly number[]): Promise<number> {
  const songs = songIds.map((id) => ({ id, title: '', artist: '', genre: '' }));
  return (await playlistStore(db).create(ownerId, name, songs, 0, 1_000_000)).snapshot.id;
}

async function removePlaylist(db: Db, ownerId: number, id: number): Promise<void> {
  expect(await playlistStore(db).remove(id, ownerId)).toBe(true);
}
