/**
 * A fixed-size ring of numeric rows in one Float64Array: the in-memory cache
 * of a container's recent samples (cAdvisor keeps the last 2 minutes the same
 * way). One allocation per container, no per-sample objects, so a sample costs
 * exactly `width × 8` bytes and old samples are overwritten, never collected.
 *
 * @module
 */

/**
 * How many samples cover `storageMs` at one per `intervalMs`, plus one so that
 * the oldest sample still spans the whole window for a rate.
 * @param storageMs how long samples are kept (cAdvisor's storage duration, 2 min)
 * @param intervalMs the housekeeping interval
 * @returns the ring capacity
 * @throws {RangeError} on a non-positive interval or storage duration
 */
export function ringCapacity(storageMs: number, intervalMs: number): number {
  if (!(intervalMs > 0) || !(storageMs > 0)) {
    throw new RangeError(`storage ${storageMs}ms and interval ${intervalMs}ms must be positive`);
  }
  return Math.ceil(storageMs / intervalMs) + 1;
}

/** A ring of `capacity` rows of `width` numbers; NaN marks an absent value. */
export class SampleRing {
  /** Numbers per row. */
  readonly width: number;
  /** Rows kept at most. */
  readonly capacity: number;
  #data: Float64Array;
  #start = 0;
  #length = 0;

  /**
   * @param capacity rows kept (see {@link ringCapacity})
   * @param width numbers per row
   * @throws {RangeError} when either is not a positive integer
   */
  constructor(capacity: number, width: number) {
    if (!Number.isInteger(capacity) || capacity < 1 || !Number.isInteger(width) || width < 1) {
      throw new RangeError(
        `ring needs positive integer capacity and width (${capacity}, ${width})`,
      );
    }
    this.capacity = capacity;
    this.width = width;
    this.#data = new Float64Array(capacity * width);
  }

  /** Rows currently held. */
  get length(): number {
    return this.#length;
  }

  /** Bytes of sample storage (the whole ring, full or not). */
  get byteLength(): number {
    return this.#data.byteLength;
  }

  /**
   * Appends a row, overwriting the oldest when full. Missing trailing values
   * are stored as NaN.
   * @param row up to `width` numbers
   */
  push(row: ArrayLike<number>): void {
    let slot: number;
    if (this.#length < this.capacity) {
      slot = (this.#start + this.#length) % this.capacity;
      this.#length++;
    } else {
      slot = this.#start;
      this.#start = (this.#start + 1) % this.capacity;
    }
    const base = slot * this.width;
    for (let i = 0; i < this.width; i++) this.#data[base + i] = i < row.length ? row[i]! : NaN;
  }

  /**
   * A row by age: 0 is the oldest, `length − 1` the newest; negative counts
   * from the newest (−1 is the newest).
   * @param index position
   * @returns a copy of the row, or undefined when out of range
   */
  at(index: number): Float64Array | undefined {
    const i = index < 0 ? this.#length + index : index;
    if (i < 0 || i >= this.#length) return undefined;
    const base = ((this.#start + i) % this.capacity) * this.width;
    return this.#data.slice(base, base + this.width);
  }

  /**
   * One value of a row, without copying the row.
   * @param index position as in {@link SampleRing.at}
   * @param field column
   * @returns the value (NaN when absent), or undefined when out of range
   */
  value(index: number, field: number): number | undefined {
    const i = index < 0 ? this.#length + index : index;
    if (i < 0 || i >= this.#length || field < 0 || field >= this.width) return undefined;
    return this.#data[((this.#start + i) % this.capacity) * this.width + field];
  }

  /** Drops every row. */
  clear(): void {
    this.#start = 0;
    this.#length = 0;
  }
}
