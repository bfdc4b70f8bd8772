/**
 * The OOM score policy that follows from a pod's QoS class, as upstream's
 * pkg/kubelet/qos/policy.go decides it.
 *
 * @module
 */

import { isCriticalPod } from "../api/pod.ts";
import type { Container, Pod } from "../api/types.ts";
import { intValue } from "../api/quantity.ts";
import { podQOSClass } from "../api/qos.ts";

/** OOM score adjustment of Guaranteed and node-critical containers. */
export const GUARANTEED_OOM_SCORE_ADJ = -997;
/** OOM score adjustment of BestEffort containers. */
export const BEST_EFFORT_OOM_SCORE_ADJ = 1000;

/**
 * Whether the pod is node-critical (critical — static, mirror or priority ≥ system-critical — and
 * in the `system-node-critical` class), which upstream shields from the OOM killer.
 * @param pod the pod
 * @returns true when node-critical
 */
export function isNodeCriticalPod(pod: Pod): boolean {
  return isCriticalPod(pod) && pod.spec.priorityClassName === "system-node-critical";
}

/**
 * The oom_score_adj for a container, as upstream's GetContainerOOMScoreAdjust.
 * @param pod the pod
 * @param container the container
 * @param memoryCapacity the node's memory in bytes
 * @returns the score adjustment, -997..1000
 */
export function containerOOMScoreAdj(
  pod: Pod,
  container: Container,
  memoryCapacity: number,
): number {
  if (isNodeCriticalPod(pod)) return GUARANTEED_OOM_SCORE_ADJ;
  const qos = podQOSClass(pod);
  if (qos === "Guaranteed") return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === "BestEffort") return BEST_EFFORT_OOM_SCORE_ADJ;
  const memReq = container.resources?.requests?.memory ?? container.resources?.limits?.memory;
  const request = memReq === undefined ? 0 : intValue(memReq);
  // Go's integer division: the share is rounded down before it is taken from 1000.
  const adj = 1000 - Math.floor((1000 * request) / Math.max(1, memoryCapacity));
  // A Guaranteed pod using all memory scores about 3; keep burstable ones above it.
  if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  // Keep burstable containers more likely to survive than best-effort ones.
  if (adj === BEST_EFFORT_OOM_SCORE_ADJ) return adj - 1;
  return adj;
}
