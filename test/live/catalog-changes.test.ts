import { expect, it } from 'vitest';
import { importCatalog } from '../../src/catalog/catalog.service.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { renameWithCli } from '../helpers/live-data.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface Item {
  readonly id?: number;
  readonly catalog?: number;
  readonly change: string;
  readonly at: string;
}
interface Page {
  readonly changes: Item[];
  readonly next: string;
  readonly more: boolean;
}
interface Song {
  readonly id: number;
  readonly title: string;
  readonly genre: string;
}

const demoSong = async (t: { app: Parameters<typeof sendAs>[0] }, security: string, id: number) =>
  (await sendAs(t.app, 'GET', `/v3/song/${id}`, security)).json<Song & { artist: string; album: string }>();

describeEachDatabase('catalog items in the change feed and the songs changed since, on %s', (t, dialect) => {
  it('lists one catalog item per import that changed songs, only to feeds that ask for them', async () => {
    const alice = await t.addUser();
    await createPlaylist(t.app, alice, 'Mine', [1]);

    // The first answer says where the catalog stands, before the playlists.
    const first = await sendAs(t.app, 'GET', '/v3/changes?types=playlist,catalog', alice);
    expect(first.statusCode, first.body).toBe(200);
    const firstPage = first.json<Page>();
    const [head, ...rest] = firstPage.changes;
    expect(head).toEqual({
      catalog: expect.any(Number) as number,
      change: 'catalog',
      at: expect.any(String) as string,
    });
    expect(rest.map((item) => item.change)).toEqual(['create']);
    const startedAt = head!.catalog!;
    const plain = (await sendAs(t.app, 'GET', '/v3/changes', alice)).json<Page>();
    expect(plain.changes.every((item) => item.id !== undefined)).toBe(true);

    // One import that changes two songs is one item.
    const [one, two] = [await demoSong(t, alice, 3), await demoSong(t, alice, 4)];
    const entries = [
      { ...one, title: `${one.title} (live)` },
      { ...two, genre: `${two.genre} revival` },
    ];
    await importCatalog(t.db, entries);
    let token = firstPage.next;
    const items: Item[] = [];
    // On PostgreSQL the feed lists a commit once no transaction older than it is still open anywhere on the server
    // (other test runs' included): read again for a while, bounded in time.
    const deadline = Date.now() + 15_000;
    while (!items.some((item) => item.change === 'catalog') && Date.now() < deadline) {
      const page = (
        await sendAs(t.app, 'GET', `/v3/changes?types=catalog,playlist&since=${encodeURIComponent(token)}`, alice)
      ).json<Page>();
      items.push(...page.changes);
      token = page.next;
      if (!page.more) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const catalogItems = items.filter((item) => item.change === 'catalog');
    expect(catalogItems).toEqual([{ catalog: startedAt + 2, change: 'catalog', at: expect.any(String) as string }]);

    // Without `types`, a feed from the same point lists no catalog item.
    const others = await sendAs(t.app, 'GET', `/v3/changes?since=${encodeURIComponent(firstPage.next)}`, alice);
    expect(others.json<Page>().changes.filter((item) => item.change === 'catalog')).toEqual([]);

    // What changed since the version before: both songs, the genre's change too, in id order, paged.
    const changed = await sendAs(t.app, 'GET', `/v3/song?changedSince=${startedAt}&limit=1`, alice);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json<Song[]>().map((song) => song.title)).toEqual([entries[0]!.title]);
    expect(changed.headers['x-total-count']).toBe('2');
    expect(changed.headers.link).toContain(`changedSince=${startedAt}`);
    const second = await sendAs(t.app, 'GET', `/v3/song?changedSince=${startedAt}&limit=1&offset=1`, alice);
    expect(second.json<Song[]>().map((song) => song.genre)).toEqual([entries[1]!.genre]);
    const none = await sendAs(t.app, 'GET', `/v3/song?changedSince=${startedAt + 2}`, alice);
    expect(none.json<Song[]>()).toEqual([]);
    expect(none.headers['x-total-count']).toBe('0');

    // An import that changes nothing is no item.
    await importCatalog(t.db, entries);
    const after = await sendAs(t.app, 'GET', `/v3/changes?types=catalog&since=${encodeURIComponent(token)}`, alice);
    expect(after.json<Page>().changes).toEqual([]);
  });

  it('answers a feed that waits for catalog items when another process imports', async () => {
    const bob = await t.addUser();
    const first = (await sendAs(t.app, 'GET', '/v3/changes?types=catalog', bob)).json<Page>();
    expect(first.changes).toEqual([
      { catalog: expect.any(Number) as number, change: 'catalog', at: expect.any(String) as string },
    ]);
    const since = encodeURIComponent(first.next);
    const waiting = sendAs(t.app, 'GET', `/v3/changes?types=catalog&wait=30&since=${since}`, bob);
    const song = await demoSong(t, bob, 5);
    await renameWithCli(t.config.database.url, [{ ...song, title: `${song.title} (remastered)` }]);
    // The command's own start can take most of the wait on a loaded machine: the time that counts is from its commit.
    const imported = Date.now();
    let answer = await waiting;
    for (let polls = 1; polls < 3 && answer.json<Page>().changes.length === 0; polls += 1) {
      answer = await sendAs(t.app, 'GET', `/v3/changes?types=catalog&wait=30&since=${since}`, bob);
    }
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json<Page>().changes).toEqual([
      { catalog: first.changes[0]!.catalog! + 1, change: 'catalog', at: expect.any(String) as string },
    ]);
    // Well before a wait's end: the import's commit woke the request waiting for it. On PostgreSQL the feed lists a
    // change once every transaction begun before it, anywhere on the server, has ended, and the other test files
    // running beside this one hold transactions that long: there it must come within the waits, as above.
    if (dialect === 'sqlite') expect(Date.now() - imported).toBeLessThan(20_000);
  }, 100_000);

  it('refuses a kind it does not know and changedSince with search, naming them', async () => {
    const carol = await t.addUser();
    for (const types of ['folders', 'playlist,', 'catalog,nope']) {
      const refused = await sendAs(t.app, 'GET', `/v3/changes?types=${encodeURIComponent(types)}`, carol);
      expect(expectError(refused, 400).errormsg).toMatch(/^types: /);
      const stream = await sendAs(t.app, 'GET', `/v3/changes/stream?types=${encodeURIComponent(types)}`, carol);
      expect(expectError(stream, 400).errormsg).toMatch(/^types: /);
    }
    const both = await sendAs(t.app, 'GET', '/v3/song?changedSince=0&search=night', carol);
    expect(expectError(both, 400).errormsg).toMatch(/changedSince/);
    const negative = await sendAs(t.app, 'GET', '/v3/song?changedSince=-1', carol);
    expect(expectError(negative, 400).errormsg).toMatch(/changedSince/);
  });
});
