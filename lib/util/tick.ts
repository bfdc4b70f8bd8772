/**
 * Timers aligned to a shared grid, so that periodic work wakes the process
 * once per grid step instead of once per timer.
 *
 * Every wake-up of the event loop costs CPU of its own (measured on our VMs:
 * 0.2–1.2 ms per wake, more the longer the process slept before it), which
 * dominates an idle agent's CPU. With 100 containers on jittered 10 s
 * housekeeping timers plus the PLEG, sync and housekeeping ticks, unaligned
 * timers wake the agent ~13 times a second; aligned to a 1 s grid they fire
 * together, once a second. Each timer keeps its own period and jitter: the
 * grid only rounds its deadline to the nearest step.
 *
 * @module
 */

import type { Clock, Timer } from "./clock.ts";

/** The grid denolet aligns its periodic timers to. */
export const TICK_GRID_MS = 1000;

/**
 * The delay until the grid step nearest to `now + delayMs` (always in the future).
 * @param now the clock's now, in ms
 * @param delayMs the wanted delay
 * @param gridMs the grid step; ≤ 0 disables alignment
 * @returns the aligned delay in ms
 */
export function alignedDelay(now: number, delayMs: number, gridMs: number): number {
  if (gridMs <= 0) return delayMs;
  let due = Math.round((now + delayMs) / gridMs) * gridMs;
  if (due <= now) due += gridMs;
  return due - now;
}

/**
 * Calls `fn` every `periodMs`, each call on the grid step nearest to one
 * period after the previous call.
 * @param clock the clock
 * @param periodMs the period
 * @param gridMs the grid step; ≤ 0 gives a plain interval
 * @param fn the work
 * @returns a timer whose cancel() stops it
 */
export function everyAligned(
  clock: Clock,
  periodMs: number,
  gridMs: number,
  fn: () => void,
): Timer {
  if (gridMs <= 0) return clock.setInterval(fn, periodMs);
  let timer: Timer | undefined;
  let cancelled = false;
  const arm = () => {
    timer = clock.setTimeout(() => {
      if (cancelled) return;
      arm();
      fn();
    }, alignedDelay(clock.now(), periodMs, gridMs));
  };
  arm();
  return {
    cancel() {
      cancelled = true;
      timer?.cancel();
    },
  };
}
