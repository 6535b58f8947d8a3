import type { CompiledQuery } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { changesSince } from '../../src/history/revision.repository.js';
import { MERGE_CHANGES, MERGE_VERSIONS } from '../../src/playlists/edits/edits.service.js';
import type { TestApp } from '../helpers/app.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import type { EditsBody, EntriesBody } from '../helpers/entries.js';
import { createPlaylist } from '../helpers/requests.js';

/**
 * Merged edits on a base far back (`POST …/edits` with `base` 1 000 versions behind): they answer as the same edit on
 * a recent base does where nothing it names changed since, and the history they read is what changed since the base,
 * not every version between: none at all when every anchor still stands or when the edit is refused anyway, and a
 * refusal (409, read again) past MERGE_CHANGES entries changed.
 */

/** The rows of `playlist_revisions` the statements read, and the entry and song ids those rows held. */
async function historyRead(t: TestApp, statements: readonly CompiledQuery[]): Promise<{ rows: number; ids: number }> {
  let rows = 0;
  let ids = 0;
  for (const statement of statements) {
    if (!/^\s*(with|select)\b/i.test(statement.sql) || !statement.sql.includes('playlist_revisions')) continue;
    // Read again: every one names its versions, and the merge's own revision is past them.
    const answer = await t.db.kysely.executeQuery<Record<string, unknown>>(statement);
    rows += answer.rows.length;
    for (const row of answer.rows) {
      for (const column of ['songs', 'entries']) {
        const text = row[column];
        if (typeof text === 'string' && text !== '') ids += text.split(',').length;
      }
    }
  }
  return { rows, ids };
}

// The songs limit of 1 000: an insert of 1 000 songs into a few hundred passes it.
describeEachDatabase('merged edits on a base far back on %s', { MIXTAPE_SONGS_MAX: '1000' }, (t) => {
  let owner: string;
  const send = (id: number, body: unknown) =>
    t.app.inject({
      method: 'POST',
      url: `/v3/playlist/${id}/edits`,
      headers: { security: owner, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const edit = async (id: number, body: unknown) => {
    const answer = await send(id, body);
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json<EditsBody>();
  };
  const read = async (id: number) => {
    const answer = await t.app.inject({
      method: 'GET',
      url: `/v3/playlist/${id}/entries`,
      headers: { security: owner },
    });
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json<EntriesBody>();
  };
  /** The answer and the history its statements read. */
  const sendCounted = async (id: number, body: unknown) => {
    const from = t.queries.length;
    const answer = await send(id, body);
    return { answer, read: await historyRead(t, t.queries.slice(from)) };
  };

  const songs = Array.from({ length: 200 }, (_, i) => 1 + i);
  let far: number;
  let names: string[];

  // A playlist of 200 songs, then 1 000 versions: 998 that put a song at the end and take it out again, the last
  // two removing two entries of its middle, one at a time.
  beforeAll(async () => {
    owner = await t.addUser();
    far = (await createPlaylist(t.app, owner, 'Far', songs)).id;
    names = (await read(far)).entries.map((e) => e.entry);
    for (let i = 0; i < MERGE_VERSIONS - 2; i += 2) {
      const put = (await edit(far, { ops: [{ op: 'insert', songIds: [201 + (i % 30)] }] })).playlist.entries.at(-1)!;
      await edit(far, { ops: [{ op: 'remove', entry: put.entry }] });
    }
    await edit(far, { ops: [{ op: 'remove', entry: names[100] }] });
    expect((await edit(far, { ops: [{ op: 'remove', entry: names[101] }] })).playlist.version).toBe(1 + MERGE_VERSIONS);
  }, 300_000);

  it('answers an edit made 1 000 versions back as the same edit on a base just before the anchors were removed', async () => {
    const ops = [
      { op: 'insert', songIds: [231], after: names[100] },
      { op: 'insert', songIds: [232], before: names[101] },
      { op: 'insert', songIds: [233], after: names[150] },
      { op: 'move', entry: names[5], after: names[101] },
      { op: 'move', entry: names[6], before: names[100] },
      { op: 'remove', entry: names[99] },
      { op: 'remove', entry: names[100] },
      { op: 'insert', songIds: [234], after: names[99] },
      { op: 'rename', name: 'Far merged' },
    ];
    const merged = await edit(far, { base: 1, ops });
    // The same playlist whose two entries were removed on the version right after the base.
    const near = (await createPlaylist(t.app, owner, 'Far', songs)).id;
    await edit(near, {
      ops: [
        { op: 'remove', entry: names[100] },
        { op: 'remove', entry: names[101] },
      ],
    });
    const expected = await edit(near, { base: 1, ops });

    // Alike but for the entries the inserts made (the far playlist has given more), and the versions.
    const made = (body: EditsBody) => new Set(body.results.flatMap((r) => (r.applied ? (r.entries ?? []) : [])));
    const slots = (body: EditsBody) => {
      const fresh = made(body);
      return body.playlist.entries.map((e) => [fresh.has(e.entry) ? 'new' : e.entry, e.id]);
    };
    const outcomes = (body: EditsBody) => body.results.map((r) => (r.applied ? 'applied' : r.reason));
    expect(slots(merged)).toEqual(slots(expected));
    expect(outcomes(merged)).toEqual(outcomes(expected));
    expect(outcomes(merged)).toEqual([...Array<string>(6).fill('applied'), 'removed', 'applied', 'applied']);
    expect(merged.playlist.name).toBe('Far merged');
    // Where the removed anchors stood: 100 (song 101) after 99, 101 (song 102) before 102 (song 103); 99 (song 100),
    // removed by the edit itself, after 98 (song 99).
    const order = merged.playlist.entries.map((e) => e.id);
    const at = order.indexOf(99);
    expect(order.slice(at - 1, at + 7)).toEqual([98, 99, 234, 6, 231, 232, 7, 103]);
  });

  it('reads no history for an edit far back whose anchors all stand, nor for one refused anyway', async () => {
    const { version } = await read(far);
    const standing = await sendCounted(far, {
      base: version - MERGE_VERSIONS,
      ops: [
        { op: 'insert', songIds: [235], after: names[150] },
        { op: 'remove', entry: names[8] },
        { op: 'move', entry: names[9], before: names[160] },
        { op: 'rename', name: 'Far again' },
      ],
    });
    expect(standing.answer.statusCode, standing.answer.body).toBe(200);
    // The base's name, one row: not the versions since.
    expect(standing.read.rows).toBeLessThanOrEqual(1);

    const next = version + 1 - MERGE_VERSIONS;
    const refused = await sendCounted(far, {
      base: next,
      atomic: true,
      ops: [
        { op: 'insert', songIds: [236], after: names[100] },
        { op: 'remove', entry: names[101] },
      ],
    });
    expect(refused.answer.statusCode, refused.answer.body).toBe(409);
    expect(refused.read.rows).toBeLessThanOrEqual(1);
    const tooMany = await sendCounted(far, {
      base: next,
      ops: [{ op: 'insert', songIds: Array.from({ length: 1000 }, (_, i) => 1 + (i % 200)), after: names[100] }],
    });
    expect(tooMany.answer.statusCode, tooMany.answer.body).toBe(409);
    expect(tooMany.read.rows).toBeLessThanOrEqual(1);

    // An anchor removed since: what changed since the base (a few entries a version, a whole copy of the list now and
    // then), not the list at every version.
    const placed = await sendCounted(far, { base: next, ops: [{ op: 'insert', songIds: [236], after: names[100] }] });
    expect(placed.answer.statusCode, placed.answer.body).toBe(200);
    expect(placed.read.ids).toBeLessThan(MERGE_VERSIONS * 4 + songs.length * 4);
  });

  it('answers 409 for an anchor removed since a base the playlist changed too much since, and places the rest', async () => {
    // 1 000 songs (the songs limit), an entry removed, then the last one moved to the start 60 times: each revision
    // is a whole copy of the list, 60 000 entries in all.
    const long = (
      await createPlaylist(
        t.app,
        owner,
        'Long',
        Array.from({ length: 1000 }, (_, i) => 1 + (i % 200)),
      )
    ).id;
    const entries = (await read(long)).entries.map((e) => e.entry);
    await edit(long, { ops: [{ op: 'remove', entry: entries[500] }] });
    for (let i = 0; i < Math.ceil(MERGE_CHANGES / 1000) + 10; i++) {
      await edit(long, { ops: [{ op: 'move', entry: entries[999 - i], after: null }] });
    }
    // The changes counted from the chains are those the revisions hold: a splice's entries removed and put, and one;
    // a whole copy's length.
    const rows = await t.db.kysely
      .selectFrom('playlist_revisions')
      .select(['splice_at', 'splice_deleted', 'entries', 'song_count'])
      .where('playlist_id', '=', long)
      .where('version', '>', 1)
      .execute();
    const held = rows.reduce(
      (sum, row) =>
        sum +
        (row.splice_at === null
          ? row.song_count
          : row.splice_deleted! + (row.entries === '' ? 0 : row.entries.split(',').length) + 1),
      0,
    );
    const { version } = await read(long);
    expect(await changesSince(t.db.kysely, long, 1, version)).toBe(held);
    expect(held).toBeGreaterThan(MERGE_CHANGES);

    const refused = await sendCounted(long, { base: 1, ops: [{ op: 'insert', songIds: [7], after: entries[500] }] });
    expect(refused.answer.statusCode, refused.answer.body.slice(0, 300)).toBe(409);
    expect(refused.answer.json<{ errormsg: string }>().errormsg).toContain('read its entries');
    // Refused before the entries were read.
    expect(refused.read.ids).toBe(0);
    // An anchor that stands needs no history: merged.
    const standing = await edit(long, { base: 1, ops: [{ op: 'insert', songIds: [7], after: entries[400] }] });
    const at = standing.playlist.entries.findIndex((e) => e.entry === entries[400]);
    expect(standing.playlist.entries[at + 1]!.id).toBe(7);
  });
});
