import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { addVary } from './vary.js';

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
