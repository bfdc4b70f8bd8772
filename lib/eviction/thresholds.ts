/**
 * Thresholds as upstream's eviction helpers handle them: built from the
 * configuration (ParseThresholdConfig, UpdateContainerFsThresholds), met or
 * not against observations (with minimum reclaim), their grace periods, and
 * the node conditions they raise with the pressure transition period. Pure.
 *
 * @module
 */

import { parseEvictionThresholds, parseMinimumReclaims } from "../options/validation.ts";
import { parseSignedDuration } from "../util/duration.ts";
import { SIGNAL_CONDITION, SIGNAL_RESOURCE } from "./signals.ts";
import type {
  Observations,
  PressureCondition,
  ReclaimResource,
  Signal,
  Threshold,
  ThresholdValue,
} from "./types.ts";

/** The eviction settings of a KubeletConfiguration. */
export interface ThresholdSettings {
  evictionHard: Readonly<Record<string, string>>;
  evictionSoft: Readonly<Record<string, string>>;
  evictionSoftGracePeriod: Readonly<Record<string, string>>;
  evictionMinimumReclaim: Readonly<Record<string, string>>;
  /** enforceNodeAllocatable holds "pods": the hard memory threshold is copied to allocatableMemory.available. */
  enforcePodsAllocatable: boolean;
}

function statements(
  map: Readonly<Record<string, string>>,
  field: string,
  gracePeriodMs: (signal: string) => number,
): Threshold[] {
  return parseEvictionThresholds(map, field)
    // Upstream ignores 100% as it ignores 0%.
    .filter((t) => t.percentage !== 1)
    .map((t) => {
      const value: ThresholdValue = {};
      if (t.quantity !== undefined) {
        value.quantity = t.quantity;
        value.raw = map[t.signal]!.trim();
      }
      if (t.percentage !== undefined) value.percentage = t.percentage;
      return { signal: t.signal as Signal, value, gracePeriodMs: gracePeriodMs(t.signal) };
    });
}

/**
 * The thresholds of a configuration (upstream ParseThresholdConfig): hard
 * ones, soft ones with their grace periods, minimum reclaims on both, and a
 * copy of the hard memory.available threshold for allocatableMemory.available
 * when pods' allocatable is enforced.
 * @param s the settings
 * @returns the thresholds
 * @throws {Error} on a bad signal or value, or a soft threshold without a grace period
 */
export function parseThresholdConfig(s: ThresholdSettings): Threshold[] {
  const hard = statements(s.evictionHard, "evictionHard", () => 0);
  const soft = statements(s.evictionSoft, "evictionSoft", (signal) => {
    const grace = s.evictionSoftGracePeriod[signal];
    if (grace === undefined) {
      throw new Error(`grace period must be specified for the soft eviction threshold ${signal}`);
    }
    const ms = parseSignedDuration(grace);
    if (ms < 0) {
      throw new Error(
        `invalid eviction grace period specified: ${grace}, must be a positive value`,
      );
    }
    return ms;
  });
  const out = [...hard, ...soft];
  const reclaims = parseMinimumReclaims(s.evictionMinimumReclaim);
  for (const t of out) {
    const r = reclaims.get(t.signal);
    if (r) t.minReclaim = { ...r };
  }
  if (s.enforcePodsAllocatable) {
    for (const t of [...out]) {
      if (t.signal !== "memory.available" || t.gracePeriodMs !== 0) continue;
      const copy: Threshold = {
        signal: "allocatableMemory.available",
        value: { ...t.value },
        gracePeriodMs: 0,
      };
      if (t.minReclaim) copy.minReclaim = t.minReclaim;
      out.push(copy);
    }
  }
  return out;
}

/**
 * Upstream UpdateContainerFsThresholds: containerfs.* thresholds are not the
 * user's to set; they copy nodefs.* (one filesystem, or a split where the
 * writable layers sit with the node's) or imagefs.* (a dedicated image
 * filesystem that holds the writable layers too).
 * @param thresholds the configured thresholds
 * @param dedicatedImageFs the image filesystem is not the node's
 * @param splitContainerFs the writable layers are not on the image filesystem
 * @returns the thresholds with containerfs.* replaced
 */
export function updateContainerFsThresholds(
  thresholds: readonly Threshold[],
  dedicatedImageFs: boolean,
  splitContainerFs: boolean,
): Threshold[] {
  const out = thresholds.filter((t) =>
    t.signal !== "containerfs.available" && t.signal !== "containerfs.inodesFree"
  );
  const from = dedicatedImageFs && !splitContainerFs ? "imagefs" : "nodefs";
  for (const t of [...out]) {
    if (t.signal === `${from}.available`) out.push({ ...t, signal: "containerfs.available" });
    if (t.signal === `${from}.inodesFree`) out.push({ ...t, signal: "containerfs.inodesFree" });
  }
  return out;
}

/** A hard threshold evicts at once (upstream isHardEvictionThreshold). */
export function isHardThreshold(t: Threshold): boolean {
  return t.gracePeriodMs === 0;
}

/**
 * The amount a threshold value stands for (upstream GetThresholdQuantity).
 * @param value the value
 * @param capacity the signal's capacity
 * @returns the absolute amount
 */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  if (value.quantity !== undefined) return value.quantity;
  return Math.trunc(capacity * (value.percentage ?? 0));
}

/** A stable identity for a threshold (upstream keys maps by the struct). */
export function thresholdKey(t: Threshold): string {
  const v = (x: ThresholdValue | undefined) => x ? `${x.quantity ?? ""}/${x.percentage ?? ""}` : "";
  return `${t.signal}|${t.gracePeriodMs}|${v(t.value)}|${v(t.minReclaim)}`;
}

/**
 * The thresholds met by the observations, grace periods aside (upstream
 * thresholdsMet); with `enforceMinReclaim`, a threshold stays met until its
 * minimum reclaim is available on top of it.
 * @param thresholds the thresholds
 * @param observations the observations
 * @param enforceMinReclaim compare against value + minimum reclaim
 * @returns the thresholds met (those without an observation are not)
 */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: Observations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const observed = observations.get(t.signal);
    if (!observed) return false;
    let quantity = thresholdQuantity(t.value, observed.capacity);
    if (enforceMinReclaim && t.minReclaim) {
      quantity += thresholdQuantity(t.minReclaim, observed.capacity);
    }
    return quantity > observed.available;
  });
}

/**
 * Both lists without duplicates (upstream mergeThresholds).
 * @param a the first list
 * @param b the second list
 * @returns a, then what of b is not in a
 */
export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const keys = new Set(a.map(thresholdKey));
  return [...a, ...b.filter((t) => !keys.has(thresholdKey(t)))];
}

/** When each met threshold was first observed met (epoch ms), by {@link thresholdKey}. */
export type ThresholdsObservedAt = Map<string, { threshold: Threshold; at: number }>;

/**
 * Upstream thresholdsFirstObservedAt: a threshold met before keeps its time.
 * @param thresholds the thresholds met now
 * @param last the previous record
 * @param now epoch ms
 * @returns the new record, holding only the thresholds met now
 */
export function thresholdsFirstObservedAt(
  thresholds: readonly Threshold[],
  last: ThresholdsObservedAt,
  now: number,
): ThresholdsObservedAt {
  const out: ThresholdsObservedAt = new Map();
  for (const t of thresholds) {
    const key = thresholdKey(t);
    out.set(key, { threshold: t, at: last.get(key)?.at ?? now });
  }
  return out;
}

/**
 * The thresholds met for at least their grace period (upstream thresholdsMetGracePeriod).
 * @param observedAt when each was first met
 * @param now epoch ms
 * @returns those thresholds
 */
export function thresholdsMetGracePeriod(
  observedAt: ThresholdsObservedAt,
  now: number,
): Threshold[] {
  return [...observedAt.values()]
    .filter(({ threshold, at }) => now - at >= threshold.gracePeriodMs)
    .map(({ threshold }) => threshold);
}

/**
 * The node conditions the thresholds raise, each once (upstream nodeConditions).
 * @param thresholds the thresholds met
 * @returns the conditions, in the thresholds' order
 */
export function nodeConditions(thresholds: readonly Threshold[]): PressureCondition[] {
  const out: PressureCondition[] = [];
  for (const t of thresholds) {
    const c = SIGNAL_CONDITION[t.signal];
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

/**
 * Upstream nodeConditionsLastObservedAt: the conditions seen now at `now`,
 * the others at their last time.
 * @param conditions the conditions observed now
 * @param last the previous record
 * @param now epoch ms
 * @returns the new record
 */
export function nodeConditionsLastObservedAt(
  conditions: readonly PressureCondition[],
  last: ReadonlyMap<PressureCondition, number>,
  now: number,
): Map<PressureCondition, number> {
  const out = new Map(last);
  for (const c of conditions) out.set(c, now);
  return out;
}

/**
 * The conditions observed within the transition period (upstream
 * nodeConditionsObservedSince): a condition stays reported that long after
 * its last observation.
 * @param observedAt when each condition was last observed
 * @param periodMs evictionPressureTransitionPeriod
 * @param now epoch ms
 * @returns the conditions to report
 */
export function nodeConditionsObservedSince(
  observedAt: ReadonlyMap<PressureCondition, number>,
  periodMs: number,
  now: number,
): PressureCondition[] {
  return [...observedAt].filter(([, at]) => now - at < periodMs).map(([c]) => c);
}

/**
 * The thresholds whose signal was sampled again since the last round
 * (upstream thresholdsUpdatedStats): stale stats never evict twice.
 * @param thresholds the thresholds met
 * @param observations this round's observations
 * @param last the previous round's
 * @returns the thresholds with fresh observations
 */
export function thresholdsUpdatedStats(
  thresholds: readonly Threshold[],
  observations: Observations,
  last: Observations,
): Threshold[] {
  return thresholds.filter((t) => {
    const observed = observations.get(t.signal);
    if (!observed) return false;
    const previous = last.get(t.signal);
    return !previous || observed.timeMs === undefined ||
      observed.timeMs > (previous.timeMs ?? -Infinity);
  });
}

/**
 * Memory thresholds first (upstream byEvictionPriority), otherwise in order.
 * @param thresholds the thresholds
 * @returns a sorted copy
 */
export function byEvictionPriority(thresholds: readonly Threshold[]): Threshold[] {
  const rank = (t: Threshold) => SIGNAL_RESOURCE[t.signal] === "memory" ? 0 : 1;
  return [...thresholds].sort((a, b) => rank(a) - rank(b));
}

/**
 * The first threshold with a resource to reclaim (upstream getReclaimableThreshold).
 * @param thresholds the thresholds, in eviction priority
 * @returns it and its resource, or undefined
 */
export function reclaimableThreshold(
  thresholds: readonly Threshold[],
): { threshold: Threshold; resource: ReclaimResource } | undefined {
  const t = thresholds[0];
  return t ? { threshold: t, resource: SIGNAL_RESOURCE[t.signal] } : undefined;
}
