/**
 * The grace period a terminating pod gets (upstream
 * `calculateEffectiveGracePeriod`): it may only shrink once set.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";

/** The API's default `terminationGracePeriodSeconds`. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;

/**
 * Computes the effective grace period.
 *
 * Order, as upstream: the apiserver's `deletionGracePeriodSeconds` and then the
 * caller's override may each lower the current value (or set it when unset);
 * with neither, the pod's `terminationGracePeriodSeconds` (API default 30) is
 * used; the result is never below 1.
 *
 * @param current the value already in force, 0 when none
 * @param pod the pod
 * @param override a requested grace period (eviction, kill), if any
 * @returns the grace period and whether it shortened one already in force
 */
export function effectiveGracePeriod(
  current: number,
  pod: Pod,
  override?: number,
): { seconds: number; shortened: boolean } {
  let seconds = current;
  let overridden = false;
  for (const candidate of [pod.metadata.deletionGracePeriodSeconds, override]) {
    if (candidate === undefined) continue;
    if (seconds === 0 || candidate < seconds) {
      seconds = candidate;
      overridden = true;
    }
  }
  if (!overridden && seconds === 0) {
    seconds = pod.spec.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  }
  if (seconds < 1) seconds = 1;
  return { seconds, shortened: current !== 0 && current !== seconds };
}
