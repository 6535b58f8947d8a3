import { describe, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs, type PlaylistBody } from '../helpers/requests.js';

// Every way of changing a playlist goes through one writer (src/playlists/write/writer.ts): the songs limit, the
// precondition and smart playlists' songs are decided there, once, with one sentence each.
describeEachDatabase('one door for every playlist write on %s', { MIXTAPE_SONGS_MAX: '3' }, (t) => {
  describe('the songs limit', () => {
    it('refuses every kind of edit past it with the same 409, and writes nothing', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Three', [1, 2, 3]);
      const url = `/v3/playlist/${made.id}`;
      const before = (await sendAs(t.app, 'GET', url, security)).headers.etag;
      const patch = (type: string, body: unknown) =>
        t.app.inject({
          method: 'PATCH',
          url,
          headers: { security, 'content-type': type },
          payload: JSON.stringify(body),
        });
      const answers = [
        await patch('application/json-patch+json', [{ op: 'add', path: '/songs/-', value: { id: 4 } }]),
        await patch('application/merge-patch+json', { songIds: [1, 2, 3, 4] }),
        await sendAs(t.app, 'PUT', url, security, { name: 'Four', songIds: [1, 2, 3, 4] }),
        await sendAs(t.app, 'POST', `${url}/songs`, security, { songIds: [4] }),
        await sendAs(t.app, 'POST', `${url}/edits`, security, {
          key: 'k1',
          ops: [{ op: 'insert', songIds: [4], after: null }],
        }),
      ];
      for (const answer of answers) {
        expect(expectError(answer, 409).errormsg).toBe(
          'A playlist holds at most 3 songs; this edit would leave it with 4.',
        );
      }
      const now = await sendAs(t.app, 'GET', url, security);
      expect(now.json<PlaylistBody>().songs.map((s) => s.id)).toEqual([1, 2, 3]);
      expect(now.headers.etag).toBe(before);
      // The refused merged edit kept no key: the same key with a request that fits is a new request.
      const fits = await sendAs(t.app, 'POST', `${url}/edits`, security, {
        key: 'k1',
        ops: [{ op: 'rename', name: 'Still three' }],
      });
      expect(fits.statusCode, fits.body).toBe(200);
    });
  });

  describe('the precondition', () => {
    it('answers 412 with the tag of the form each way answers, before the change is tried', async () => {
      const security = await t.addUser();
      const made = await createPlaylist(t.app, security, 'Tagged', [1]);
      const url = `/v3/playlist/${made.id}`;
      const json = (await sendAs(t.app, 'GET', url, security)).headers.etag!;
      const entries = (await sendAs(t.app, 'GET', `${url}/entries`, security)).headers.etag!;
      expect(
        (await sendAs(t.app, 'POST', `${url}/songs`, security, { songIds: [2] }, { 'if-match': '"stale"' })).headers
          .etag,
      ).toBe(json);
      // A change that would be refused (past the songs limit) answers the failed precondition first.
      const refused = await sendAs(
        t.app,
        'POST',
        `${url}/edits`,
        security,
        { ops: [{ op: 'insert', songIds: [2, 3, 4], after: null }] },
        { 'if-match': '"stale"' },
      );
      expect(refused.statusCode).toBe(412);
      expect(refused.headers.etag).toBe(entries);
    });
  });
});
