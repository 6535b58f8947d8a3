import { describe, expect, it } from 'vitest';
import { RememberedStandings, type Forgetting, type ReadStanding, type Told } from './freshness.js';

/** A Freshness without a database: `tell` plays the change log telling what changed. */
function fakeFreshness() {
  const memories: Forgetting[] = [];
  const freshness: Told & { generation: number } = {
    generation: 0,
    listen: (memory) => {
      memories.push(memory);
    },
  };
  return {
    freshness,
    tell: (ids: readonly number[] | 'all') => {
      for (const memory of memories) {
        if (ids === 'all') memory.all();
        else memory.changed(ids);
      }
      freshness.generation += 1;
    },
  };
}

const OWNER = 1;
const EDITOR = 2;
const STRANGER = 3;
const PLAYLIST = 10;

const asOwner: ReadStanding = { ownerId: OWNER, ownerName: 'olga', memberRole: null, version: 4 };
const asEditor: ReadStanding = { ownerId: OWNER, ownerName: 'olga', memberRole: 'editor', version: 4 };

describe('the standings access remembers (SQLite)', () => {
  it("knows an owner and a member seen by a read, with the playlist's version, and no one else", () => {
    const { freshness } = fakeFreshness();
    const standings = new RememberedStandings(freshness);
    expect(standings.find(OWNER, PLAYLIST)).toBeUndefined();
    standings.remember(OWNER, PLAYLIST, asOwner, 0);
    standings.remember(EDITOR, PLAYLIST, asEditor, 0);
    expect(standings.find(OWNER, PLAYLIST)).toEqual({
      ownerId: OWNER,
      role: 'owner',
      ownerName: undefined,
      version: 4,
    });
    expect(standings.find(EDITOR, PLAYLIST)).toEqual({ ownerId: OWNER, role: 'editor', ownerName: 'olga', version: 4 });
    expect(standings.find(STRANGER, PLAYLIST)).toBeUndefined();
    expect(standings.find(OWNER, PLAYLIST + 1)).toBeUndefined();
  });

  it("knows the owner from a member's read (an owner never changes)", () => {
    const { freshness } = fakeFreshness();
    const standings = new RememberedStandings(freshness);
    standings.remember(EDITOR, PLAYLIST, asEditor, 0);
    expect(standings.find(OWNER, PLAYLIST)).toMatchObject({ role: 'owner', version: 4 });
  });

  it('takes the version of the latest read', () => {
    const { freshness } = fakeFreshness();
    const standings = new RememberedStandings(freshness);
    standings.remember(OWNER, PLAYLIST, asOwner, 0);
    standings.remember(EDITOR, PLAYLIST, { ...asEditor, version: 5 }, 0);
    expect(standings.find(OWNER, PLAYLIST)?.version).toBe(5);
    expect(standings.find(EDITOR, PLAYLIST)?.version).toBe(5);
  });

  it('forgets a playlist the change log names, and only it', () => {
    const { freshness, tell } = fakeFreshness();
    const standings = new RememberedStandings(freshness);
    standings.remember(OWNER, PLAYLIST, asOwner, 0);
    standings.remember(EDITOR, PLAYLIST, asEditor, 0);
    standings.remember(OWNER, PLAYLIST + 1, asOwner, 0);
    tell([PLAYLIST]);
    expect(standings.find(OWNER, PLAYLIST)).toBeUndefined();
    expect(standings.find(EDITOR, PLAYLIST)).toBeUndefined();
    expect(standings.find(OWNER, PLAYLIST + 1)).toMatchObject({ role: 'owner' });
  });

  it('forgets everything when the log was too far behind (a version may have moved)', () => {
    const { freshness, tell } = fakeFreshness();
    const standings = new RememberedStandings(freshness);
    standings.remember(OWNER, PLAYLIST, asOwner, 0);
    standings.remember(EDITOR, PLAYLIST + 1, asEditor, 0);
    tell('all');
    expect(standings.find(OWNER, PLAYLIST)).toBeUndefined();
    expect(standings.find(EDITOR, PLAYLIST + 1)).toBeUndefined();
  });

  it('does not remember a read that began before the log told of a change', () => {
    const { freshness, tell } = fakeFreshness();
    const standings = new RememberedStandings(freshness);
    const began = freshness.generation;
    tell([PLAYLIST + 5]);
    standings.remember(OWNER, PLAYLIST, asOwner, began);
    standings.remember(EDITOR, PLAYLIST, asEditor, began);
    expect(standings.find(OWNER, PLAYLIST)).toBeUndefined();
    expect(standings.find(EDITOR, PLAYLIST)).toBeUndefined();
  });
});
