import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';
import { addGeneratedSongs, CHEAP_RULES, COSTLY_RULES } from './costly-rules.js';

// A smart playlist's rules query runs off the event loop (a thread on SQLite, the server on PostgreSQL) and is stopped
// past MIXTAPE_RULES_TIMEOUT_MS: rules too costly for the catalog are a 422 that names the limit and stores nothing,
// and nobody else waits for them meanwhile.

const TIMEOUT_MS = 50;

/**
 * Sends `request` again and again while `busy` runs, each 5 ms after the last one's answer, and answers the longest
 * any of them took from when it was due: these requests run on the app's own event loop, so one that a blocked loop
 * kept from being sent counts the time it was kept.
 */
async function slowestWhile(busy: Promise<unknown>, request: () => Promise<LightMyRequestResponse>): Promise<number> {
  const state = { done: false };
  const finished = () => {
    state.done = true;
  };
  busy.then(finished, finished);
  const took: number[] = [];
  let due = performance.now();
  do {
    const answer = await request();
    took.push(performance.now() - due);
    expect(answer.statusCode, answer.body).toBe(200);
    due = performance.now() + 5;
    await new Promise((resolve) => setTimeout(resolve, 5));
  } while (!state.done);
  return Math.max(...took);
}

describeEachDatabase(
  'rules too costly for the catalog on %s',
  { MIXTAPE_RULES_TIMEOUT_MS: String(TIMEOUT_MS) },
  (t, dialect) => {
    beforeAll(async () => {
      await addGeneratedSongs(t, dialect);
    });

    it('answers a costly create 422 naming the limit, stores nothing, and keeps serving everyone meanwhile', async () => {
      const trudy = await t.addUser();
      const alice = await t.addUser();
      const hers = await createPlaylist(t.app, alice, 'Alice’s', [1, 2, 3]);

      const create = sendAs(t.app, 'POST', '/v3/playlist', trudy, { name: 'Costly', rules: COSTLY_RULES });
      const [health, read] = await Promise.all([
        slowestWhile(create, () => t.app.inject({ url: '/healthz' })),
        slowestWhile(create, () => sendAs(t.app, 'GET', `/v3/playlist/${hers.id}`, alice)),
      ]);
      const refused = expectError(await create, 422);
      expect(refused.errormsg).toMatch(new RegExp(`^These rules take longer than ${TIMEOUT_MS} ms over this catalog`));
      expect(refused.errormsg).toMatch(/too costly/);
      // A bound in seconds, not milliseconds: a query holding the event loop would hold these for all its time.
      expect(health).toBeLessThan(1000);
      expect(read).toBeLessThan(1000);

      const listed = await sendAs(t.app, 'GET', '/v3/playlist', trudy);
      expect(listed.statusCode, listed.body).toBe(200);
      expect(listed.json()).toEqual([]);
      // Cheap rules are answered as ever.
      const made = await sendAs(t.app, 'POST', '/v3/playlist', trudy, { name: 'Jazz', rules: CHEAP_RULES });
      expect(made.statusCode, made.body).toBe(200);
      expect(made.json<PlaylistBody>().songs).toHaveLength(3);
    });

    it('answers costly rules sent by PATCH or PUT 422, and leaves the playlist as it was', async () => {
      const trudy = await t.addUser();
      const hand = await createPlaylist(t.app, trudy, 'Hand', [1, 2, 3]);
      const url = `/v3/playlist/${hand.id}`;
      const before = await sendAs(t.app, 'GET', url, trudy);

      const patched = expectError(await sendAs(t.app, 'PATCH', url, trudy, { rules: COSTLY_RULES }), 422);
      expect(patched.errormsg).toMatch(/too costly/);
      expectError(await sendAs(t.app, 'PUT', url, trudy, { name: 'Hand', rules: COSTLY_RULES }), 422);

      const after = await sendAs(t.app, 'GET', url, trudy);
      expect(after.body).toBe(before.body);
      expect(after.headers.etag).toBe(before.headers.etag);
    });
  },
);
