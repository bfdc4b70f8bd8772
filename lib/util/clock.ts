/**
 * Time as a dependency: every timer in denolet goes through a {@link Clock} so
 * that unit tests drive time with {@link FakeClock} instead of sleeping.
 *
 * @module
 */

/** A cancellable timer handle. */
export interface Timer {
  cancel(): void;
}

/** The source of "now" and of timers. */
export interface Clock {
  /** Milliseconds since the Unix epoch: for timestamps others read; it may step. */
  now(): number;
  /**
   * Milliseconds on a clock that never steps (a change of the wall clock does not move
   * it), for intervals and orderings within this process: what Go's monotonic reading
   * gives upstream's Since and Before. Not comparable with another process's.
   */
  monotonic(): number;
  /** Calls `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Calls `fn` every `ms` until cancelled. */
  setInterval(fn: () => void, ms: number): Timer;
  /** Resolves after `ms`, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The wall clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  // Counted from the process's start on the epoch scale, so it reads like now() until
  // the wall clock steps.
  monotonic: () => performance.timeOrigin + performance.now(),
  setTimeout(fn, ms) {
    const id = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(id) };
  },
  setInterval(fn, ms) {
    const id = setInterval(fn, ms);
    return { cancel: () => clearInterval(id) };
  },
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const id = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(id);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  every?: number;
  cancelled: boolean;
}

/** A clock that only moves when told to, for unit tests. */
export class FakeClock implements Clock {
  #now: number;
  /** now() less every {@link jump}. */
  #monotonic: number;
  #seq = 0;
  #pending: Pending[] = [];

  /** @param start epoch ms the clock starts at */
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
    this.#monotonic = start;
  }

  now(): number {
    return this.#now;
  }

  monotonic(): number {
    return this.#monotonic;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.#add(fn, ms);
  }

  setInterval(fn: () => void, ms: number): Timer {
    return this.#add(fn, ms, Math.max(1, ms));
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = this.#add(resolve, ms);
      signal?.addEventListener("abort", () => {
        t.cancel();
        reject(signal.reason);
      }, { once: true });
    });
  }

  /**
   * Moves time forward by `ms`, firing due timers in order.
   * @param ms how far to move
   */
  tick(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      this.#pending = this.#pending.filter((p) => !p.cancelled);
      this.#pending.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#pending[0];
      if (!next || next.at > end) break;
      this.#monotonic += next.at - this.#now;
      this.#now = next.at;
      if (next.every !== undefined) next.at += next.every;
      else next.cancelled = true;
      next.fn();
    }
    this.#monotonic += end - this.#now;
    this.#now = end;
  }

  /**
   * Steps the wall clock by `ms`, forward or back, firing nothing: what an NTP step or
   * an operator's `date -s` does to a real process, whose timers keep their remaining
   * delays (they run on the monotonic clock).
   * @param ms how far to step; negative steps back
   */
  jump(ms: number): void {
    this.#now += ms;
    for (const p of this.#pending) p.at += ms;
  }

  /** How many timers are waiting. */
  get pendingTimers(): number {
    return this.#pending.filter((p) => !p.cancelled).length;
  }

  #add(fn: () => void, ms: number, every?: number): Timer {
    const p: Pending = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    if (every !== undefined) p.every = every;
    this.#pending.push(p);
    return { cancel: () => (p.cancelled = true) };
  }
}
