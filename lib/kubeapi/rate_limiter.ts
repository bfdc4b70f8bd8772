/**
 * The client-side throttle in front of the apiserver: a token bucket with the
 * kubelet's `kubeAPIQPS`/`kubeAPIBurst` semantics (client-go's
 * `flowcontrol.NewTokenBucketRateLimiter`, itself `golang.org/x/time/rate`).
 * The bucket starts full with `burst` tokens and refills at `qps` per second;
 * a caller that finds it empty reserves the next token and waits for it
 * instead of failing, so waiters are served in arrival order.
 *
 * @module
 */

import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";

/** Options for {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second; `<= 0` turns limiting off (as client-go's negative QPS). */
  qps: number;
  /** Bucket size: how many calls may go at once after a quiet period (at least 1). */
  burst: number;
  /** Time source; the wall clock by default. */
  clock?: Clock;
}

/** A token bucket rate limiter whose {@link TokenBucket.wait} blocks until a token is free. */
export class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  /** @param opts qps, burst and the clock */
  constructor(opts: TokenBucketOptions) {
    this.#qps = opts.qps;
    this.#burst = Math.max(1, Math.floor(opts.burst));
    this.#clock = opts.clock ?? realClock;
    this.#tokens = this.#burst;
    this.#last = this.#clock.now();
  }

  /** Tokens available now (negative while callers are queued), for tests and metrics. */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  /**
   * Takes one token, waiting for it when the bucket is empty.
   * @param signal aborting gives the reserved token back and rejects with the signal's reason
   * @returns resolves when the caller may send its request
   * @throws the abort reason when `signal` aborts first
   */
  async wait(signal?: AbortSignal): Promise<void> {
    if (this.#qps <= 0) return;
    signal?.throwIfAborted();
    this.#refill();
    // Reserving before sleeping (the bucket may go negative) keeps waiters in
    // arrival order without a queue: each sleeps until its own token is due.
    this.#tokens -= 1;
    if (this.#tokens >= 0) return;
    const delayMs = Math.ceil((-this.#tokens / this.#qps) * 1000);
    try {
      await this.#clock.sleep(delayMs, signal);
    } catch (err) {
      this.#refill();
      this.#tokens = Math.min(this.#burst, this.#tokens + 1);
      throw err;
    }
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last);
    this.#last = now;
    this.#tokens = Math.min(this.#burst, this.#tokens + (elapsed / 1000) * this.#qps);
  }
}
