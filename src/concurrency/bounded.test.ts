import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Bounded, boundedPerKey, boundedWithShares } from './bounded.js';

class Refused extends Error {}

/** A task that runs until `finish` or `fail` is called; `started` tells whether the bound has let it start. */
function task<T>(value: T) {
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const done = new Promise<T>((resolve, reject) => {
    finish = () => {
      resolve(value);
    };
    fail = reject;
  });
  const self = {
    started: false,
    run: () => {
      self.started = true;
      return done;
    },
    finish,
    fail,
  };
  return self;
}

/** How a promise has settled so far, without waiting for it. */
function watch<T>(promise: Promise<T>) {
  const state: { outcome: 'pending' | 'resolved' | 'rejected'; value?: T; error?: unknown } = { outcome: 'pending' };
  promise.then(
    (value) => Object.assign(state, { outcome: 'resolved', value }),
    (error: unknown) => Object.assign(state, { outcome: 'rejected', error }),
  );
  return state;
}

/** Lets every callback already queued run (the bound hands slots over through promises, and a task that waited
 * starts a turn of the event loop later). */
const settle = async () => {
  for (let turn = 0; turn < 4; turn++) await nextTurn();
};

describe('Bounded', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs at most `limit` tasks at once, and the waiting ones in the order they came as slots free', async () => {
    const bound = new Bounded({ limit: 2, queue: 3, refuse: () => new Refused() });
    const tasks = ['a', 'b', 'c', 'd', 'e'].map(task);
    const runs = tasks.map((t) => watch(bound.run(t.run)));
    const started = () => tasks.filter((t) => t.started).map((t) => tasks.indexOf(t));
    await settle();
    expect(started()).toEqual([0, 1]);
    expect(bound.active).toBe(2);

    tasks[1]!.finish();
    await settle();
    expect(runs[1]).toEqual({ outcome: 'resolved', value: 'b' });
    expect(started()).toEqual([0, 1, 2]);
    expect(bound.active).toBe(2);

    tasks[0]!.finish();
    await settle();
    expect(started()).toEqual([0, 1, 2, 3]);
    for (const t of tasks.slice(2)) t.finish();
    await settle();
    await settle();
    expect(started()).toEqual([0, 1, 2, 3, 4]);
    expect(runs.map((r) => r.value)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(bound.active).toBe(0);
  });

  it('refuses at once, without running it, a task for which the queue has no room; room comes back as waiters start', async () => {
    const refuse = vi.fn(() => new Refused('busy'));
    const bound = new Bounded({ limit: 1, queue: 1, refuse });
    const [running, waiting, extra, later] = ['running', 'waiting', 'extra', 'later'].map(task);
    const runs = [running!, waiting!].map((t) => watch(bound.run(t.run)));

    await expect(bound.run(extra!.run)).rejects.toBeInstanceOf(Refused);
    expect(extra!.started).toBe(false);
    expect(refuse).toHaveBeenCalledTimes(1);
    expect(runs.map((r) => r.outcome)).toEqual(['pending', 'pending']);

    running!.finish();
    await settle();
    expect(waiting!.started).toBe(true);
    // The waiter took the slot: the queue has room for one again.
    const queued = watch(bound.run(later!.run));
    await settle();
    expect(queued.outcome).toBe('pending');
    expect(later!.started).toBe(false);
    waiting!.finish();
    await settle();
    later!.finish();
    await settle();
    expect(queued).toEqual({ outcome: 'resolved', value: 'later' });
    expect(refuse).toHaveBeenCalledTimes(1);
  });

  it('with no queue, refuses every task beyond `limit`', async () => {
    const bound = new Bounded({ limit: 1, queue: 0, refuse: () => new Refused() });
    const first = task(1);
    const run = bound.run(first.run);
    await expect(bound.run(() => Promise.resolve(2))).rejects.toBeInstanceOf(Refused);
    first.finish();
    await expect(run).resolves.toBe(1);
    await expect(bound.run(() => Promise.resolve(3))).resolves.toBe(3);
  });

  it('starts a task that waited a turn of the event loop after its slot is freed, so that other work comes first', async () => {
    const bound = new Bounded({ limit: 1, queue: 1, refuse: () => new Refused() });
    const first = task('first');
    const second = task('second');
    void bound.run(first.run);
    void bound.run(second.run);
    await settle();
    first.finish();
    let otherWork = false;
    setImmediate(() => {
      otherWork = true;
    });
    // Promise callbacks alone (what a freed slot used to hand over through) do not start it.
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(second.started).toBe(false);
    await settle();
    expect(otherWork).toBe(true);
    expect(second.started).toBe(true);
    second.finish();
  });

  it('gives back the error of a task that fails or throws, and passes its slot on', async () => {
    const bound = new Bounded({ limit: 1, queue: 3, refuse: () => new Refused() });
    const failing = task('failing');
    const broken = new Error('broken');
    const thrown = new Error('thrown at once');
    const last = task('last');
    const failed = watch(bound.run(failing.run));
    const threw = watch(
      bound.run(() => {
        throw thrown;
      }),
    );
    const ran = watch(bound.run(last.run));

    failing.fail(broken);
    await settle();
    expect(failed).toEqual({ outcome: 'rejected', error: broken });
    expect(threw).toEqual({ outcome: 'rejected', error: thrown });
    expect(last.started).toBe(true);
    expect(bound.active).toBe(1);
    last.finish();
    await settle();
    expect(ran).toEqual({ outcome: 'resolved', value: 'last' });
    expect(bound.active).toBe(0);
  });

  it('refuses a task that waited `waitMs` for a slot, never runs it, and frees its place in the queue', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const refuse = vi.fn(() => new Refused('waited too long'));
    const bound = new Bounded({ limit: 1, queue: 1, waitMs: 1000, refuse });
    const [running, tired, next] = ['running', 'tired', 'next'].map(task);
    const run = watch(bound.run(running!.run));
    const waited = watch(bound.run(tired!.run));

    await vi.advanceTimersByTimeAsync(999);
    expect(waited.outcome).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(waited.outcome).toBe('rejected');
    expect(waited.error).toBeInstanceOf(Refused);

    // Its place in the queue is free again, and the slot goes to the next waiter, not to it.
    const queued = watch(bound.run(next!.run));
    running!.finish();
    await settle();
    expect(run.outcome).toBe('resolved');
    expect(tired!.started).toBe(false);
    expect(next!.started).toBe(true);
    next!.finish();
    await settle();
    expect(queued).toEqual({ outcome: 'resolved', value: 'next' });
    expect(refuse).toHaveBeenCalledTimes(1);
    expect(bound.active).toBe(0);
  });

  it('does not refuse later a task that got its slot within `waitMs`', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const refuse = vi.fn(() => new Refused());
    const bound = new Bounded({ limit: 1, queue: 1, waitMs: 1000, refuse });
    const [first, second] = ['first', 'second'].map(task);
    void bound.run(first!.run);
    const waited = watch(bound.run(second!.run));

    await vi.advanceTimersByTimeAsync(500);
    first!.finish();
    await settle();
    expect(second!.started).toBe(true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(waited.outcome).toBe('pending');
    expect(refuse).not.toHaveBeenCalled();
    second!.finish();
    await settle();
    expect(waited).toEqual({ outcome: 'resolved', value: 'second' });
  });

  it('without `waitMs`, lets a task wait as long as the slots stay taken', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const refuse = vi.fn(() => new Refused());
    const bound = new Bounded({ limit: 1, queue: 1, refuse });
    const [first, second] = ['first', 'second'].map(task);
    void bound.run(first!.run);
    const waited = watch(bound.run(second!.run));

    await vi.advanceTimersByTimeAsync(24 * 60 * 60 * 1000);
    expect(waited.outcome).toBe('pending');
    expect(second!.started).toBe(false);
    first!.finish();
    await settle();
    second!.finish();
    await settle();
    expect(waited).toEqual({ outcome: 'resolved', value: 'second' });
    expect(refuse).not.toHaveBeenCalled();
  });
});

describe('boundedPerKey', () => {
  it('bounds each key apart: one key full does not refuse another, and an idle key starts afresh', async () => {
    const run = boundedPerKey({ limit: 1, queue: 1, refuse: () => new Refused() });
    const [a1, a2, a3, b1] = ['a1', 'a2', 'a3', 'b1'].map(task);
    const first = watch(run(1, a1!.run));
    const second = watch(run(1, a2!.run));
    const third = watch(run(1, a3!.run));
    const other = watch(run(2, b1!.run));
    await settle();
    expect([a1!.started, a2!.started, a3!.started, b1!.started]).toEqual([true, false, false, true]);
    expect(third.outcome).toBe('rejected');
    expect(third.error).toBeInstanceOf(Refused);

    for (const t of [a1, a2, b1]) {
      t!.finish();
      await settle();
    }
    await settle();
    expect([first.outcome, second.outcome, other.outcome]).toEqual(['resolved', 'resolved', 'resolved']);
    // Key 1 has nothing running or waiting: a new burst gets the whole bound again.
    const [c1, c2] = ['c1', 'c2'].map(task);
    const again = [watch(run(1, c1!.run)), watch(run(1, c2!.run))];
    await settle();
    expect(again.map((state) => state.outcome)).toEqual(['pending', 'pending']);
    c1!.finish();
    await settle();
    c2!.finish();
    await settle();
    await settle();
    expect(again.map((state) => state.outcome)).toEqual(['resolved', 'resolved']);
  });
});

describe('isFull', () => {
  it("tells, without taking a place, when a key's next task would be refused at once, and only for that key", async () => {
    const run = boundedPerKey({ limit: 1, queue: 1, refuse: () => new Refused() });
    expect(run.isFull(1)).toBe(false);
    const [a1, a2] = ['a1', 'a2'].map(task);
    const first = watch(run(1, a1!.run));
    await settle();
    // One running, the queue empty: a second task would wait, not be refused.
    expect(run.isFull(1)).toBe(false);
    const second = watch(run(1, a2!.run));
    await settle();
    expect([run.isFull(1), run.isFull(2)]).toEqual([true, false]);
    // Asking took no place: a task of the key is refused as before, and one of another key runs.
    const third = watch(run(1, () => Promise.resolve('a3')));
    const other = watch(run(2, () => Promise.resolve('b1')));
    await settle();
    expect([third.outcome, other.outcome]).toEqual(['rejected', 'resolved']);

    a1!.finish();
    await settle();
    expect(run.isFull(1)).toBe(false);
    a2!.finish();
    await settle();
    expect([first.outcome, second.outcome]).toEqual(['resolved', 'resolved']);
    expect(run.isFull(1)).toBe(false);
  });

  it("with shares, tells when the key's share is full, whatever the shared bound holds", async () => {
    const run = boundedWithShares(
      { limit: 1, queue: 8, refuse: () => new Refused() },
      {
        limit: 1,
        queue: 1,
        refuse: () => new Refused(),
      },
    );
    const [a1, a2, b1] = ['a1', 'a2', 'b1'].map(task);
    const runs = [watch(run(2, b1!.run)), watch(run(1, a1!.run)), watch(run(1, a2!.run))];
    await settle();
    // Key 1's first task waits in the shared bound behind key 2's: its share holds it and one more.
    expect([a1!.started, run.isFull(1), run.isFull(2)]).toEqual([false, true, false]);
    for (const t of [b1, a1, a2]) {
      t!.finish();
      await settle();
    }
    await settle();
    expect(runs.map((state) => state.outcome)).toEqual(['resolved', 'resolved', 'resolved']);
    expect(run.isFull(1)).toBe(false);
  });
});
