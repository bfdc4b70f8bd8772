/**
 * {@link Slots}: at most a fixed number of tasks in flight, the others waiting in
 * arrival order. The image manager's parallel pulls (upstream's
 * `maxParallelImagePulls`; a serial puller is one slot) and the mount(8)/umount(8)
 * processes of memory-backed volumes use it.
 *
 * @module
 */

/**
 * At most `limit` tasks in flight; the others wait in arrival order. A task that fails
 * frees its slot like one that finishes, so it does not hold back those queued after it.
 */
export class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  /**
   * @param limit tasks in flight at most, ≥ 1
   * @throws {RangeError} when `limit` is not a positive integer
   */
  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`slots: ${limit} is not a positive whole number`);
    }
    this.#free = limit;
  }

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `fn` once a slot is free, holding the slot until it settles.
   * @param fn the task
   * @returns what `fn` returns
   */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}
