import { expect, it } from 'vitest';
import { RefreshQueue, type RefreshOutcome } from './refresh-queue.js';

/** A queue over playlists whose owner is `ownerOf(id)`, recording the order it refreshes them in. */
function recording(ownerOf: (id: number) => number, perOwner = 50, then?: (id: number, queue: RefreshQueue) => void) {
  const order: number[] = [];
  const queue: RefreshQueue = new RefreshQueue({
    refresh: (id): Promise<RefreshOutcome> => {
      order.push(id);
      then?.(id, queue);
      return Promise.resolve('changed');
    },
    owners: (ids) => Promise.resolve(new Map(ids.map((id) => [id, ownerOf(id)]))),
    report: (error) => {
      throw error;
    },
    perOwner,
  });
  return { queue, order };
}

it("takes owners in turn, so one owner's many followers never hold up another's few", async () => {
  // Owner 1 has playlists 1 to 300, owner 2 has 1000.
  const { queue, order } = recording((id) => (id === 1000 ? 2 : 1));
  queue.add(Array.from({ length: 300 }, (_, i) => i + 1));
  queue.add([1000]);
  await queue.idle();
  expect(order.indexOf(1000)).toBeLessThan(2);
  expect(new Set(order).size).toBe(301);
  expect(order).toHaveLength(301);
});

it('refreshes a playlist queued many times once, and what a wave queues in the next wave', async () => {
  // 1 is followed by 2 and 3, both followed by 4: 4 is queued twice in the first wave and refreshed once, after both.
  const followers = new Map([
    [1, [2, 3]],
    [2, [4]],
    [3, [4]],
  ]);
  const { queue, order } = recording(
    () => 7,
    50,
    (id, q) => {
      q.add(followers.get(id) ?? []);
    },
  );
  queue.add([1, 1, 1]);
  queue.add([1]);
  await queue.idle();
  expect(order).toEqual([1, 2, 3, 4]);
});

it("keeps past `perOwner` of one owner's for the next wave, and `now` takes one out of the queue", async () => {
  const { queue, order } = recording((id) => (id < 100 ? 1 : 2), 2);
  queue.add([1, 2, 3, 4, 100]);
  const now = queue.now(4);
  await now;
  await queue.idle();
  expect(order[0]).toBe(4);
  expect(order.slice(1, 4).sort((a, b) => a - b)).toEqual([1, 2, 100]);
  expect(order.slice(4)).toEqual([3]);
  await queue.stop();
  queue.add([9]);
  await queue.idle();
  expect(order).not.toContain(9);
});
