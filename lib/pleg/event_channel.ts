/**
 * A bounded, single-consumer queue with Go channel manners: `send` never
 * blocks (it reports a full buffer instead), `receive` waits.
 *
 * @module
 */

/** A bounded FIFO that a producer fills without blocking and one consumer drains. */
export class EventChannel<T> implements AsyncIterable<T> {
  readonly capacity: number;
  #items: T[] = [];
  #waiters: { resolve: (v: IteratorResult<T>) => void; reject: (e: unknown) => void }[] = [];
  #closed = false;

  /** @param capacity how many items may wait unread (upstream PLEG: 1000) */
  constructor(capacity: number) {
    if (!(capacity > 0)) {
      throw new RangeError(`event channel capacity must be > 0, got ${capacity}`);
    }
    this.capacity = capacity;
  }

  /** How many items wait unread. */
  get length(): number {
    return this.#items.length;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Hands `item` to a waiting receiver or buffers it.
   * @param item the value
   * @returns false when the buffer is full or the channel closed (item dropped)
   */
  send(item: T): boolean {
    if (this.#closed) return false;
    const waiter = this.#waiters.shift();
    if (waiter) {
      waiter.resolve({ value: item, done: false });
      return true;
    }
    if (this.#items.length >= this.capacity) return false;
    this.#items.push(item);
    return true;
  }

  /**
   * Takes the next item without waiting.
   * @returns the item, or undefined when none is buffered
   */
  tryReceive(): T | undefined {
    return this.#items.shift();
  }

  /**
   * Waits for the next item.
   * @param signal aborts the wait (rejects with the signal's reason)
   * @returns the next item, or `{ done: true }` once closed and drained
   */
  next(signal?: AbortSignal): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) {
      return Promise.resolve({ value: this.#items.shift() as T, done: false });
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (v: IteratorResult<T>) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(v);
        },
        reject,
      };
      const onAbort = () => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Ends the stream: waiting and later receivers get `done` once the buffer is drained. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return { next: () => this.next() };
  }
}
