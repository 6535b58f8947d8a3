import { describe, expect, it } from 'vitest';
import { ApiError } from '../http/errors.js';
import { ROLES, type Role } from '../domain/roles.js';
import { allowed, refusal, type Permission } from './playlist.access.js';

const PERMISSIONS: readonly Permission[] = ['read', 'edit', 'own'];

/** The status `allowed` answers: 200 when it lets the standing through, else the error's. */
function outcome(role: Role, permission: Permission): number {
  try {
    const standing = { role, id: 3 };
    expect(allowed(standing, permission)).toBe(standing);
    return 200;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.statusCode;
  }
}

describe('the access policy', () => {
  it('lets each role do what the rights table says, and answers 403 for the rest', () => {
    const table = Object.fromEntries(
      ROLES.map((role) => [role, Object.fromEntries(PERMISSIONS.map((p) => [p, outcome(role, p)]))]),
    );
    expect(table).toEqual({
      owner: { read: 200, edit: 200, own: 200 },
      editor: { read: 200, edit: 200, own: 403 },
      viewer: { read: 200, edit: 403, own: 403 },
    });
  });

  it('tells a viewer why an edit is refused, and a member why owning is', () => {
    expect(() => allowed({ role: 'viewer' }, 'edit')).toThrow(/shared with you as a viewer/);
    expect(() => allowed({ role: 'editor' }, 'own')).toThrow(/Only the owner/);
  });

  const deleted = { id: 12, ownerId: 5, newest: 4 };

  it('answers 410 to the owner and the members of a deleted playlist: the owner is told how to restore it', () => {
    const owner = refusal(5, deleted, false);
    expect(owner.statusCode).toBe(410);
    expect(owner.message).toBe(
      'This playlist is already deleted. You can restore it: POST /v3/playlist/12/restore with {"version": 4} ' +
        "(its delete's version), or on the server `mixtape playlist restore 12`.",
    );
    const member = refusal(6, deleted, true);
    expect(member.statusCode).toBe(410);
    expect(member.message).toBe('This playlist is already deleted. Only its owner can restore it.');
  });

  it('tells the owner once a deleted playlist can no longer be restored', () => {
    const pruned = refusal(5, { ...deleted, newest: undefined }, false);
    expect(pruned.statusCode).toBe(410);
    expect(pruned.message).toMatch(/^This playlist is already deleted\. Its history is no longer kept/);
  });

  it('answers the same 404 to a stranger of a deleted playlist and to anyone of a playlist never made', () => {
    const stranger = refusal(6, deleted, false);
    const missing = refusal(6, undefined, false);
    expect(stranger.statusCode).toBe(404);
    expect(missing.statusCode).toBe(404);
    expect(stranger.message).toBe(missing.message);
    // A membership of a playlist that is not deleted (it is there, or never was) is no reason to say more.
    expect(refusal(6, undefined, true).statusCode).toBe(404);
  });
});
