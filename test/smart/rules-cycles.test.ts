import { beforeAll, expect, it } from 'vitest';
import { findRuleCycle, ruleCycleError } from '../../src/smart/rules.cycles.js';
import { InvalidRules, readRules } from '../../src/smart/rules.js';
import { describeEachDatabase } from '../helpers/each-database.js';
import { createPlaylist } from '../helpers/requests.js';

const limits = { songsMax: 1000 };
const naming = (...ids: number[]) =>
  readRules(
    {
      match: 'any',
      conditions: [
        { field: 'genre', op: 'is', value: 'Jazz' },
        ...ids.map((id, i) =>
          i % 2 === 0
            ? { field: 'playlist', op: 'in', value: id }
            : { match: 'all', conditions: [{ field: 'playlist', op: 'notIn', value: id }] },
        ),
      ],
    },
    limits,
  );

describeEachDatabase('rules that name their own playlist, on %s', (t) => {
  let [a, b, c, d, hand] = [0, 0, 0, 0, 0];

  beforeAll(async () => {
    const security = await t.addUser();
    const ids = [];
    for (const name of ['A', 'B', 'C', 'D', 'Hand-made'])
      ids.push((await createPlaylist(t.app, security, name, [1])).id);
    [a, b, c, d, hand] = ids as [number, number, number, number, number];
  });

  /** Stores rules for a playlist as the store will (the routes come later). */
  const store = async (id: number, ids: number[]) => {
    await t.db.kysely
      .updateTable('playlists')
      .set({ rules: JSON.stringify(naming(...ids)) })
      .where('id', '=', id)
      .execute();
  };

  it('finds a playlist named by its own rules', async () => {
    expect(await findRuleCycle(t.db.kysely, a, naming(hand, a))).toEqual({
      path: 'rules/conditions/2/conditions/0/value',
      through: [],
    });
  });

  it('finds one named through the stored rules of others, at any depth, and names the way', async () => {
    await store(b, [c]);
    await store(c, [hand, d]);
    await store(d, [a, c]);
    // A → B → C → D → A.
    const cycle = await findRuleCycle(t.db.kysely, a, naming(hand, b));
    expect(cycle).toEqual({ path: 'rules/conditions/2/conditions/0/value', through: [b, c, d] });
    const error = ruleCycleError(cycle!);
    expect(error).toBeInstanceOf(InvalidRules);
    expect(error.statusCode).toBe(400);
    expect(error.message).toBe(
      `rules/conditions/2/conditions/0/value: the rules may not name their own playlist, directly or through others (through ${b} → ${c} → ${d}).`,
    );
    // The shortest way (D, not C → D), whichever condition it starts from.
    expect(await findRuleCycle(t.db.kysely, a, naming(hand, c, d))).toEqual({
      path: 'rules/conditions/3/value',
      through: [d],
    });
    expect(await findRuleCycle(t.db.kysely, a, naming(hand, c))).toEqual({
      path: 'rules/conditions/2/conditions/0/value',
      through: [c, d],
    });
    expect(await findRuleCycle(t.db.kysely, a, naming(d))).toEqual({ path: 'rules/conditions/1/value', through: [d] });
  });

  it('finds none when no way leads back, loops among the others included', async () => {
    await store(b, [c]);
    await store(c, [d]);
    await store(d, [c, b]);
    expect(await findRuleCycle(t.db.kysely, a, naming(b, hand, 987654))).toBeUndefined();
    expect(await findRuleCycle(t.db.kysely, a, naming())).toBeUndefined();
    expect(await findRuleCycle(t.db.kysely, hand, naming(b))).toBeUndefined();
    expect(await findRuleCycle(t.db.kysely, c, naming(b))).toEqual({ path: 'rules/conditions/1/value', through: [b] });
  });
});
