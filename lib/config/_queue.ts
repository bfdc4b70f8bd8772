/**
 * An unbounded async queue: the channel between the mux and its reader.
 *
 * @module
 */

/** Values pushed in order, read with `for await`; closing ends the iteration. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #waiters: ((r: IteratorResult<T>) => void)[] = [];
  #closed = false;

  /**
   * Enqueues a value, or hands it straight to a waiting reader.
   * @param value the value; dropped once the queue is closed
   */
  push(value: T): void {
    if (this.#closed) return;
    const waiter = this.#waiters.shift();
    if (waiter) waiter({ value, done: false });
    else this.#items.push(value);
  }

  /** Ends iteration for every reader once the queued values are drained. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter({ value: undefined, done: true });
  }

  /** How many values wait to be read. */
  get size(): number {
    return this.#items.length;
  }

  /**
   * Reads the next value.
   * @returns the next value, or `done` when closed and drained
   */
  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) {
      return Promise.resolve({ value: this.#items.shift() as T, done: false });
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return { next: () => this.next() };
  }
}
