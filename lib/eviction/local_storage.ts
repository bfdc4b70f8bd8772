/**
 * Local storage limits (upstream localStorageEviction): a pod is evicted when
 * an emptyDir outgrows its `sizeLimit`, when the pod's ephemeral storage
 * outgrows the sum of its containers' `ephemeral-storage` limits, or when a
 * container's writable layer and logs outgrow its own limit — checked in that
 * order. Pure.
 *
 * @module
 */

import { isRestartableInitContainer } from "../api/pod.ts";
import { isValidQuantity, parseQuantity } from "../api/quantity.ts";
import { podLimits } from "../api/scheduling.ts";
import type { Container, Pod, Quantity } from "../api/types.ts";
import type { PodSummary } from "../stats/summary_types.ts";
import {
  canonicalQuantity,
  containerEphemeralStorageMessage,
  emptyDirMessage,
  formatAmount,
  podEphemeralStorageMessage,
} from "./message.ts";

/** Why a pod breaks a local storage limit, and which limit (the eviction metric's signal). */
export interface LocalStorageViolation {
  signal: "emptydirfs.limit" | "ephemeralpodfs.limit" | "ephemeralcontainerfs.limit";
  message: string;
}

function bytes(q: Quantity | undefined): number | undefined {
  return q !== undefined && isValidQuantity(q) ? parseQuantity(q) : undefined;
}

function emptyDirViolation(pod: Pod, stats: PodSummary): LocalStorageViolation | undefined {
  for (const v of pod.spec.volumes ?? []) {
    const limit = bytes(v.emptyDir?.sizeLimit);
    if (limit === undefined || limit <= 0) continue;
    const usedBytes = stats.volume?.find((s) => s.name === v.name)?.usedBytes;
    if (usedBytes !== undefined && usedBytes > limit) {
      return {
        signal: "emptydirfs.limit",
        message: emptyDirMessage(v.name, canonicalQuantity(v.emptyDir!.sizeLimit!)),
      };
    }
  }
  return undefined;
}

function podViolation(pod: Pod, stats: PodSummary): LocalStorageViolation | undefined {
  const limit = podLimits(pod).get("ephemeral-storage");
  if (limit === undefined) return undefined;
  const usage = stats["ephemeral-storage"]?.usedBytes ?? 0;
  if (usage <= limit) return undefined;
  const first = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]
    .map((c) => c.resources?.limits?.["ephemeral-storage"])
    .find((q) => q !== undefined);
  const binary = typeof first !== "string" || /[KMGTPE]i$/.test(first.trim());
  return {
    signal: "ephemeralpodfs.limit",
    message: podEphemeralStorageMessage(formatAmount(limit, binary)),
  };
}

function containerViolation(
  pod: Pod,
  stats: PodSummary,
  dedicatedImageFs: boolean,
): LocalStorageViolation | undefined {
  const limited = new Map<string, Quantity>();
  const consider = (c: Container) => {
    const q = c.resources?.limits?.["ephemeral-storage"];
    if (q !== undefined && bytes(q) !== 0) limited.set(c.name, q);
  };
  pod.spec.containers.forEach(consider);
  (pod.spec.initContainers ?? []).filter(isRestartableInitContainer).forEach(consider);
  for (const cs of stats.containers) {
    const q = limited.get(cs.name);
    if (q === undefined) continue;
    let usage = cs.logs?.usedBytes ?? 0;
    if (!dedicatedImageFs) usage += cs.rootfs?.usedBytes ?? 0;
    if ((bytes(q) ?? 0) < usage) {
      return {
        signal: "ephemeralcontainerfs.limit",
        message: containerEphemeralStorageMessage(cs.name, canonicalQuantity(q)),
      };
    }
  }
  return undefined;
}

/**
 * The first local storage limit the pod breaks, in upstream's order.
 * @param pod the pod
 * @param stats its stats
 * @param dedicatedImageFs writable layers are on their own filesystem (then they do not count)
 * @returns the violation, or undefined
 */
export function localStorageViolation(
  pod: Pod,
  stats: PodSummary,
  dedicatedImageFs: boolean,
): LocalStorageViolation | undefined {
  return emptyDirViolation(pod, stats) ?? podViolation(pod, stats) ??
    containerViolation(pod, stats, dedicatedImageFs);
}
