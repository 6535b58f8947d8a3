import { afterAll, expect, it } from 'vitest';
import { describeEachEmptyDatabase } from '../helpers/each-database.js';
import { killAllServers, startServer, type ServerProcess } from '../helpers/server-process.js';
import { call, eventually, sleep } from '../helpers/traffic.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { seededRandom } from '../helpers/seeded-random.js';

/**
 * A merged edit (`POST …/edits`) that was answered 200 survives `kill -9` of the service at any moment, and a
 * request sent with a `key` never applies twice, also when it is sent again after the restart. A stream of merged
 * edits, each made on version 1 with a key of its own and inserting a song of its own after one entry, runs against
 * the real service until it is killed with SIGKILL at a random moment; after the restart every acknowledged insert is
 * there, each resent request answers what it answered before and changes nothing, and the requests whose answers the
 * kill cut off, sent again, leave each of their songs in the playlist exactly once.
 */

const USER = 'crash-merge';
const PASSWORD = 'kill -9 mërge';
const SECURITY = `Basic ${Buffer.from(`${USER}:${PASSWORD}`, 'utf8').toString('base64')}`;
/** Requests in flight at once: within one user's writes that run or wait (66) with room to spare. */
const CONCURRENCY = 6;
/** The songs of the playlist; the inserts' songs come after them, one each, up to the demo catalog's 240. */
const ORIGINALS = [1, 2, 3, 4];
const FIRST_INSERTED = 11;
const MAX_EDITS = 200;

/** Runs `task` over `items` with at most `limit` at a time. */
async function inPool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

async function readEntries(server: ServerProcess, id: number): Promise<EntriesBody> {
  const answer = await call(`${server.url}/v3/playlist/${id}/entries`, { headers: { security: SECURITY } });
  expect(answer.status, answer.body).toBe(200);
  return JSON.parse(answer.body) as EntriesBody;
}

describeEachEmptyDatabase('kill -9 during merged edits (%s)', (database, dialect) => {
  afterAll(async () => {
    await killAllServers();
  });

  it('keeps every acknowledged merged edit, and a key sent again after the restart applies nothing again', async () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const random = seededRandom(seed);
    const start = () => startServer({ databaseUrl: database.url, bootstrapUser: `${USER}:${PASSWORD}` });
    let server = await start();
    const created = await call(`${server.url}/v3/playlist`, {
      method: 'POST',
      headers: { security: SECURITY },
      body: { name: 'Kept through a crash', songIds: ORIGINALS },
    });
    expect(created.status, created.body).toBe(200);
    const { id } = JSON.parse(created.body) as { id: number };
    const base = await readEntries(server, id);
    expect(base.version).toBe(1);
    const anchor = base.entries[1]!.entry;

    /** The i-th request: made on version 1, its own key and its own song, inserted after the anchor. */
    const request = (i: number) => ({
      base: 1,
      key: `crash-${i}`,
      ops: [{ op: 'insert', songIds: [FIRST_INSERTED + i], after: anchor }],
    });
    const send = (url: string, i: number) =>
      call(`${url}/v3/playlist/${id}/edits`, { method: 'POST', headers: { security: SECURITY }, body: request(i) });

    // The first answers, by request; the requests sent whose answers never came (the kill cut them off).
    const acknowledged = new Map<number, EditsBody>();
    const inDoubt = new Set<number>();
    const problems: string[] = [];
    let killed = false;
    // A call, so that the workers read the flag anew after each await.
    const isKilled = () => killed;
    let sent = 0;
    const worker = async (url: string) => {
      while (!isKilled() && sent < MAX_EDITS) {
        const i = sent++;
        inDoubt.add(i);
        const answer = await send(url, i);
        if (answer.status !== 200) {
          if (!isKilled())
            problems.push(`request ${i} answered ${answer.status} while the service was up: ${answer.body}`);
          continue;
        }
        const body = JSON.parse(answer.body) as EditsBody;
        const [result] = body.results;
        if (!result?.applied || result.entries?.length !== 1) problems.push(`request ${i} answered ${answer.body}`);
        acknowledged.set(i, body);
        inDoubt.delete(i);
      }
    };
    const url = server.url;
    const load = Promise.all(Array.from({ length: CONCURRENCY }, () => worker(url)));
    // The kill comes at a random moment after the first answer, so that there are acknowledged edits to find again.
    expect(await eventually(() => Promise.resolve(acknowledged.size > 0), 20_000), `seed ${seed}`).toBe(true);
    const killAfterMs = Math.floor(random() * 800);
    await sleep(killAfterMs);
    killed = true;
    server.process.kill('SIGKILL');
    const exit = await server.exited;
    await load;
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(problems, `seed ${seed}`).toEqual([]);
    console.info(
      `crash merged edits ${dialect}: killed after ${killAfterMs} ms, ${acknowledged.size} acknowledged, ` +
        `${inDoubt.size} cut off, ${sent} sent (seed ${seed})`,
    );

    server = await start();
    const songOf = (i: number) => FIRST_INSERTED + i;
    const after = await readEntries(server, id);
    const entryOfSong = new Map(after.entries.map((e) => [e.id, e.entry]));
    // Every acknowledged insert is there, under the entry its answer named; the originals keep theirs, in order.
    for (const [i, body] of acknowledged) {
      const [result] = body.results;
      const entry = result?.applied ? result.entries?.[0] : undefined;
      expect(entryOfSong.get(songOf(i)), `seed ${seed}: acknowledged request ${i}`).toBe(entry);
    }
    expect(after.entries.filter((e) => ORIGINALS.includes(e.id))).toEqual(base.entries);
    const inserted = after.entries.filter((e) => !ORIGINALS.includes(e.id));
    // Nothing else: each insert is one that was sent, once; one revision each, none half written.
    const sentSongs = [...acknowledged.keys(), ...inDoubt].map(songOf);
    expect(new Set(inserted.map((e) => e.id)).size, `seed ${seed}`).toBe(inserted.length);
    for (const entry of inserted) expect(sentSongs, `seed ${seed}`).toContain(entry.id);
    expect(new Set(after.entries.map((e) => e.entry)).size).toBe(after.entries.length);
    expect(after.version, `seed ${seed}`).toBe(1 + inserted.length);

    // Each acknowledged request sent again: the same results, nothing applied again.
    await inPool([...acknowledged], CONCURRENCY, async ([i, first]) => {
      const again = await send(server.url, i);
      expect(again.status, `seed ${seed}: request ${i} again: ${again.body}`).toBe(200);
      expect((JSON.parse(again.body) as EditsBody).results, `seed ${seed}: request ${i} again`).toEqual(first.results);
    });
    expect(await readEntries(server, id), `seed ${seed}`).toEqual(after);

    // Each request the kill cut off, sent again: applied now, or (when it was committed before the kill) answered as
    // then, naming the entry already there. Either way its song is in the playlist once.
    await inPool([...inDoubt], CONCURRENCY, async (i) => {
      const again = await send(server.url, i);
      expect(again.status, `seed ${seed}: request ${i} again: ${again.body}`).toBe(200);
      const [result] = (JSON.parse(again.body) as EditsBody).results;
      expect(result, `seed ${seed}: request ${i} again`).toEqual({ applied: true, entries: [expect.any(String)] });
      const was = entryOfSong.get(songOf(i));
      if (was !== undefined && result?.applied) expect(result.entries?.[0], `seed ${seed}: request ${i}`).toBe(was);
    });
    const final = await readEntries(server, id);
    const finalSongs = final.entries.map((e) => e.id).filter((song) => !ORIGINALS.includes(song));
    expect(finalSongs.sort((x, y) => x - y)).toEqual(sentSongs.sort((x, y) => x - y));
    expect(final.version).toBe(1 + sentSongs.length);
    expect(final.entries.filter((e) => ORIGINALS.includes(e.id))).toEqual(base.entries);

    const exitAtEnd = await server.stop('SIGTERM');
    expect(exitAtEnd, server.output()).toEqual({ code: 0, signal: null });
  }, 90_000);
});
