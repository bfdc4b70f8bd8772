/**
 * When each pod is next due for a sync (upstream's kubelet work queue): the
 * syncLoop's 1s tick takes the due pods and sends them a `sync` update.
 *
 * @module
 */

import type { Clock } from "../util/clock.ts";

/** Upstream's default `syncFrequency`. */
export const DEFAULT_RESYNC_INTERVAL_MS = 60_000;
/** Upstream's pod worker `backOffPeriod`. */
export const DEFAULT_BACKOFF_MS = 10_000;
/** Upstream's `backOffOnTransientErrorPeriod` (network not ready). */
export const TRANSIENT_BACKOFF_MS = 1000;
/** Upstream's `workerResyncIntervalJitterFactor` and `workerBackOffPeriodJitterFactor`. */
export const JITTER_FACTOR = 0.5;
/** The error text upstream treats as transient (`NetworkNotReadyErrorMsg`). */
export const NETWORK_NOT_READY = "network is not ready";

/** Upstream `wait.Jitter`: `ms` plus up to `factor`·`ms`. */
export function jitter(ms: number, factor: number, random: () => number): number {
  return ms + random() * factor * ms;
}

/** A map from pod UID to when it is next due (the clock's monotonic ms). */
export class WorkQueue {
  #due = new Map<string, number>();
  #clock: Clock;

  /** @param clock the source of now */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Makes `uid` due after `delayMs` (replacing any earlier due time).
   * @param uid the pod
   * @param delayMs from now
   */
  enqueue(uid: string, delayMs: number): void {
    this.#due.set(uid, this.#clock.monotonic() + Math.max(0, delayMs));
  }

  /** Removes `uid`. */
  forget(uid: string): void {
    this.#due.delete(uid);
  }

  /**
   * Takes every pod due by now out of the queue (upstream `GetWork`).
   * @returns their UIDs, earliest first
   */
  takeDue(): string[] {
    const now = this.#clock.monotonic();
    const due = [...this.#due].filter(([, at]) => at <= now).sort((a, b) => a[1] - b[1]);
    for (const [uid] of due) this.#due.delete(uid);
    return due.map(([uid]) => uid);
  }
}
