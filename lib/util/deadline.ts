/**
 * A deadline as an AbortSignal that is also cancelled by a parent signal, and
 * whose timer is cleared as soon as the work ends (at tens of probes a second,
 * `AbortSignal.timeout` would leave a live timer behind for every one).
 *
 * @module
 */

/** A running deadline. */
export interface Deadline {
  /** Aborts at the deadline or when the parent aborts. */
  signal: AbortSignal;
  /**
   * True once the deadline has passed (not when the parent aborted), whether or
   * not its timer has run yet: work that never yields to the event loop can ask.
   */
  readonly expired: boolean;
  /** Clears the timer; call when the work is done. */
  clear(): void;
}

/**
 * Starts a deadline.
 * @param parent cancels the work (a probe's worker stopped, a hook abandoned)
 * @param ms how long the work may take
 * @returns the deadline
 */
export function startDeadline(parent: AbortSignal, ms: number): Deadline {
  const controller = new AbortController();
  const endsAt = performance.now() + ms;
  let expired = false;
  const onParent = () => controller.abort(parent.reason);
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error(`timed out after ${ms}ms`));
  }, ms);
  if (parent.aborted) onParent();
  else parent.addEventListener("abort", onParent, { once: true });
  return {
    signal: controller.signal,
    get expired() {
      return expired || (!parent.aborted && performance.now() >= endsAt);
    },
    clear() {
      clearTimeout(timer);
      parent.removeEventListener("abort", onParent);
    },
  };
}
