/**
 * Myers' O(ND) shortest edit of one list of song ids into another, in its linear-space form ("An O(ND) Difference
 * Algorithm and Its Variations", 1986, section 4b): the common first and last songs are set aside, a point about
 * half way along a shortest edit is found by searching from both ends at once (the middle snake), and each side of
 * it is searched the same way. Memory is O(songs); time O((songs) · D) at worst, so the search counts its steps
 * (a diagonal tried, or an equal song passed) and can stop at a cut-off, and can pause and go on where it was.
 */

/** Where a search stopped: done, paused, or past the distance or work it may spend. */
export type Progress = 'done' | 'paused' | 'cut';

interface Snake {
  readonly aStart: number;
  readonly aEnd: number;
  readonly bStart: number;
  readonly bEnd: number;
  readonly delta: number;
  readonly rounds: number;
  d: number;
  k: number;
  backward: boolean;
  /** Diagonals that ran off the bottom or the right edge are not tried again. */
  kStart: number;
  kEnd: number;
  kBackStart: number;
  kBackEnd: number;
}

const NO_EDGES = { kStart: 0, kEnd: 0, kBackStart: 0, kBackEnd: 0 } as const;

export class EditSearch {
  /** [aStart, aEnd, bStart, bEnd] for each hunk, front to back, neighbours merged. */
  readonly hunks: number[] = [];
  #work = 0;
  /** Ranges still to search, as [aStart, aEnd, bStart, bEnd]: the last one next. */
  readonly #ranges: number[];
  #snake: Snake | undefined;
  /** Rounds of a middle-snake search before it gives up: each round rules out two more edits. */
  readonly #rounds: number;
  /** `forward[offset + k]` is the furthest x a path of d edits from the start reaches on diagonal k (x - y = k). */
  readonly #forward: Int32Array;
  /** The same from the end, counted backwards. */
  readonly #backward: Int32Array;

  readonly #a: readonly number[];
  readonly #b: readonly number[];
  readonly #maxWork: number;

  constructor(a: readonly number[], b: readonly number[], maxDistance: number, maxWork: number) {
    this.#a = a;
    this.#b = b;
    this.#maxWork = maxWork;
    this.#ranges = [0, a.length, 0, b.length];
    this.#rounds = Math.ceil(maxDistance / 2) + 1;
    const size = 2 * Math.min(this.#rounds, Math.ceil((a.length + b.length) / 2) + 1) + 2;
    this.#forward = new Int32Array(size);
    this.#backward = new Int32Array(size);
  }

  /** Searches until done, past the cut-off, or at `until` steps (paused: call again to go on). */
  run(until = Infinity): Progress {
    for (;;) {
      if (this.#work > this.#maxWork) return 'cut';
      if (this.#work >= until) return 'paused';
      let snake = this.#snake;
      if (snake === undefined) {
        if (this.#ranges.length === 0) return 'done';
        snake = this.#start();
        if (snake === undefined) continue;
      }
      const point = this.#advance(snake, Math.min(until, this.#maxWork + 1));
      if (point === 'paused') continue;
      this.#snake = undefined;
      if (point === 'none') return 'cut';
      // The left side is searched first, so hunks come front to back.
      this.#ranges.push(point.x, snake.aEnd, point.y, snake.bEnd, snake.aStart, point.x, snake.bStart, point.y);
    }
  }

  /** Takes the next range: a hunk at once if one side is empty once trimmed, or a middle-snake search. */
  #start(): Snake | undefined {
    const a = this.#a;
    const b = this.#b;
    const ranges = this.#ranges;
    let bEnd = ranges.pop()!;
    let bStart = ranges.pop()!;
    let aEnd = ranges.pop()!;
    let aStart = ranges.pop()!;
    const length = aEnd - aStart;
    while (aStart < aEnd && bStart < bEnd && a[aStart] === b[bStart]) {
      aStart += 1;
      bStart += 1;
    }
    while (aEnd > aStart && bEnd > bStart && a[aEnd - 1] === b[bEnd - 1]) {
      aEnd -= 1;
      bEnd -= 1;
    }
    this.#work += length - (aEnd - aStart);
    if (aStart === aEnd || bStart === bEnd) {
      if (aStart < aEnd || bStart < bEnd) this.#hunk(aStart, aEnd, bStart, bEnd);
      return undefined;
    }
    const n = aEnd - aStart;
    const m = bEnd - bStart;
    // Within ceil((n + m) / 2) rounds the two searches always meet; only the cut-off can stop them sooner.
    const rounds = Math.min(Math.ceil((n + m) / 2) + 1, this.#rounds);
    this.#forward.fill(-1, 0, 2 * rounds + 2);
    this.#backward.fill(-1, 0, 2 * rounds + 2);
    this.#forward[rounds + 1] = 0;
    this.#backward[rounds + 1] = 0;
    this.#snake = { aStart, aEnd, bStart, bEnd, delta: n - m, rounds, d: 0, k: 0, backward: false, ...NO_EDGES };
    return this.#snake;
  }

  #hunk(aStart: number, aEnd: number, bStart: number, bEnd: number): void {
    const { hunks } = this;
    const last = hunks.length - 4;
    if (last >= 0 && hunks[last + 1] === aStart && hunks[last + 3] === bStart) {
      hunks[last + 1] = aEnd;
      hunks[last + 3] = bEnd;
    } else {
      hunks.push(aStart, aEnd, bStart, bEnd);
    }
  }

  /**
   * Goes on with a middle-snake search until the two paths meet (the point where to split the range, on a
   * shortest edit: both sides are shorter, as the range's first and last songs differ), until `stop` steps, or
   * until it has ruled out an edit within the distance cut-off ('none').
   */
  #advance(s: Snake, stop: number): { x: number; y: number } | 'paused' | 'none' {
    const a = this.#a;
    const b = this.#b;
    const forward = this.#forward;
    const backward = this.#backward;
    const { aStart, aEnd, bStart, bEnd, delta, rounds } = s;
    const n = aEnd - aStart;
    const m = bEnd - bStart;
    const offset = rounds;
    const size = 2 * rounds + 2;
    const odd = (delta & 1) !== 0;
    // Locals in the loop, written back when it returns (a closure over them would slow every step).
    let d = s.d;
    let k = s.k;
    let back = s.backward;
    let work = this.#work;
    while (d < rounds) {
      if (!back) {
        if (k > d - s.kEnd) {
          back = true;
          k = -d + s.kBackStart;
          continue;
        }
        const at = offset + k;
        let x = k === -d || (k !== d && forward[at - 1]! < forward[at + 1]!) ? forward[at + 1]! : forward[at - 1]! + 1;
        let y = x - k;
        const from = x;
        while (x < n && y < m && a[aStart + x] === b[bStart + y]) {
          x += 1;
          y += 1;
        }
        forward[at] = x;
        work += 1 + x - from;
        k += 2;
        if (x > n) s.kEnd += 2;
        else if (y > m) s.kStart += 2;
        else if (odd) {
          const other = offset + delta - (k - 2);
          if (other >= 0 && other < size && backward[other] !== -1 && x >= n - backward[other]!) {
            this.#save(s, d, k, back, work);
            return { x: aStart + x, y: bStart + y };
          }
        }
      } else {
        if (k > d - s.kBackEnd) {
          back = false;
          d += 1;
          k = -d + s.kStart;
          continue;
        }
        const at = offset + k;
        let x =
          k === -d || (k !== d && backward[at - 1]! < backward[at + 1]!) ? backward[at + 1]! : backward[at - 1]! + 1;
        let y = x - k;
        const from = x;
        while (x < n && y < m && a[aEnd - x - 1] === b[bEnd - y - 1]) {
          x += 1;
          y += 1;
        }
        backward[at] = x;
        work += 1 + x - from;
        k += 2;
        if (x > n) s.kBackEnd += 2;
        else if (y > m) s.kBackStart += 2;
        else if (!odd) {
          const other = offset + delta - (k - 2);
          if (other >= 0 && other < size && forward[other] !== -1) {
            const xAhead = forward[other]!;
            if (xAhead >= n - x) {
              this.#save(s, d, k, back, work);
              return { x: aStart + xAhead, y: bStart + xAhead - (other - offset) };
            }
          }
        }
      }
      if (work >= stop) {
        this.#save(s, d, k, back, work);
        return 'paused';
      }
    }
    this.#save(s, d, k, back, work);
    return 'none';
  }

  #save(s: Snake, d: number, k: number, backward: boolean, work: number): void {
    s.d = d;
    s.k = k;
    s.backward = backward;
    this.#work = work;
  }
}
