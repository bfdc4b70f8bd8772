/**
 * A pod's QoS class, as upstream's `GetPodQOS` (pkg/apis/core/v1/helper/qos)
 * decides it from the cpu and memory requests and limits of all containers.
 *
 * @module
 */

import type { Container, Pod, Quantity } from "./types.ts";
import { isValidQuantity, milliValue } from "./quantity.ts";

/** The QoS classes. */
export type QOSClass = "Guaranteed" | "Burstable" | "BestEffort";

const QOS_RESOURCES = ["cpu", "memory"] as const;

/** Positive cpu/memory amounts of a resource list, in milli-units ("1" = "1000m"). */
function positive(list: Record<string, Quantity> | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of QOS_RESOURCES) {
    const raw = list?.[name];
    if (raw === undefined || !isValidQuantity(raw)) continue;
    const value = milliValue(raw);
    if (value > 0) out.set(name, value);
  }
  return out;
}

function addInto(total: Map<string, number>, part: Map<string, number>): void {
  for (const [name, value] of part) total.set(name, (total.get(name) ?? 0) + value);
}

/**
 * Computes the pod's QoS class. Requests missing for a resource that has a
 * limit default to the limit, as API defaulting does.
 * @param pod the pod
 * @returns Guaranteed, Burstable or BestEffort
 */
export function podQOSClass(pod: Pod): QOSClass {
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  const all: Container[] = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  for (const c of all) {
    const lim = positive(c.resources?.limits);
    const req = positive({ ...c.resources?.limits, ...c.resources?.requests });
    addInto(requests, req);
    addInto(limits, lim);
    if (!lim.has("cpu") || !lim.has("memory")) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return "BestEffort";
  if (guaranteed) {
    for (const [name, req] of requests) {
      if (limits.get(name) !== req) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && requests.size === limits.size ? "Guaranteed" : "Burstable";
}
