import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../../test/helpers/databases.js';
import { importCatalog, seedDemoCatalog } from '../catalog/catalog.service.js';
import { loadConfig } from '../config.js';
import { openDatabase, type Db } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { ApiError } from '../http/errors.js';
import { deleteMember, putMember } from '../sharing/members.repository.js';
import type { MemberRole } from '../domain/roles.js';
import { Freshness } from './freshness.js';
import { playlistAccess, type CurrentGrant, type Grant, type Permission } from './playlist.access.js';
import { playlistStore } from './write/store.js';

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

/** The grant, or the status of the refusal. */
async function outcome(run: () => Promise<Grant>): Promise<Grant | number> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.statusCode;
  }
}

for (const dialect of DIALECTS) {
  describe(`playlist access on ${dialect}`, () => {
    let database: TestDatabase;
    /** This instance, whose access is tested, and another one on the same database. */
    let here: Instance;
    let there: Instance;
    let owner: number;
    let editor: number;
    let viewer: number;
    let stranger: number;

    beforeAll(async () => {
      database = await createTestDatabase(dialect);
      here = openInstance(database.url);
      await migrateToLatest(here.db);
      await seedDemoCatalog(here.db);
      there = openInstance(database.url);
      owner = await addUser(here.db, 'owner');
      editor = await addUser(here.db, 'editor');
      viewer = await addUser(here.db, 'viewer');
      stranger = await addUser(here.db, 'stranger');
    });
    afterAll(async () => {
      await there.db.close();
      await here.db.close();
      await database.drop();
    });

    function newAccess() {
      const freshness = new Freshness(here.db);
      const access = playlistAccess(here.db, freshness);
      return {
        freshness,
        ask: (userId: number, id: number, permission: Permission = 'read') =>
          outcome(() => access.requireAccess(userId, id, permission)),
        /** The grant to read, with the versions its answer is at. */
        current: (userId: number, id: number) => outcome(() => access.requireCurrent(userId, id)),
        history: (userId: number, id: number, permission: 'read' | 'edit') =>
          access.requireHistoryAccess(userId, id, permission).catch((error: unknown) => {
            if (error instanceof ApiError) return error.statusCode;
            throw error;
          }),
      };
    }

    /** A playlist of the owner's shared with the editor and the viewer. */
    async function sharedPlaylist(name: string): Promise<number> {
      const id = await addPlaylist(here.db, owner, name);
      await share(here.db, id, editor, 'editor');
      await share(here.db, id, viewer, 'viewer');
      return id;
    }

    it('grants each role what the policy allows, with the playlist and catalog versions', async () => {
      const access = newAccess();
      const id = await sharedPlaylist('Granted');
      const catalog = await catalogVersionOf(here.db);
      const versions = { id, version: 1, catalogVersion: catalog };
      expect(await access.current(owner, id)).toEqual({
        ...versions,
        ownerId: owner,
        role: 'owner',
        ownerName: undefined,
      });
      const asEditor = { ...versions, ownerId: owner, role: 'editor', ownerName: 'owner' };
      expect(await access.current(editor, id)).toEqual(asEditor);
      expect(await access.ask(owner, id, 'own')).toMatchObject({ role: 'owner' });
      expect(await access.ask(editor, id, 'edit')).toMatchObject({ role: 'editor', ownerName: 'owner' });
      expect(await access.ask(editor, id, 'own')).toBe(403);
      expect(await access.ask(viewer, id, 'read')).toMatchObject({ role: 'viewer', ownerName: 'owner' });
      expect(await access.ask(viewer, id, 'edit')).toBe(403);
    });

    it('answers a stranger 404 by the same statements as for a playlist that was never there', async () => {
      const access = newAccess();
      const id = await sharedPlaylist('Private');
      const traced = async (userId: number, playlist: number) => {
        const before = here.statements.length;
        const answer = await access.ask(userId, playlist);
        return { answer, statements: here.statements.slice(before) };
      };
      // The owner first, so that the stranger's requests find the change log caught up with.
      await access.ask(owner, id);
      const foreign = await traced(stranger, id);
      const never = await traced(stranger, Number.MAX_SAFE_INTEGER);
      expect([foreign.answer, never.answer]).toEqual([404, 404]);
      expect(foreign.statements).toEqual(never.statements);
      // Asking again remembers nothing of a stranger.
      expect(await access.ask(stranger, id)).toBe(404);
    });

    it('answers 410 to the owner and the members of a deleted playlist, and 404 to others', async () => {
      const access = newAccess();
      const id = await sharedPlaylist('Deleted');
      // Seen before its delete, so that a remembered standing must be forgotten too.
      for (const user of [owner, editor, viewer]) expect(await access.ask(user, id)).toMatchObject({ id });
      expect(await playlistStore(there.db).remove(id, owner)).toBe(true);
      // (A remembered owner asking to write is known on SQLite without a catch-up: the write that follows refuses.)
      expect(await access.current(owner, id)).toBe(410);
      expect(await access.ask(editor, id)).toBe(410);
      expect(await access.ask(stranger, id)).toBe(404);
      // Its history: the owner's still, as deleted; a member's no more.
      expect(await access.history(owner, id, 'edit')).toEqual({ deleted: true, grant: undefined });
      expect(await access.history(editor, id, 'read')).toBe(410);
      expect(await access.history(stranger, id, 'read')).toBe(404);
    });

    it("grants the playlist's current version after an edit through another instance", async () => {
      const access = newAccess();
      const id = await sharedPlaylist('Edited');
      expect(await access.current(owner, id)).toMatchObject({ version: 1 });
      expect(await access.current(editor, id)).toMatchObject({ version: 1 });
      await rename(there.db, id, owner, 'Edited again');
      expect(await access.current(owner, id)).toMatchObject({ version: 2 });
      expect(await access.current(editor, id)).toMatchObject({ version: 2 });
      await rename(here.db, id, editor, 'Edited here');
      expect(await access.current(viewer, id)).toMatchObject({ version: 3 });
      expect(await access.current(owner, id)).toMatchObject({ version: 3 });
    });

    it("grants the catalog's current version after an import through another instance", async () => {
      const access = newAccess();
      const id = await sharedPlaylist('Catalogued');
      const before = await access.current(owner, id);
      await importCatalog(there.db, [{ id: 1, title: `Renamed ${Date.now()}`, artist: 'Someone' }]);
      const after = await access.current(owner, id);
      expect(typeof before === 'object' && typeof after === 'object').toBe(true);
      expect((after as CurrentGrant).catalogVersion).toBe(await catalogVersionOf(here.db));
      expect((after as CurrentGrant).catalogVersion).toBeGreaterThan((before as CurrentGrant).catalogVersion);
    });

    it("takes a member's removal or new role at their next request", async () => {
      const access = newAccess();
      const id = await sharedPlaylist('Reshared');
      expect(await access.ask(editor, id, 'edit')).toMatchObject({ role: 'editor' });
      expect(await access.ask(viewer, id)).toMatchObject({ role: 'viewer' });
      await there.db.write(async (trx) => {
        await deleteMember(trx, id, viewer);
        await deleteMember(trx, id, editor);
        await putMember(trx, { playlistId: id, userId: editor, ownerId: owner, role: 'viewer', at: 0 });
      });
      expect(await access.ask(viewer, id)).toBe(404);
      expect(await access.ask(editor, id, 'edit')).toBe(403);
      expect(await access.ask(editor, id)).toMatchObject({ role: 'viewer' });
    });

    if (dialect === 'sqlite') {
      it('knows a caller seen before without a statement while nothing was committed', async () => {
        const access = newAccess();
        const id = await sharedPlaylist('Remembered');
        await access.ask(owner, id);
        await access.ask(editor, id);
        const before = here.statements.length;
        expect(await access.current(owner, id)).toMatchObject({ role: 'owner', version: 1 });
        expect(await access.current(editor, id)).toMatchObject({ role: 'editor', version: 1 });
        expect(here.statements.slice(before)).toEqual([]);
      });

      it("reads none of the change log for a remembered owner's write, and catches up for a read", async () => {
        const access = newAccess();
        const id = await sharedPlaylist('Owned');
        await access.current(owner, id);
        // Something committed elsewhere: the log has news.
        await addPlaylist(there.db, stranger, 'Elsewhere');
        const traced = async (run: () => Promise<unknown>) => {
          const before = here.statements.length;
          await run();
          return here.statements.slice(before);
        };
        expect(await traced(() => access.ask(owner, id, 'edit'))).toEqual([]);
        const read = await traced(() => access.current(owner, id));
        expect(read.some((s) => /playlist_changes/.test(s))).toBe(true);
        expect(read.some((s) => /owner_id/.test(s))).toBe(false);
      });

      it('reads again a playlist a write of this process forgot', async () => {
        const access = newAccess();
        const id = await sharedPlaylist('Forgotten here');
        await access.ask(owner, id);
        access.freshness.forget(id);
        const before = here.statements.length;
        await access.ask(owner, id);
        expect(here.statements.slice(before).some((s) => /owner_id/.test(s))).toBe(true);
      });
    } else {
      it('reads the access row at every request', async () => {
        const access = newAccess();
        const id = await sharedPlaylist('Read always');
        await access.ask(owner, id);
        const before = here.statements.length;
        await access.ask(owner, id);
        expect(here.statements.slice(before)).toHaveLength(1);
      });
    }
  });
}

async function catalogVersionOf(db: Db): Promise<number> {
  const row = await db.kysely.selectFrom('catalog_version').select('version').executeTakeFirstOrThrow();
  return row.version;
}

async function addUser(db: Db, name: string): Promise<number> {
  const row = await db.kysely
    .insertInto('users')
    .values({ name, password_hash: 'not used', created_at: 0 })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function addPlaylist(db: Db, ownerId: number, name: string): Promise<number> {
  const songs = [1, 2].map((id) => ({ id, title: '', artist: '', genre: '' }));
  return (await playlistStore(db).create(ownerId, name, songs, 0, 1_000_000)).snapshot.id;
}

async function share(db: Db, playlistId: number, userId: number, role: MemberRole): Promise<void> {
  const ownerId = (
    await db.kysely.selectFrom('playlists').select('owner_id').where('id', '=', playlistId).executeTakeFirstOrThrow()
  ).owner_id;
  await db.write((trx) => putMember(trx, { playlistId, userId, ownerId, role, at: 0 }));
}

async function rename(db: Db, id: number, byId: number, name: string): Promise<void> {
  const edited = await playlistStore(db).edit(id, byId, 'edit', (current) => ({
    name,
    slots: current.entries.map((e) => ({ songId: e.songId, entry: e.entry })),
    result: undefined,
  }));
  expect(edited).toBeDefined();
}
