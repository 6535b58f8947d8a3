import { expect, it } from 'vitest';
import { describeEachDatabase, describeTwoInstances } from '../helpers/each-database.js';
import { gunzipSync } from 'node:zlib';
import { userService } from '../../src/users/user.service.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface Item {
  readonly folder?: number;
  readonly playlist?: number;
  readonly name: string;
  readonly owner?: string;
  readonly role?: string;
  readonly items?: Item[];
}
interface Tree {
  readonly version: number;
  readonly items: Item[];
}
interface Folder {
  readonly id: number;
  readonly name: string;
  readonly parent: number | null;
}
interface FeedItem {
  readonly id?: number;
  readonly library?: number;
  readonly change: string;
  readonly at: string;
}
interface FeedPage {
  readonly changes: FeedItem[];
  readonly next: string;
  readonly more: boolean;
}

const FOLDERS_MAX = 12;

/** A tree as names, nested: `Name` for a playlist, `[Name, [...]]` for a folder. */
type Shape = (string | [string, Shape])[];
const shape = (items: readonly Item[]): Shape =>
  items.map((item) => (item.folder !== undefined ? [item.name, shape(item.items ?? [])] : item.name));

describeEachDatabase(
  'folders and one’s own order of playlists on %s',
  { MIXTAPE_FOLDERS_MAX: String(FOLDERS_MAX) },
  (t) => {
    /** Users named `prefix-name`, each with the value of their `security` header. */
    const users = async (prefix: string, ...names: string[]) => {
      const made: Record<string, string> = {};
      for (const name of names) made[name] = await t.addUser(`${prefix}-${name}`);
      return made;
    };
    const tree = async (security: string): Promise<Tree> => {
      const response = await sendAs(t.app, 'GET', '/v3/library', security);
      expect(response.statusCode, response.body).toBe(200);
      return response.json<Tree>();
    };
    const folder = async (security: string, body: object, plural = ''): Promise<Folder> => {
      const response = await sendAs(t.app, 'POST', `/v3/folder${plural}`, security, body);
      expect(response.statusCode, response.body).toBe(200);
      return response.json<Folder>();
    };
    const patch = (security: string, id: number, body: object) =>
      sendAs(t.app, 'PATCH', `/v3/folder/${id}`, security, body);
    const place = (security: string, id: number, body: object, plural = '') =>
      sendAs(t.app, 'PUT', `/v3/playlist${plural}/${id}/place`, security, body);
    const placed = async (security: string, id: number, body: object) => {
      const response = await place(security, id, body);
      expect(response.statusCode, response.body).toBe(200);
    };
    const share = async (id: number, security: string, user: string, role = 'viewer') => {
      const response = await sendAs(t.app, 'PUT', `/v3/playlist/${id}/members/${user}`, security, { role });
      expect(response.statusCode, response.body).toBe(200);
    };

    it('makes, renames, moves and nests folders, and files playlists in them, in the caller’s order', async () => {
      const u = await users('tree', 'ann');
      const ann = u.ann!;
      const empty = await tree(ann);
      expect(empty).toEqual({ version: 0, items: [] });
      const focus = await createPlaylist(t.app, ann, 'Focus', [1]);
      const run = await createPlaylist(t.app, ann, 'Run', [2]);
      expect(shape((await tree(ann)).items)).toEqual(['Focus', 'Run']);

      const work = await folder(ann, { name: 'Work' });
      expect(work).toEqual({ id: expect.any(Number) as number, name: 'Work', parent: null });
      // A new folder goes at the end of the top level, after the playlists not filed yet.
      expect(shape((await tree(ann)).items)).toEqual(['Focus', 'Run', ['Work', []]]);
      const deep = await folder(ann, { name: 'Deep', parent: work.id }, 's');
      expect(deep.parent).toBe(work.id);
      await placed(ann, focus.id, { folder: work.id });
      await placed(ann, run.id, { folder: work.id, before: { folder: deep.id } });
      expect(shape((await tree(ann)).items)).toEqual([['Work', ['Run', ['Deep', []], 'Focus']]]);

      // Moved to the top level, before Work; renamed; moved after an item.
      const up = await patch(ann, deep.id, { parent: null, before: { folder: work.id } });
      expect(up.statusCode, up.body).toBe(200);
      expect(up.json()).toEqual({ id: deep.id, name: 'Deep', parent: null });
      const renamed = await sendAs(t.app, 'PATCH', `/v3/folders/${deep.id}`, ann, { name: 'Deep work' });
      expect(renamed.json()).toEqual({ id: deep.id, name: 'Deep work', parent: null });
      expect(shape((await tree(ann)).items)).toEqual([
        ['Deep work', []],
        ['Work', ['Run', 'Focus']],
      ]);
      const after = await patch(ann, deep.id, { after: { folder: work.id } });
      expect(after.statusCode, after.body).toBe(200);
      await placed(ann, run.id, { folder: null, before: { folder: work.id } });
      const now = await tree(ann);
      expect(shape(now.items)).toEqual(['Run', ['Work', ['Focus']], ['Deep work', []]]);
      expect(now.items[1]).toEqual({
        folder: work.id,
        name: 'Work',
        items: [{ playlist: focus.id, name: 'Focus' }],
      });
    });

    it('removes a folder only: what it held takes its place, in the same order', async () => {
      const u = await users('dissolve', 'bo');
      const bo = u.bo!;
      const [a, b, c] = [
        await createPlaylist(t.app, bo, 'A', []),
        await createPlaylist(t.app, bo, 'B', []),
        await createPlaylist(t.app, bo, 'C', []),
      ];
      const outer = await folder(bo, { name: 'Outer' });
      const inner = await folder(bo, { name: 'Inner', parent: outer.id });
      const last = await folder(bo, { name: 'Last', parent: outer.id });
      const middle = await folder(bo, { name: 'Middle', parent: inner.id });
      await placed(bo, a.id, { folder: inner.id });
      await placed(bo, b.id, { folder: inner.id, before: { playlist: a.id } });
      await placed(bo, c.id, { folder: outer.id, after: { folder: last.id } });
      expect(shape((await tree(bo)).items)).toEqual([
        ['Outer', [['Inner', [['Middle', []], 'B', 'A']], ['Last', []], 'C']],
      ]);

      const removed = await sendAs(t.app, 'DELETE', `/v3/folder/${inner.id}`, bo);
      expect(removed.statusCode, removed.body).toBe(200);
      expect(removed.body).toBe('');
      expect(shape((await tree(bo)).items)).toEqual([['Outer', [['Middle', []], 'B', 'A', ['Last', []], 'C']]]);
      // The middle folder is in Outer now; a playlist filed there again goes to its end.
      await placed(bo, a.id, { folder: middle.id });
      expect(await sendAs(t.app, 'DELETE', `/v3/folders/${outer.id}`, bo)).toHaveProperty('statusCode', 200);
      expect(shape((await tree(bo)).items)).toEqual([['Middle', ['A']], 'B', ['Last', []], 'C']);
      expect(expectError(await sendAs(t.app, 'DELETE', `/v3/folder/${outer.id}`, bo), 404).errormsg).toBe(
        'No such folder.',
      );
    });

    it('lets two members file one shared playlist each in their own place, with its owner and their role', async () => {
      const u = await users('shared', 'cy', 'di', 'ed');
      const mine = await createPlaylist(t.app, u.cy!, 'Mix', [1, 2]);
      await share(mine.id, u.cy!, 'shared-di', 'editor');
      await share(mine.id, u.cy!, 'shared-ed', 'viewer');
      const diFolder = await folder(u.di!, { name: 'From friends' });
      await placed(u.di!, mine.id, { folder: diFolder.id });
      const edOwn = await createPlaylist(t.app, u.ed!, 'Own', []);
      await placed(u.ed!, mine.id, { folder: null, before: { playlist: edOwn.id } });

      expect((await tree(u.di!)).items).toEqual([
        {
          folder: diFolder.id,
          name: 'From friends',
          items: [{ playlist: mine.id, name: 'Mix', owner: 'shared-cy', role: 'editor' }],
        },
      ]);
      expect((await tree(u.ed!)).items).toEqual([
        { playlist: mine.id, name: 'Mix', owner: 'shared-cy', role: 'viewer' },
        { playlist: edOwn.id, name: 'Own' },
      ]);
      expect((await tree(u.cy!)).items).toEqual([{ playlist: mine.id, name: 'Mix' }]);
      // Another user's folder is no folder of theirs.
      expect(expectError(await place(u.ed!, mine.id, { folder: diFolder.id }), 404).errormsg).toMatch(/"folder"/);
      expect(expectError(await patch(u.ed!, diFolder.id, { name: 'Mine now' }), 404).errormsg).toBe('No such folder.');
    });

    it('takes a deleted or unshared playlist out of trees, and brings a restored one back at the end of the top level', async () => {
      const u = await users('leave', 'fay', 'gus');
      const kept = await createPlaylist(t.app, u.fay!, 'Kept', []);
      const gone = await createPlaylist(t.app, u.fay!, 'Gone', [1]);
      const box = await folder(u.fay!, { name: 'Box' });
      const gusBox = await folder(u.gus!, { name: 'Gus box' });
      await share(gone.id, u.fay!, 'leave-gus');
      await share(kept.id, u.fay!, 'leave-gus');
      await placed(u.fay!, gone.id, { folder: box.id });
      await placed(u.gus!, gone.id, { folder: gusBox.id });
      await placed(u.gus!, kept.id, { folder: gusBox.id });
      const before = await tree(u.gus!);

      expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${gone.id}`, u.fay!)).statusCode).toBe(200);
      expect(shape((await tree(u.fay!)).items)).toEqual(['Kept', ['Box', []]]);
      const without = await tree(u.gus!);
      expect(shape(without.items)).toEqual([['Gus box', ['Kept']]]);
      expect(without.version).not.toBe(before.version);
      // Deleted: 410, as every playlist route answers.
      expect(expectError(await place(u.gus!, gone.id, { folder: null }), 410).errormsg).toMatch(/deleted/i);

      const restored = await sendAs(t.app, 'POST', `/v3/playlist/${gone.id}/restore`, u.fay!, { version: 1 });
      expect(restored.statusCode, restored.body).toBe(200);
      expect(shape((await tree(u.fay!)).items)).toEqual(['Kept', ['Box', []], 'Gone']);
      expect(shape((await tree(u.gus!)).items)).toEqual([['Gus box', ['Kept']], 'Gone']);

      const unshared = await sendAs(t.app, 'DELETE', `/v3/playlist/${kept.id}/members/leave-gus`, u.fay!);
      expect(unshared.statusCode, unshared.body).toBe(200);
      expect(shape((await tree(u.gus!)).items)).toEqual([['Gus box', []], 'Gone']);
      expect(expectError(await place(u.gus!, kept.id, { folder: null }), 404).errormsg).toBe('No such playlist.');
      // Shared again: it comes back at the end of the top level, not where it was filed before.
      await share(kept.id, u.fay!, 'leave-gus');
      expect(shape((await tree(u.gus!)).items)).toEqual([['Gus box', []], 'Gone', 'Kept']);
    });

    it('lists the playlists filed in a folder in the caller’s order, with search, pages and the total', async () => {
      const u = await users('list', 'hal', 'ida');
      const hal = u.hal!;
      const names = ['Blue one', 'Red one', 'Blue two', 'Green', 'Blue three'];
      const made = [];
      for (const name of names) made.push(await createPlaylist(t.app, hal, name, [1]));
      const theirs = await createPlaylist(t.app, u.ida!, 'Blue theirs', [2]);
      await share(theirs.id, u.ida!, 'list-hal');
      const box = await folder(hal, { name: 'Box' });
      // Filed in reverse order, each at the start; the shared one in the middle.
      for (const playlist of made.slice(0, 4)) {
        const first = (await tree(hal)).items.find((item) => item.folder === box.id)!.items![0];
        await placed(hal, playlist.id, {
          folder: box.id,
          ...(first === undefined ? {} : { before: { playlist: first.playlist } }),
        });
      }
      await placed(hal, theirs.id, { folder: box.id, after: { playlist: made[2]!.id } });
      const list = async (query: string) => {
        const response = await sendAs(t.app, 'GET', `/v3/playlist?${query}`, hal);
        expect(response.statusCode, response.body).toBe(200);
        return {
          names: response
            .json<{ name: string; owner?: string }[]>()
            .map((p) => (p.owner ? `${p.name} (${p.owner})` : p.name)),
          total: response.headers['x-total-count'],
          link: response.headers.link,
        };
      };
      expect(await list(`folder=${box.id}`)).toMatchObject({
        names: ['Green', 'Blue two', 'Blue theirs (list-ida)', 'Red one', 'Blue one'],
        total: '5',
      });
      const page = await list(`folder=${box.id}&limit=2&offset=1`);
      expect(page).toMatchObject({ names: ['Blue two', 'Blue theirs (list-ida)'], total: '5' });
      expect(page.link).toContain(`folder=${box.id}`);
      expect(await list(`folder=${box.id}&search=blue`)).toMatchObject({
        names: ['Blue two', 'Blue theirs (list-ida)', 'Blue one'],
        total: '3',
      });
      expect(await list(`folder=${box.id}&search=blue&limit=1&offset=1`)).toMatchObject({
        names: ['Blue theirs (list-ida)'],
        total: '3',
      });
      expect(await list(`folder=${box.id}&offset=10`)).toMatchObject({ names: [], total: '5' });
      // The top level: what is not filed elsewhere; `scope` does not apply.
      expect(await list('folder=top&scope=own')).toMatchObject({ names: ['Blue three'], total: '1' });
      // Without `folder`, the list is as before.
      expect((await list('scope=all')).names).toHaveLength(6);

      expect(expectError(await sendAs(t.app, 'GET', '/v3/playlist?folder=abc', hal), 400).errormsg).toMatch(
        /"folder" query parameter/,
      );
      const other = await folder(u.ida!, { name: 'Not yours' });
      expect(expectError(await sendAs(t.app, 'GET', `/v3/playlists?folder=${other.id}`, hal), 404).errormsg).toBe(
        'No such folder.',
      );
    });

    it('answers each failure with its status and a message naming the field or the rule, and writes nothing', async () => {
      const u = await users('refused', 'jo', 'kay');
      const jo = u.jo!;
      const mine = await createPlaylist(t.app, jo, 'Mine', []);
      const strangers = await createPlaylist(t.app, u.kay!, 'Theirs', []);
      const top = await folder(jo, { name: 'Top' });
      const chain = [top];
      for (let depth = 2; depth <= 8; depth += 1) {
        chain.push(await folder(jo, { name: `Depth ${depth}`, parent: chain.at(-1)!.id }));
      }
      const side = await folder(jo, { name: 'Side' });
      const child = await folder(jo, { name: 'Child', parent: side.id });
      const start = await tree(jo);
      const refused = (response: Awaited<ReturnType<typeof sendAs>>, status: number, message: RegExp) => {
        expect(expectError(response, status).errormsg).toMatch(message);
      };

      // 400: malformed, naming the field.
      refused(await sendAs(t.app, 'POST', '/v3/folder', jo, {}), 400, /"name" is required/);
      refused(await sendAs(t.app, 'POST', '/v3/folder', jo, { name: '  ' }), 400, /"name"/);
      refused(await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'x', parent: 'a' }), 400, /"parent"/);
      refused(await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'x', after: { song: 1 } }), 400, /"after"/);
      refused(
        await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'x', after: {} }),
        400,
        /"after" must name one item/,
      );
      refused(
        await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'x', after: { folder: 1 }, before: { folder: 1 } }),
        400,
        /"after" or "before", not both/,
      );
      refused(await patch(jo, side.id, {}), 400, /"name", "parent", "after" or "before"/);
      refused(await place(jo, mine.id, {}), 400, /"folder" is required/);
      refused(await place(jo, mine.id, { folder: 0 }), 400, /"folder"/);
      refused(await sendAs(t.app, 'PATCH', '/v3/folder/abc', jo, { name: 'x' }), 400, /folder-id/);

      // 404: another user's playlist or no folder of theirs; 409: a loop, too deep, too many; 422: an item elsewhere.
      refused(await place(jo, strangers.id, { folder: null }), 404, /^No such playlist\.$/);
      refused(await place(jo, mine.id, { folder: 999_999 }), 404, /No such folder\. "folder"/);
      refused(await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'x', parent: 999_999 }), 404, /"parent"/);
      refused(await patch(jo, 999_999, { name: 'x' }), 404, /^No such folder\.$/);
      refused(await patch(jo, side.id, { parent: side.id }), 409, /into itself or into a folder inside it/);
      refused(await patch(jo, side.id, { parent: child.id }), 409, /into itself or into a folder inside it/);
      refused(
        await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'Depth 9', parent: chain.at(-1)!.id }),
        409,
        /at most 8 deep/,
      );
      refused(await patch(jo, side.id, { parent: chain.at(-2)!.id }), 409, /at most 8 deep/);
      refused(await place(jo, mine.id, { folder: side.id, after: { folder: top.id } }), 422, /"after": folder/);
      refused(await place(jo, mine.id, { folder: null, before: { playlist: strangers.id } }), 422, /"before"/);
      refused(await place(jo, mine.id, { folder: null, before: { playlist: mine.id } }), 422, /itself/);
      refused(
        await patch(jo, side.id, { after: { folder: child.id } }),
        422,
        /"after": folder \d+ is not an item of the top level/,
      );

      // Nothing written: the tree and its version are as they were.
      expect(await tree(jo)).toEqual(start);
      // Up to the limit, then 409; a failure writes nothing there either.
      for (let n = start.items.length; n < 100; n += 1) {
        const response = await sendAs(t.app, 'POST', '/v3/folder', jo, { name: `More ${n}` });
        if (response.statusCode === 409) {
          expect(expectError(response, 409).errormsg).toMatch(new RegExp(`${FOLDERS_MAX} folders`));
          break;
        }
        expect(response.statusCode, response.body).toBe(200);
      }
      const full = await tree(jo);
      refused(await sendAs(t.app, 'POST', '/v3/folder', jo, { name: 'One more' }), 409, /the most one user may have/);
      expect(await tree(jo)).toEqual(full);
    });

    it('answers 304 to a tree unchanged, and changes the version on a rename of a playlist and on a share', async () => {
      const u = await users('version', 'lu', 'max');
      const mine = await createPlaylist(t.app, u.lu!, 'Name', [1]);
      const first = await sendAs(t.app, 'GET', '/v3/library', u.lu!);
      const etag = first.headers.etag as string;
      expect(etag).toMatch(/^"library-\d+-\d+"$/);
      const again = await sendAs(t.app, 'GET', '/v3/library', u.lu!, undefined, { 'if-none-match': etag });
      expect(again.statusCode).toBe(304);

      const renamed = await sendAs(t.app, 'PATCH', `/v3/playlist/${mine.id}`, u.lu!, { name: 'New name' });
      expect(renamed.statusCode, renamed.body).toBe(200);
      const afterRename = await sendAs(t.app, 'GET', '/v3/library', u.lu!, undefined, { 'if-none-match': etag });
      expect(afterRename.statusCode).toBe(200);
      expect(afterRename.json<Tree>().items).toEqual([{ playlist: mine.id, name: 'New name' }]);
      // An edit of the songs only changes nothing the tree shows.
      const songs = await sendAs(t.app, 'PATCH', `/v3/playlist/${mine.id}`, u.lu!, { songIds: [1, 2] });
      expect(songs.statusCode, songs.body).toBe(200);
      expect((await tree(u.lu!)).version).toBe(afterRename.json<Tree>().version);

      const maxBefore = await tree(u.max!);
      await share(mine.id, u.lu!, 'version-max');
      const maxAfter = await tree(u.max!);
      expect(maxAfter.version).not.toBe(maxBefore.version);
      expect(maxAfter.items).toEqual([{ playlist: mine.id, name: 'New name', owner: 'version-lu', role: 'viewer' }]);
      // A rename by the owner changes the member's tree too.
      await sendAs(t.app, 'PATCH', `/v3/playlist/${mine.id}`, u.lu!, { name: 'Newer' });
      expect((await tree(u.max!)).version).not.toBe(maxAfter.version);
    });

    it('takes a removed owner’s playlists out of their members’ trees, with a new version', async () => {
      const u = await users('gone', 'own', 'mem');
      const theirs = await createPlaylist(t.app, u.own!, 'Theirs', [1]);
      const mine = await createPlaylist(t.app, u.mem!, 'Mine', [1]);
      await share(theirs.id, u.own!, 'gone-mem');
      const before = await tree(u.mem!);
      expect(before.items.map((item) => item.playlist)).toEqual([mine.id, theirs.id]);
      expect(await userService(t.db).remove('gone-own')).toBe(true);
      const after = await tree(u.mem!);
      expect(after.version).not.toBe(before.version);
      expect(after.items).toEqual([{ playlist: mine.id, name: 'Mine' }]);
    });

    it('tells the caller’s feed with types=library, one item with the latest version', async () => {
      const u = await users('feed', 'ned');
      const ned = u.ned!;
      await createPlaylist(t.app, ned, 'One', []);
      const start = (await sendAs(t.app, 'GET', '/v3/changes?types=library&since=now', ned)).json<FeedPage>();
      const box = await folder(ned, { name: 'Box' });
      await patch(ned, box.id, { name: 'Box 2' });
      await patch(ned, box.id, { name: 'Box 3' });
      const { version } = await tree(ned);
      // On PostgreSQL the feed lists a commit once no older transaction is open anywhere on the server: wait by time.
      const deadline = Date.now() + 15_000;
      let items: FeedItem[] = [];
      let token = start.next;
      while (Date.now() < deadline) {
        const page = (
          await sendAs(t.app, 'GET', `/v3/changes?types=library,playlist&since=${encodeURIComponent(token)}`, ned)
        ).json<FeedPage>();
        items = [...items, ...page.changes];
        token = page.next;
        if (items.some((item) => item.change === 'library' && item.library === version)) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const library = items.filter((item) => item.change === 'library');
      expect(library.at(-1)).toEqual({ library: version, change: 'library', at: expect.any(String) as string });
      expect(library.length).toBe(1);
      // Without `types=library`, no such item.
      const plain = (
        await sendAs(t.app, 'GET', `/v3/changes?since=${encodeURIComponent(start.next)}`, ned)
      ).json<FeedPage>();
      expect(plain.changes.filter((item) => item.change === 'library')).toEqual([]);
    });

    it('wakes a feed that waits with types=library when the caller’s tree changes', async () => {
      const u = await users('wake', 'oz');
      const first = (await sendAs(t.app, 'GET', '/v3/changes?types=library', u.oz!)).json<FeedPage>();
      const since = encodeURIComponent(first.next);
      const waiting = sendAs(t.app, 'GET', `/v3/changes?types=library&wait=30&since=${since}`, u.oz!);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = Date.now();
      await folder(u.oz!, { name: 'Wake' });
      const answer = await waiting;
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json<FeedPage>().changes).toEqual([
        { library: (await tree(u.oz!)).version, change: 'library', at: expect.any(String) as string },
      ]);
      expect(Date.now() - started).toBeLessThan(20_000);
    });

    it('gives a folder’s items fresh keys when moves into one gap make them long, keeping their order', async () => {
      const u = await users('keys', 'quin');
      const quin = u.quin!;
      const box = await folder(quin, { name: 'Box' });
      const [a, b, x, y] = [
        await createPlaylist(t.app, quin, 'A', []),
        await createPlaylist(t.app, quin, 'B', []),
        await createPlaylist(t.app, quin, 'X', []),
        await createPlaylist(t.app, quin, 'Y', []),
      ];
      await placed(quin, a.id, { folder: box.id });
      await placed(quin, b.id, { folder: box.id });
      // Each move goes right after A, before the one moved last: the gap halves every time.
      for (let i = 0; i < 320; i += 1)
        await placed(quin, (i % 2 === 0 ? x : y).id, { folder: box.id, after: { playlist: a.id } });
      expect(shape((await tree(quin)).items)).toEqual([['Box', ['A', 'Y', 'X', 'B']]]);
      const keys = await t.db.kysely
        .selectFrom('library_placements')
        .select('order_key')
        .where('folder_id', '=', box.id)
        .execute();
      expect(Math.max(...keys.map((row) => row.order_key.length))).toBeLessThanOrEqual(48);
    });

    it('keeps an item in one place and makes no loop under many concurrent moves', async () => {
      const u = await users('race', 'pia');
      const pia = u.pia!;
      const playlist = await createPlaylist(t.app, pia, 'Moved', []);
      const folders: Folder[] = [];
      for (const name of ['A', 'B', 'C', 'D']) folders.push(await folder(pia, { name }));
      const moves = Array.from({ length: 20 }, (_, i) => {
        const target = folders[i % folders.length]!;
        const other = folders[(i + 1) % folders.length]!;
        return i % 2 === 0
          ? place(pia, playlist.id, { folder: i % 5 === 0 ? null : target.id })
          : patch(pia, target.id, { parent: other.id });
      });
      const answers = await Promise.all(moves);
      for (const answer of answers) expect([200, 409]).toContain(answer.statusCode);
      const final = await tree(pia);
      const seen: number[] = [];
      const folderIds: number[] = [];
      const walk = (items: readonly Item[], depth: number) => {
        expect(depth).toBeLessThanOrEqual(8);
        for (const item of items) {
          if (item.playlist !== undefined) seen.push(item.playlist);
          else {
            folderIds.push(item.folder!);
            walk(item.items ?? [], depth + 1);
          }
        }
      };
      walk(final.items, 0);
      // Each item exactly once: no loop hid a folder, and the playlist is in one place.
      expect(seen).toEqual([playlist.id]);
      expect(folderIds.sort((a, b) => a - b)).toEqual(folders.map((f) => f.id).sort((a, b) => a - b));
    });
  },
);

describeTwoInstances('one user’s folders moved on two instances at once, on %s', (apps) => {
  it('never makes a loop nor files a playlist twice', async () => {
    const pia = await apps.one.addUser();
    const made = async (name: string, parent: number | null = null) => {
      const response = await sendAs(apps.one.app, 'POST', '/v3/folder', pia, { name, parent });
      expect(response.statusCode, response.body).toBe(200);
      return response.json<Folder>().id;
    };
    const [a, b, c] = [await made('A'), await made('B'), await made('C')];
    const playlist = await createPlaylist(apps.two.app, pia, 'Moved', []);
    // Each folder into the next, and the playlist into each, half on each instance: a loop would need them all.
    const moves = [
      [a, b],
      [b, c],
      [c, a],
    ].flatMap(([folder, parent], i) => [
      sendAs((i % 2 === 0 ? apps.one : apps.two).app, 'PATCH', `/v3/folder/${folder}`, pia, { parent }),
      sendAs((i % 2 === 0 ? apps.two : apps.one).app, 'PUT', `/v3/playlist/${playlist.id}/place`, pia, {
        folder: folder,
      }),
    ]);
    const statuses = (await Promise.all(moves)).map((answer) => answer.statusCode);
    expect(statuses.filter((status) => status === 409).length).toBeGreaterThanOrEqual(1);
    for (const status of statuses) expect([200, 409]).toContain(status);
    const tree = (await sendAs(apps.two.app, 'GET', '/v3/library', pia)).json<Tree>();
    const seen: string[] = [];
    const walk = (items: readonly Item[]) => {
      for (const item of items) {
        seen.push(item.folder !== undefined ? `folder ${item.folder}` : `playlist ${item.playlist!}`);
        walk(item.items ?? []);
      }
    };
    walk(tree.items);
    expect(seen.sort()).toEqual([`folder ${a}`, `folder ${b}`, `folder ${c}`, `playlist ${playlist.id}`].sort());
  });
});

describeTwoInstances('one user’s tree read on one instance and changed on the other, on %s', (apps) => {
  it('answers the current tree every time, as it is or compressed, whichever instance wrote last', async () => {
    const kai = await apps.one.addUser();
    const read = async (coding?: string) => {
      const headers: Record<string, string> = coding === undefined ? {} : { 'accept-encoding': coding };
      const answer = await sendAs(apps.one.app, 'GET', '/v3/library', kai, undefined, headers);
      expect(answer.statusCode, answer.body).toBe(200);
      const body = answer.headers['content-encoding'] === 'gzip' ? gunzipSync(answer.rawPayload) : answer.rawPayload;
      return {
        tree: JSON.parse(body.toString()) as Tree,
        etag: answer.headers.etag as string,
        coding: answer.headers['content-encoding'],
      };
    };
    // Twenty folders of long names: a tree large enough to be compressed.
    const long = (name: string) => `${name} ${'x'.repeat(150)}`;
    const folders: number[] = [];
    for (let i = 0; i < 20; i++) {
      const made = await sendAs(apps.two.app, 'POST', '/v3/folder', kai, { name: long(`Folder ${i}`) });
      expect(made.statusCode, made.body).toBe(200);
      folders.push(made.json<Folder>().id);
    }
    const first = await read();
    const zipped = await read('gzip');
    expect(zipped.coding).toBe('gzip');
    expect(zipped.etag).toBe(first.etag.replace(/"$/, '-gzip"'));
    expect(zipped.tree).toEqual(first.tree);
    expect((await read()).tree).toEqual(first.tree);

    const renamed = await sendAs(apps.two.app, 'PATCH', `/v3/folder/${folders[0]!}`, kai, { name: long('Renamed') });
    expect(renamed.statusCode, renamed.body).toBe(200);
    for (const coding of [undefined, 'gzip']) {
      const now = await read(coding);
      expect(now.tree.version).not.toBe(first.tree.version);
      expect(now.tree.items.map((item) => item.name)).toEqual([
        long('Renamed'),
        ...folders.slice(1).map((_id, i) => long(`Folder ${i + 1}`)),
      ]);
    }
    const notModified = await sendAs(apps.one.app, 'GET', '/v3/library', kai, undefined, {
      'if-none-match': first.etag,
    });
    expect(notModified.statusCode).toBe(200);
  });
});
