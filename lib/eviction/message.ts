/**
 * The words of an eviction, upstream's byte for byte: the pod status reason
 * `Evicted`, the message for resource pressure (with the threshold, what was
 * available, and each container over its request), the admission refusal
 * under a node condition, and the local-storage limit messages. Quantities
 * print as upstream's Quantity.String() does.
 *
 * @module
 */

import { isValidQuantity, parseQuantity } from "../api/quantity.ts";
import type { Pod, PodCondition, PodStatus, Quantity } from "../api/types.ts";
import { thresholdQuantity } from "./thresholds.ts";
import { SIGNAL_RESOURCE } from "./signals.ts";
import type {
  Observations,
  PressureCondition,
  ReclaimResource,
  StatsFunc,
  Threshold,
} from "./types.ts";

/** The status reason of an evicted pod, and of a pod refused under node pressure. */
export const EVICTED_REASON = "Evicted";

const BINARY = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const DECIMAL = ["", "k", "M", "G", "T", "P", "E"];

/**
 * An integer amount as upstream's NewQuantity(n, format).String(): the
 * largest suffix that divides it.
 * @param n the amount
 * @param binary BinarySI (bytes) rather than DecimalSI (inodes, pids)
 * @returns the quantity text
 */
export function formatAmount(n: number, binary: boolean): string {
  if (n === 0) return "0";
  const base = binary ? 1024 : 1000;
  const suffixes = binary ? BINARY : DECIMAL;
  let value = n;
  let i = 0;
  while (i < suffixes.length - 1 && value % base === 0) {
    value /= base;
    i++;
  }
  return `${value}${suffixes[i]}`;
}

/**
 * A quantity as written, in upstream's canonical form ("1024Mi" → "1Gi",
 * "1000M" → "1G"): its format (binary or decimal) follows its suffix.
 * @param q the quantity
 * @returns the canonical text
 */
export function canonicalQuantity(q: Quantity): string {
  if (!isValidQuantity(q)) return String(q);
  const binary = typeof q === "string" && /[KMGTPE]i$/.test(q.trim());
  const value = parseQuantity(q);
  return Number.isInteger(value) ? formatAmount(value, binary) : String(q);
}

function isBytes(resource: ReclaimResource): boolean {
  return resource === "memory" || resource === "ephemeral-storage";
}

/**
 * Upstream getThresholdMetInfo: the first met threshold for the resource,
 * as its quantity and what was available.
 */
function thresholdMetInfo(
  resource: ReclaimResource,
  thresholds: readonly Threshold[],
  observations: Observations,
): { quantity: string; available: string } | undefined {
  for (const t of thresholds) {
    if (SIGNAL_RESOURCE[t.signal] !== resource) continue;
    const observed = observations.get(t.signal);
    if (!observed) continue;
    const quantity = t.value.raw !== undefined
      ? canonicalQuantity(t.value.raw)
      : formatAmount(thresholdQuantity(t.value, observed.capacity), isBytes(resource));
    return { quantity, available: formatAmount(observed.available, isBytes(resource)) };
  }
  return undefined;
}

/**
 * The message of an eviction for resource pressure (upstream
 * evictionMessage): the starved resource, the threshold and what was
 * available, and each container whose usage exceeded its request.
 * @param resource the resource being reclaimed
 * @param pod the pod evicted
 * @param stats the pods' stats
 * @param thresholds the thresholds met
 * @param observations this round's observations
 * @returns the message and the event's annotations
 */
export function evictionMessage(
  resource: ReclaimResource,
  pod: Pod,
  stats: StatsFunc,
  thresholds: readonly Threshold[],
  observations: Observations,
): { message: string; annotations: Record<string, string> } {
  let message = `The node was low on resource: ${resource}. `;
  const met = thresholdMetInfo(resource, thresholds, observations);
  if (met) message += `Threshold quantity: ${met.quantity}, available: ${met.available}. `;
  const podStats = stats(pod);
  if (!podStats) return { message, annotations: {} };
  const offending: string[] = [];
  const usages: string[] = [];
  const containers = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  for (const cs of podStats.containers) {
    const container = containers.find((c) => c.name === cs.name);
    if (!container) continue;
    const requestQ = container.resources?.requests?.[resource];
    const request = requestQ !== undefined && isValidQuantity(requestQ)
      ? parseQuantity(requestQ)
      : 0;
    let usage: number | undefined;
    if (resource === "ephemeral-storage") {
      const root = cs.rootfs?.usedBytes;
      const logs = cs.logs?.usedBytes;
      if (root !== undefined && logs !== undefined) usage = root + logs;
    } else if (resource === "memory") {
      usage = cs.memory?.workingSetBytes;
    }
    if (usage === undefined || usage <= request) continue;
    const usageText = formatAmount(usage, true);
    const requestText = requestQ !== undefined ? canonicalQuantity(requestQ) : "0";
    message +=
      `Container ${container.name} was using ${usageText}, request is ${requestText}, has larger consumption of ${resource}. `;
    offending.push(container.name);
    usages.push(usageText);
  }
  return {
    message,
    annotations: {
      offending_containers: offending.join(","),
      offending_containers_usage: usages.join(","),
      starved_resource: resource,
    },
  };
}

/**
 * The admission refusal under node pressure (upstream nodeConditionMessageFmt
 * with Go's %v of the condition list).
 * @param conditions the node's pressure conditions
 * @returns the message
 */
export function nodeConditionMessage(conditions: readonly PressureCondition[]): string {
  return `The node had condition: [${conditions.join(" ")}]. `;
}

/** An emptyDir over its sizeLimit (upstream emptyDirMessageFmt). */
export function emptyDirMessage(volume: string, limit: string): string {
  return `Usage of EmptyDir volume ${JSON.stringify(volume)} exceeds the limit ${
    JSON.stringify(limit)
  }. `;
}

/** A pod over the sum of its containers' ephemeral-storage limits (upstream podEphemeralStorageMessageFmt). */
export function podEphemeralStorageMessage(limit: string): string {
  return `Pod ephemeral local storage usage exceeds the total limit of containers ${limit}. `;
}

/** A container over its ephemeral-storage limit (upstream containerEphemeralStorageMessageFmt). */
export function containerEphemeralStorageMessage(container: string, limit: string): string {
  return `Container ${container} exceeded its local ephemeral storage limit ${
    JSON.stringify(limit)
  }. `;
}

/**
 * Sets an evicted pod's status (upstream evictPod's status function): phase
 * Failed, reason Evicted, the message, and the DisruptionTarget condition
 * when given.
 * @param status the status the terminating sync generated (modified)
 * @param message the eviction's message
 * @param condition the DisruptionTarget condition, if any
 * @param now RFC 3339 time for the condition's lastTransitionTime
 */
export function markEvicted(
  status: PodStatus,
  message: string,
  condition: PodCondition | undefined,
  now: string,
): void {
  status.phase = "Failed";
  status.reason = EVICTED_REASON;
  status.message = message;
  if (!condition) return;
  const rest = (status.conditions ?? []).filter((c) => c.type !== condition.type);
  status.conditions = [...rest, { ...condition, lastTransitionTime: now }];
}
