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

/** The events of a text/event-stream body (comment lines, such as pings, left out). */
function events(body: string): StreamEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.length > 0 && !block.startsWith(':'))
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
    // The playlists first, then the changes as they came (on PostgreSQL the first one's create may come again, late,
    // once older transactions on the server have ended), then the end.
    expect(got[0]!.event).toBe('changes');
    expect(changesOf(got[0]!)).toEqual([expect.objectContaining({ id: first.id })]);
    expect(got.at(-1)!.event).toBe('end');
    const later = got.slice(1, -1).flatMap((e) => changesOf(e));
    expect(later).toContainEqual(expect.objectContaining({ id: second.id, change: 'create' }));
    // The last event carries the token to resume from (after the last change sent; it may have moved past quiet time).
    expect(got[2]!.id).toEqual(expect.any(String));

    // Resumed from its last event: nothing repeated, and what came between is the first event.
    await sendAs(t.app, 'PATCH', `/v3/playlist/${first.id}`, alice, { name: 'First, renamed' });
    const resumed = await sendAs(t.app, 'GET', '/v3/changes/stream?since=now', alice, undefined, {
      'last-event-id': got[2]!.id!,
    });
    const again = events(resumed.body);
    expect(again.at(-1)!.event).toBe('end');
    const resumedChanges = again.slice(0, -1).flatMap((e) => changesOf(e));
    expect(resumedChanges).toContainEqual(expect.objectContaining({ id: first.id, change: 'edit' }));
    // Nothing of what the first stream sent comes again.
    expect(resumedChanges).not.toContainEqual(expect.objectContaining({ id: second.id, change: 'create' }));
  });

  it('refuses a Last-Event-ID or since that is not a token it gave, as the feed does', async () => {
    const alice = await t.addUser();
    const bad = await sendAs(t.app, 'GET', '/v3/changes/stream', alice, undefined, { 'last-event-id': 'made.up' });
    expectError(bad, 400);
    expectError(await sendAs(t.app, 'GET', '/v3/changes/stream?since=made.up', alice), 400);
  });
});

describeEachDatabase('tickets for the stream of changes, on %s', { MIXTAPE_STREAM_MAX_SECONDS: '1' }, (t) => {
  it('opens the stream once with a ticket instead of a credential, and refuses it used, made up or expired', async () => {
    const alice = await t.addUser();
    const mine = await createPlaylist(t.app, alice, 'Seen through a ticket', [1]);
    const made = await sendAs(t.app, 'POST', '/v3/changes/tickets', alice);
    expect(made.statusCode, made.body).toBe(200);
    const { ticket, expiresAt } = made.json<{ ticket: string; expiresAt: string }>();
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(50_000);
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(60_000);

    const url = `/v3/changes/stream?ticket=${encodeURIComponent(ticket)}`;
    const opened = await t.app.inject({ method: 'GET', url });
    expect(opened.statusCode, opened.body).toBe(200);
    expect(changesOf(events(opened.body)[0]!)).toEqual([expect.objectContaining({ id: mine.id })]);

    expectError(await t.app.inject({ method: 'GET', url }), 401);
    expectError(await t.app.inject({ method: 'GET', url: '/v3/changes/stream?ticket=made-up' }), 401);
    const expired = (await sendAs(t.app, 'POST', '/v3/changes/tickets', alice)).json<{ ticket: string }>().ticket;
    await t.db.kysely
      .updateTable('stream_tickets')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    expectError(await t.app.inject({ method: 'GET', url: `/v3/changes/stream?ticket=${expired}` }), 401);
    // Without a ticket or a credential: the usual 401.
    expectError(await t.app.inject({ method: 'GET', url: '/v3/changes/stream' }), 401);
  });
});
