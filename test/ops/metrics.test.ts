import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { DIALECTS } from '../helpers/databases.js';
import { expectError } from '../helpers/requests.js';

/** `/metrics`: open by default, as Prometheus expects; behind a bearer token when MIXTAPE_METRICS_TOKEN is set. */

const TOKEN = 'f3a9c1d7e5b24680-metrics.token_~+/';

/** The metric families an answer names. */
const families = (body: string): string[] =>
  body
    .split('\n')
    .filter((line) => line.startsWith('# TYPE '))
    .map((line) => line.split(' ')[2]!);

for (const dialect of DIALECTS) {
  describe(`/metrics (${dialect})`, () => {
    let open: TestApp;
    let guarded: TestApp;
    beforeAll(async () => {
      open = await createTestApp(dialect);
      guarded = await createTestApp(dialect, { MIXTAPE_METRICS_TOKEN: TOKEN });
    });
    afterAll(async () => {
      await open.close();
      await guarded.close();
    });

    it('answers anyone when no token is set', async () => {
      const answer = await open.app.inject({ url: '/metrics' });
      expect(answer.statusCode, answer.body).toBe(200);
      expect(families(answer.body)).toEqual(
        expect.arrayContaining(['mixtape_http_request_duration_seconds', 'mixtape_cover_cache_hits_total']),
      );
    });

    it('with a token set, answers 401 with the error body to every other credential', async () => {
      const user = await guarded.addUser();
      const refused: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong-token-of-some-length' },
        { authorization: `Bearer ${TOKEN}x` },
        { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
        { authorization: `Basic ${TOKEN}` },
        { authorization: `Bearer ${TOKEN} extra` },
        { authorization: user },
        { security: user },
        { security: `Bearer ${TOKEN}` },
      ];
      for (const headers of refused) {
        const answer = await guarded.app.inject({ url: '/metrics', headers });
        const body = expectError(answer, 401);
        expect(body.errormsg, JSON.stringify(headers)).toMatch(/Bearer/);
        expect(answer.headers['www-authenticate']).toBe('Bearer realm="mixtape-metrics"');
        expect(families(answer.body)).toEqual([]);
      }
    });

    it('with a token set, answers the metrics to Authorization: Bearer <token>', async () => {
      for (const authorization of [`Bearer ${TOKEN}`, `bearer   ${TOKEN}`]) {
        const answer = await guarded.app.inject({ url: '/metrics', headers: { authorization } });
        expect(answer.statusCode, answer.body).toBe(200);
        expect(families(answer.body)).toContain('mixtape_http_request_duration_seconds');
      }
      // The probes stay open.
      for (const url of ['/healthz', '/readyz']) {
        expect((await guarded.app.inject({ url })).statusCode, url).toBe(200);
      }
    });
  });
}
