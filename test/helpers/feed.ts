import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { sleep } from './traffic.js';

export interface FeedEntry {
  id: number;
  version?: number;
  change: string;
  at: string;
  /** Who made a change of a playlist (1.8.0). */
  by?: string;
}

export interface FeedPage {
  changes: FeedEntry[];
  next: string;
  more: boolean;
}

/** A page's entries without their times and who made them, to compare with what a test expects. */
export const untimed = (page: FeedPage) => page.changes.map(({ at: _, by: _by, ...entry }) => entry);

/** Reading a user's change feed, as a client syncing its copy would. */
export function feedReader(app: () => FastifyInstance) {
  const feed = async (security: string, query = ''): Promise<FeedPage> => {
    const response = await app().inject({ method: 'GET', url: `/v3/changes${query}`, headers: { security } });
    expect(response.statusCode, response.body).toBe(200);
    return response.json<FeedPage>();
  };
  /**
   * The feed once it shows `expected` (or after 15 s, for the assertion to tell what it shows): on PostgreSQL a read
   * delivers only what every older transaction has let through, and other test files' transactions on the same
   * server count too, so acknowledged writes may show a moment later, never skipped.
   */
  const feedShowing = async (security: string, query: string, expected: readonly object[]): Promise<FeedPage> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const page = await feed(security, query);
      if (isDeepStrictEqual(untimed(page), expected) || Date.now() > deadline) return page;
      await sleep(100);
    }
  };
  /**
   * A token past `expected`, the changes since `start`. A token made while an older transaction holds the horizon
   * back would deliver them again (at least once, by design); a page that shows them has its token past them.
   */
  const settled = async (security: string, start: string, expected: readonly object[]): Promise<string> => {
    const page = await feedShowing(security, `?since=${start}`, expected);
    expect(untimed(page)).toEqual(expected);
    return page.next;
  };
  return { feed, feedShowing, settled };
}
