/**
 * Runs the admit handlers in order, as upstream's canAdmitPod.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import type { PodAdmitHandler, PodAdmitResult } from "./types.ts";

/**
 * The first refusal among the handlers, or admitted.
 * @param handlers the node's admit handlers, in upstream's order
 * @param pod the pod being admitted
 * @param otherPods the pods already admitted and still active
 * @returns the verdict
 */
export function canAdmitPod(
  handlers: readonly PodAdmitHandler[],
  pod: Pod,
  otherPods: readonly Pod[] = [],
): PodAdmitResult {
  for (const h of handlers) {
    const result = h.admit(pod, otherPods);
    if (!result.admit) return result;
  }
  return { admit: true };
}
