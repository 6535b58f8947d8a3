import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { addVary, preferredWait, prefersMinimal } from './conditional.js';

/** The `Vary` of an answer that starts with `before` (none if undefined) and then has `names` added. */
async function varyAfter(before: string | undefined, ...names: string[]): Promise<unknown> {
  const app = Fastify();
  app.get('/', (_request, reply) => {
    if (before !== undefined) reply.header('vary', before);
    addVary(reply, ...names);
    return 'ok';
  });
  try {
    return (await app.inject({ url: '/' })).headers.vary;
  } finally {
    await app.close();
  }
}

describe('addVary', () => {
  it('starts the header, or appends to it in order', async () => {
    expect(await varyAfter(undefined, 'security', 'Authorization')).toBe('security, Authorization');
    expect(await varyAfter('Origin', 'security', 'Authorization')).toBe('Origin, security, Authorization');
    expect(await varyAfter('security, Authorization', 'Accept')).toBe('security, Authorization, Accept');
  });

  it('adds a name once, whatever its case', async () => {
    expect(await varyAfter('Origin, accept', 'Accept', 'Authorization')).toBe('Origin, accept, Authorization');
    expect(await varyAfter('Accept', 'accept')).toBe('Accept');
  });

  it('leaves `Vary: *` alone: the answer already varies on everything', async () => {
    expect(await varyAfter('*', 'Accept')).toBe('*');
  });
});

describe('Prefer', () => {
  it("reads Prefer's wait in whole seconds, at most 60, and ignores what it does not understand", () => {
    expect(preferredWait(undefined)).toBeUndefined();
    expect(preferredWait('wait=10')).toBe(10);
    expect(preferredWait('respond-async, wait=5')).toBe(5);
    expect(preferredWait('return=minimal; foo, WAIT = "7"')).toBe(7);
    expect(preferredWait(['handling=lenient', 'wait=3'])).toBe(3);
    expect(preferredWait('wait=600')).toBe(60);
    for (const ignored of ['wait=0', 'wait=-1', 'wait=1.5', 'wait=soon', 'wait', 'return=minimal']) {
      expect(preferredWait(ignored)).toBeUndefined();
    }
  });

  it("reads Prefer's return=minimal among other preferences, the first return counting, and ignores other values", () => {
    expect(prefersMinimal(undefined)).toBe(false);
    expect(prefersMinimal('return=minimal')).toBe(true);
    expect(prefersMinimal('return=minimal, wait=5')).toBe(true);
    expect(prefersMinimal(['wait=5', 'RETURN = "minimal"; foo'])).toBe(true);
    for (const ignored of ['return=representation', 'return=representation, return=minimal', 'return', 'return=min']) {
      expect(prefersMinimal(ignored)).toBe(false);
    }
    expect(preferredWait('return=minimal, wait=5')).toBe(5);
  });
});
