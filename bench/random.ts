/** A seeded generator (mulberry32): the same data set on every machine, which `Math.random` cannot promise. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n), and one in [min, max]. */
  int = (n: number) => Math.floor(this.next() * n);
  between = (min: number, max: number) => min + this.int(max - min + 1);
  pick = <T>(items: readonly T[]): T => items[this.int(items.length)]!;
  chance = (probability: number) => this.next() < probability;
  /** A standard normal deviate (Box–Muller). */
  normal = () => Math.sqrt(-2 * Math.log(1 - this.next())) * Math.cos(2 * Math.PI * this.next());

  /** Shuffles in place (Fisher–Yates). */
  shuffle<T extends { [index: number]: unknown; length: number }>(items: T): T {
    for (let i = items.length - 1; i > 0; i -= 1) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }
}
