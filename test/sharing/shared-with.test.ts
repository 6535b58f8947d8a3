import { CompiledQuery, sql } from 'kysely';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist, expectError, sendAs } from '../helpers/requests.js';

const SHARED_WITH_MAX = 3;

interface Shared {
  readonly owner: string;
  readonly id: number;
}

describeEachDatabase(
  'the playlists shared with a user on %s',
  { MIXTAPE_SHARED_WITH_MAX: String(SHARED_WITH_MAX) },
  (t, dialect) => {
    /** Users named `prefix-name`, each with the value of their `security` header. */
    const users = async (prefix: string, ...names: string[]) => {
      const made: Record<string, string> = {};
      for (const name of names) made[name] = await t.addUser(`${prefix}-${name}`);
      return made;
    };
    const share = (id: number, security: string, user: string, role = 'viewer') =>
      sendAs(t.app, 'PUT', `/v3/playlist/${id}/members/${encodeURIComponent(user)}`, security, { role });
    const shared = async (id: number, security: string, user: string, role = 'viewer') => {
      const answer = await share(id, security, user, role);
      expect(answer.statusCode, answer.body).toBe(200);
    };
    const leave = (id: number, security: string, user: string) =>
      sendAs(t.app, 'DELETE', `/v3/playlist/${id}/members/${encodeURIComponent(user)}`, security);
    const listed = async (security: string, query = '') => {
      const answer = await sendAs(t.app, 'GET', `/v3/playlist?scope=shared${query}`, security);
      expect(answer.statusCode, answer.body).toBe(200);
      return {
        ids: answer.json<{ id: number }[]>().map((p) => p.id),
        total: Number(answer.headers['x-total-count']),
      };
    };

    it(`shares at most MIXTAPE_SHARED_WITH_MAX (${SHARED_WITH_MAX}) playlists with a user: one more is 409`, async () => {
      const u = await users('cap', 'ann', 'bea', 'cai', 'dee');
      const playlists: Shared[] = [];
      for (const [i, owner] of [u.ann!, u.bea!, u.ann!, u.bea!, u.ann!].entries()) {
        playlists.push({ owner, id: (await createPlaylist(t.app, owner, `P${i}`, [1])).id });
      }
      const [p0, p1, p2, p3, p4] = playlists as [Shared, Shared, Shared, Shared, Shared];
      // Playlists of several owners count together.
      for (const p of [p0, p1, p2]) await shared(p.id, p.owner, 'cap-cai');
      const refused = expectError(await share(p3.id, p3.owner, 'cap-cai'), 409);
      expect(refused.errormsg).toMatch(new RegExp(`cap-cai .*${SHARED_WITH_MAX} playlists`));
      // Nothing was written: the playlist has no such member, and the user no such playlist.
      expect((await sendAs(t.app, 'GET', `/v3/playlist/${p3.id}/members`, p3.owner)).json()).toEqual([
        { user: 'cap-bea', role: 'owner' },
      ]);
      expect((await listed(u.cai!)).ids).toEqual([p0.id, p1.id, p2.id]);
      // Another user is not concerned, and a role change is no new membership.
      await shared(p3.id, p3.owner, 'cap-dee');
      await shared(p0.id, p0.owner, 'cap-cai', 'editor');

      // Leaving makes room, as does the owner's delete of the playlist.
      expect((await leave(p1.id, u.cai!, 'cap-cai')).statusCode).toBe(200);
      await shared(p3.id, p3.owner, 'cap-cai');
      expectError(await share(p4.id, p4.owner, 'cap-cai'), 409);
      expect((await sendAs(t.app, 'DELETE', `/v3/playlist/${p2.id}`, p2.owner)).statusCode).toBe(200);
      await shared(p4.id, p4.owner, 'cap-cai');
      // The owner's restore brings the playlist back with its members, past the limit: no new membership is added.
      const restored = await sendAs(t.app, 'POST', `/v3/playlist/${p2.id}/restore`, p2.owner, { version: 1 });
      expect(restored.statusCode, restored.body).toBe(200);
      expect((await listed(u.cai!)).total).toBe(SHARED_WITH_MAX + 1);
      expectError(await share(p1.id, p1.owner, 'cap-cai'), 409);
    });

    it('lets a member leave a playlist shared with them, which leaves their list and their searches', async () => {
      const u = await users('leave', 'ann', 'cai');
      const kept = await createPlaylist(t.app, u.ann!, 'Kept tune', [1]);
      const unasked = await createPlaylist(t.app, u.ann!, 'Unasked tune', [1]);
      await shared(kept.id, u.ann!, 'leave-cai');
      await shared(unasked.id, u.ann!, 'leave-cai', 'editor');
      expect(await listed(u.cai!)).toEqual({ ids: [kept.id, unasked.id], total: 2 });
      expect((await listed(u.cai!, '&search=tune')).ids).toEqual([kept.id, unasked.id]);

      // The member names themselves, whatever their role; the owner is told nothing more than the members list says.
      const left = await leave(unasked.id, u.cai!, 'leave-cai');
      expect(left.statusCode, left.body).toBe(200);
      expect(await listed(u.cai!)).toEqual({ ids: [kept.id], total: 1 });
      expect(await listed(u.cai!, '&search=unasked')).toEqual({ ids: [], total: 0 });
      expectError(await sendAs(t.app, 'GET', `/v3/playlist/${unasked.id}`, u.cai!), 404);
      expect((await sendAs(t.app, 'GET', `/v3/playlist/${unasked.id}/members`, u.ann!)).json()).toEqual([
        { user: 'leave-ann', role: 'owner' },
      ]);
    });

    it('reads a page of shared playlists through the memberships’ index, and the songs of that page only', async () => {
      const u = await users('page', 'ann', 'cai');
      const ids: number[] = [];
      for (let i = 0; i < SHARED_WITH_MAX; i++) {
        const made = await createPlaylist(t.app, u.ann!, `Page ${i}`, [1, 2, 3]);
        await shared(made.id, u.ann!, 'page-cai');
        ids.push(made.id);
      }
      const before = t.queries.length;
      expect((await listed(u.cai!, '&limit=1&offset=1')).ids).toEqual([ids[1]]);
      const sent = t.queries.slice(before);
      // Songs are read for the page's playlist alone.
      for (const statement of sent.filter((q) => /"playlist_songs"/.test(q.sql))) {
        expect(statement.parameters.filter((p) => ids.includes(p as number))).not.toContain(ids[0]);
        expect(statement.parameters.filter((p) => ids.includes(p as number))).not.toContain(ids[2]);
      }
      // The page, its total and a search's slices find the memberships by the key (member, playlist).
      await listed(u.cai!, '&search=page');
      const statements = [
        sent.find((q) => /"playlist_members"/.test(q.sql)),
        t.queries.findLast((q) => /"playlist_members" as "m" inner join "playlist_documents"/.test(q.sql)),
      ];
      for (const statement of statements) {
        expect(statement).toBeDefined();
        const text = statement!.sql.replace(/^\/\*[^*]*\*\/\s*/, '');
        const explain = (q: typeof t.db.kysely, how: string) =>
          q.executeQuery(CompiledQuery.raw(`${how} ${text}`, [...statement!.parameters]));
        const plan =
          dialect === 'sqlite'
            ? await explain(t.db.kysely, 'EXPLAIN QUERY PLAN')
            : // The tables hold a few rows, which the planner would rather read whole: can the index serve it?
              await t.db.kysely.transaction().execute(async (trx) => {
                await sql`SET LOCAL enable_seqscan = off`.execute(trx);
                return explain(trx, 'EXPLAIN');
              });
        expect(JSON.stringify(plan.rows)).toMatch(/playlist_members_user/);
      }
    });
  },
);
