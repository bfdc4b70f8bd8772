// A bounded map whose entries expire on an injected clock, with one shared
// lookup per key in flight (upstream's token cache uses singleflight the same
// way, so a burst of requests with one token makes one TokenReview).

import type { Clock } from "../util/clock.ts";

interface Entry<V> {
  value: V;
  expires: number;
}

/** A TTL cache with per-entry lifetimes and coalesced lookups. */
export class TtlCache<V> {
  #entries = new Map<string, Entry<V>>();
  #inflight = new Map<string, Promise<V>>();
  #clock: Clock;
  #max: number;

  /**
   * @param clock time source
   * @param max entries kept; the oldest inserted goes first when full
   */
  constructor(clock: Clock, max = 4096) {
    this.#clock = clock;
    this.#max = max;
  }

  /** The live entry for `key`. */
  get(key: string): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expires <= this.#clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Stores `value` for `ttlMs`; a non-positive TTL stores nothing. */
  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { value, expires: this.#clock.now() + ttlMs });
  }

  /**
   * The cached value, else the result of `load` (shared by concurrent
   * callers of the same key); `load` decides what to cache via {@link set}.
   */
  getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    let p = this.#inflight.get(key);
    if (!p) {
      p = load().finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, p);
    }
    return p;
  }

  /** Live and expired entries held. */
  get size(): number {
    return this.#entries.size;
  }
}
