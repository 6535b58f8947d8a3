import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError } from '../helpers/requests.js';

/** Holds the event loop in turns of `turnMs` for `ms` in all, as a flood of synchronous work would. */
async function holdTheLoop(ms: number, turnMs: number): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const turnEnds = performance.now() + turnMs;
    while (performance.now() < turnEnds) {
      // busy
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describeEachDatabase('load shedding on %s', { MIXTAPE_MAX_EVENT_LOOP_DELAY_MS: '100' }, (t) => {
  it('refuses costly requests with 503 and Retry-After while the event loop is behind, and serves the rest', async () => {
    const alice = await t.addUser();
    const { id } = await createPlaylist(t.app, alice, 'Mine', [1, 2, 3]);
    // Past the first second after the start, when nothing is shed yet.
    await sleep(1100);
    expect(
      (await t.app.inject({ method: 'GET', url: '/v3/playlist?search=mine', headers: { security: alice } })).statusCode,
    ).toBe(200);

    // Turns of 250 ms for over a second: every sample of the loop's delay (each half a second) sees them.
    await holdTheLoop(1200, 250);
    const [create, search, diff, one, page, health, ready] = await Promise.all([
      t.app.inject({
        method: 'POST',
        url: '/v3/playlist',
        headers: { security: alice },
        payload: { name: 'x', songIds: [] },
      }),
      t.app.inject({ method: 'GET', url: '/v3/playlists?search=mine', headers: { security: alice } }),
      t.app.inject({ method: 'GET', url: `/v3/playlist/${id}/diff?from=1`, headers: { security: alice } }),
      t.app.inject({ method: 'GET', url: `/v3/playlist/${id}`, headers: { security: alice } }),
      t.app.inject({ method: 'GET', url: '/v3/playlist', headers: { security: alice } }),
      t.app.inject({ method: 'GET', url: '/healthz' }),
      t.app.inject({ method: 'GET', url: '/readyz' }),
    ]);
    for (const refused of [create, search, diff]) {
      expect(expectError(refused, 503).errormsg).toMatch(/overloaded/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
    for (const served of [one, page, health, ready]) expect(served.statusCode, served.body).toBe(200);
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^mixtape_requests_shed_total\{reason="eventLoopDelay"\} 3$/m);

    // Once a sample of a free loop is taken, costly requests are served again.
    await sleep(1100);
    const again = await t.app.inject({ method: 'GET', url: '/v3/playlist?search=mine', headers: { security: alice } });
    expect(again.statusCode, again.body).toBe(200);
  });
});
