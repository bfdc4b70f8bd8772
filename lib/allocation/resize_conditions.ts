/**
 * The two resize conditions the kubelet reports, kept per pod as upstream's
 * status manager keeps them (`podResizeConditions`):
 *
 * ```
 *  PodResizePending     resize asked, not allocated: reason Deferred (may fit
 *                       later, retried) or Infeasible (never on this node)
 *  PodResizeInProgress  allocated, not yet actuated by the runtime; reason
 *                       Error (message from the runtime) when actuation failed
 * ```
 *
 * Both are `status: "True"` while present and are removed, not set False,
 * when the resize moves on.
 *
 * @module
 */

import type { PodCondition } from "../api/types.ts";
import type { Clock } from "../util/clock.ts";
import { metaTime } from "../util/time.ts";

/** Upstream's `v1.PodReasonDeferred`. */
export const REASON_DEFERRED = "Deferred";
/** Upstream's `v1.PodReasonInfeasible`. */
export const REASON_INFEASIBLE = "Infeasible";
/** Upstream's `v1.PodReasonError`. */
export const REASON_ERROR = "Error";

/** The condition types. */
export const PodResizePending = "PodResizePending";
export const PodResizeInProgress = "PodResizeInProgress";

interface Pair {
  pending?: PodCondition;
  inProgress?: PodCondition;
}

/** Per pod, its PodResizePending and PodResizeInProgress conditions. */
export class PodResizeConditions {
  readonly #clock: Clock;
  readonly #pods = new Map<string, Pair>();

  /** @param clock the time conditions are stamped with */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * The pod's resize conditions, pending first (upstream's `List`).
   * @param uid the pod UID
   * @returns copies; empty when no resize is pending or in progress
   */
  list(uid: string): PodCondition[] {
    const pair = this.#pods.get(uid);
    return [pair?.pending, pair?.inProgress].filter((c): c is PodCondition => c !== undefined)
      .map((c) => ({ ...c }));
  }

  /**
   * Sets PodResizePending (upstream `SetPodResizePendingCondition`): any
   * reason but Infeasible is reported as Deferred.
   * @param uid the pod UID
   * @param reason the admission failure's reason
   * @param message its message
   * @param generation the pod generation the decision was made for
   * @returns true when the condition is new or its reason or generation changed
   */
  setPending(uid: string, reason: string, message: string, generation: number): boolean {
    const pair = this.#pods.get(uid) ?? {};
    const effective = reason === REASON_INFEASIBLE ? REASON_INFEASIBLE : REASON_DEFERRED;
    const previous = pair.pending;
    pair.pending = this.#condition(PodResizePending, previous, effective, message, generation);
    this.#pods.set(uid, pair);
    return previous === undefined || previous.reason !== effective ||
      previous.observedGeneration !== generation;
  }

  /**
   * Sets PodResizeInProgress (upstream `SetPodResizeInProgressCondition`):
   * an existing condition keeps its generation, and its reason and message
   * unless new ones are given.
   * @param uid the pod UID
   * @param reason "" or Error
   * @param message the error, or ""
   * @param generation the pod generation being actuated
   * @returns the condition's generation and whether it changed
   */
  setInProgress(
    uid: string,
    reason: string,
    message: string,
    generation: number,
  ): { generation: number; changed: boolean } {
    const pair = this.#pods.get(uid) ?? {};
    const previous = pair.inProgress;
    if (previous) {
      if (reason === "" && message === "") {
        reason = previous.reason ?? "";
        message = previous.message ?? "";
      }
      generation = previous.observedGeneration ?? generation;
    }
    pair.inProgress = this.#condition(PodResizeInProgress, previous, reason, message, generation);
    this.#pods.set(uid, pair);
    const changed = previous === undefined || previous.reason !== pair.inProgress.reason ||
      previous.message !== pair.inProgress.message;
    return { generation, changed };
  }

  /**
   * Clears PodResizePending.
   * @param uid the pod UID
   */
  clearPending(uid: string): void {
    const pair = this.#pods.get(uid);
    if (pair) delete pair.pending;
  }

  /**
   * Clears PodResizeInProgress.
   * @param uid the pod UID
   * @returns the cleared condition's generation, or undefined when there was none
   */
  clearInProgress(uid: string): number | undefined {
    const pair = this.#pods.get(uid);
    const cond = pair?.inProgress;
    if (!pair || !cond) return undefined;
    delete pair.inProgress;
    return cond.observedGeneration ?? 0;
  }

  /**
   * Whether the pod's resize waits with this reason.
   * @param uid the pod UID
   * @param reason Deferred or Infeasible
   */
  isPending(uid: string, reason: string): boolean {
    return this.#pods.get(uid)?.pending?.reason === reason;
  }

  /**
   * Forgets a pod.
   * @param uid the pod UID
   */
  remove(uid: string): void {
    this.#pods.delete(uid);
  }

  #condition(
    type: string,
    previous: PodCondition | undefined,
    reason: string,
    message: string,
    generation: number,
  ): PodCondition {
    const now = metaTime(this.#clock.now());
    const condition: PodCondition = {
      type,
      status: "True",
      lastProbeTime: now,
      lastTransitionTime: previous && previous.reason === reason && previous.lastTransitionTime
        ? previous.lastTransitionTime
        : now,
      observedGeneration: generation,
    };
    if (reason) condition.reason = reason;
    if (message) condition.message = message;
    return condition;
  }
}
