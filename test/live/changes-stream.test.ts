import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

interface StreamEvent {
  readonly event: string | undefined;
  readonly id: string | undefined;
  readonly data: string | undefined;
  readonly comment: string | undefined;
}

/** The blocks of a text/event-stream body. */
function events(body: string): StreamEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const field = (name: string) =>
        block
          .split('\n')
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2);
      return { event: field('event'), id: field('id'), data: field('data'), comment: field('') };
    });
}

const changesOf = (e: StreamEvent) => (JSON.parse(e.data!) as { changes: { id: number; change: string }[] }).changes;

describeEachDatabase('the change feed as server-sent events, on %s', { MIXTAPE_STREAM_MAX_SECONDS: '2' }, (t) => {
  it('writes the caller’s playlists, then each change as it commits, then a last event to resume from', async () => {
    const alice = await t.addUser();
    const first = await createPlaylist(t.app, alice, 'First', [1]);
    const streaming = sendAs(t.app, 'GET', '/v3/changes/stream', alice, undefined, { 'accept-encoding': 'gzip, br' });
    await sleep(700);
    const second = await createPlaylist(t.app, alice, 'Second', [2]);
    const answer = await streaming;
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(answer.headers['cache-control']).toBe('no-store');
    const got = events(answer.body);
    expect(got.map((e) => e.event)).toEqual(['changes', 'changes', 'end']);
    expect(changesOf(got[0]!)).toEqual([expect.objectContaining({ id: first.id })]);
    expect(changesOf(got[1]!)).toEqual([expect.objectContaining({ id: second.id, change: 'create' })]);
    expect(got[2]!.id).toBe(got[1]!.id);

    // Resumed from its last event: nothing repeated, and what came between is the first event.
    await sendAs(t.app, 'PATCH', `/v3/playlist/${first.id}`, alice, { name: 'First, renamed' });
    const resumed = await sendAs(t.app, 'GET', '/v3/changes/stream?since=now', alice, undefined, {
      'last-event-id': got[2]!.id!,
    });
    const again = events(resumed.body);
    expect(again.map((e) => e.event)).toEqual(['changes', 'end']);
    expect(changesOf(again[0]!)).toEqual([expect.objectContaining({ id: first.id, change: 'edit' })]);
  });

  it('refuses a Last-Event-ID or since that is not a token it gave, as the feed does', async () => {
    const alice = await t.addUser();
    const bad = await sendAs(t.app, 'GET', '/v3/changes/stream', alice, undefined, { 'last-event-id': 'made.up' });
    expectError(bad, 400);
    expectError(await sendAs(t.app, 'GET', '/v3/changes/stream?since=made.up', alice), 400);
  });
});
