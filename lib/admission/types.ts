/**
 * The contract of a pod admission check, as upstream's lifecycle.PodAdmitHandler.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";

/** A check's verdict: admitted, or refused with upstream's reason and message. */
export type PodAdmitResult =
  | { admit: true }
  | { admit: false; reason: string; message: string };

/** Decides whether a new pod may run on this node; pure and fast, never throws. */
export interface PodAdmitHandler {
  /**
   * @param pod the pod as its source gave it
   * @param otherPods the pods already admitted and still active (upstream's
   *   PodAdmitAttributes.OtherPods)
   * @returns the verdict
   */
  admit(pod: Pod, otherPods: readonly Pod[]): PodAdmitResult;
}
