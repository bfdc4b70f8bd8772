/**
 * Admission under node pressure (upstream managerImpl.Admit). Pure.
 *
 * @module
 */

import { isCriticalPod } from "../api/pod.ts";
import { podQOSClass } from "../api/qos.ts";
import { toleratesTaint } from "../api/scheduling.ts";
import type { Pod } from "../api/types.ts";
import type { PodAdmitResult } from "../admission/types.ts";
import { EVICTED_REASON, nodeConditionMessage } from "./message.ts";
import type { PressureCondition } from "./types.ts";

const MEMORY_PRESSURE_TAINT = {
  key: "node.kubernetes.io/memory-pressure",
  effect: "NoSchedule" as const,
};

/**
 * Upstream's Admit: with no pressure every pod; a critical pod always; under
 * memory pressure alone a pod that is not BestEffort, or a BestEffort one
 * tolerating node.kubernetes.io/memory-pressure:NoSchedule; under any other
 * condition no one.
 * @param conditions the pressure conditions the node reports
 * @param pod the pod
 * @returns the verdict (reason Evicted, "The node had condition: [...]. ")
 */
export function admitUnderPressure(
  conditions: readonly PressureCondition[],
  pod: Pod,
): PodAdmitResult {
  if (conditions.length === 0 || isCriticalPod(pod)) return { admit: true };
  if (conditions.length === 1 && conditions[0] === "MemoryPressure") {
    if (podQOSClass(pod) !== "BestEffort") return { admit: true };
    if ((pod.spec.tolerations ?? []).some((t) => toleratesTaint(t, MEMORY_PRESSURE_TAINT))) {
      return { admit: true };
    }
  }
  return { admit: false, reason: EVICTED_REASON, message: nodeConditionMessage(conditions) };
}
