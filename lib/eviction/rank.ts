/**
 * The order pods are evicted in, per signal (upstream rankMemoryPressure,
 * rankDiskPressureFunc, rankPIDPressure and buildSignalToRankFunc): usage
 * above requests first, then lower priority, then larger usage above
 * requests. A pod without stats goes first. Pure.
 *
 * @module
 */

import { podRequests } from "../api/scheduling.ts";
import type { Pod, Volume } from "../api/types.ts";
import type { FsStats, PodSummary } from "../stats/summary_types.ts";
import type { Signal, StatsFunc } from "./types.ts";

/** Which of a pod's filesystem usage a disk signal counts (upstream fsStatsType). */
export type FsStatsType = "root" | "logs" | "localVolumeSource";

/** Sorts pods in place, first to be evicted first. */
export type RankFunc = (pods: Pod[], stats: StatsFunc) => void;

type Cmp = (a: Pod, b: Pod) => number;

/** true before false (upstream cmpBool). */
function cmpBool(a: boolean, b: boolean): number {
  return a === b ? 0 : a ? -1 : 1;
}

function orderedBy(...cmps: Cmp[]): (pods: Pod[]) => void {
  return (pods) =>
    pods.sort((a, b) => {
      for (const cmp of cmps) {
        const r = cmp(a, b);
        if (r !== 0) return r;
      }
      return 0;
    });
}

/** Lower priority first (upstream priority). */
function priority(a: Pod, b: Pod): number {
  const pa = a.spec.priority ?? 0;
  const pb = b.spec.priority ?? 0;
  return pa === pb ? 0 : pa > pb ? 1 : -1;
}

/** Compares with `by` when both pods have stats; a pod without goes first. */
function withStats(
  stats: StatsFunc,
  by: (a: PodSummary, b: PodSummary, pa: Pod, pb: Pod) => number,
): Cmp {
  return (pa, pb) => {
    const a = stats(pa);
    const b = stats(pb);
    if (!a || !b) return cmpBool(!a, !b);
    return by(a, b, pa, pb);
  };
}

function request(pod: Pod, resource: string): number {
  return podRequests(pod).get(resource) ?? 0;
}

function memoryUsage(s: PodSummary): number {
  return s.memory?.workingSetBytes ?? 0;
}

/**
 * Upstream rankMemoryPressure: pods over their memory request, then by
 * priority, then by working set above the request.
 */
export const rankMemoryPressure: RankFunc = (pods, stats) => {
  orderedBy(
    withStats(
      stats,
      (a, b, pa, pb) =>
        cmpBool(memoryUsage(a) > request(pa, "memory"), memoryUsage(b) > request(pb, "memory")),
    ),
    priority,
    withStats(stats, (a, b, pa, pb) => {
      const ua = memoryUsage(a) - request(pa, "memory");
      const ub = memoryUsage(b) - request(pb, "memory");
      return ua === ub ? 0 : ub > ua ? 1 : -1;
    }),
  )(pods);
};

/** Upstream rankPIDPressure: by priority, then most processes first. */
export const rankPIDPressure: RankFunc = (pods, stats) => {
  orderedBy(
    priority,
    withStats(
      stats,
      (a, b) => (b.process_stats?.process_count ?? 0) - (a.process_stats?.process_count ?? 0),
    ),
  )(pods);
};

/**
 * Upstream IsLocalEphemeralVolume, plus hostPath (localVolumeNames): the
 * volumes whose usage counts as the pod's local storage.
 */
function isLocalVolume(v: Volume): boolean {
  const source = v as Volume & { gitRepo?: unknown };
  return v.hostPath !== undefined || source.gitRepo !== undefined ||
    (v.emptyDir !== undefined && (v.emptyDir.medium ?? "") === "") || v.configMap !== undefined;
}

function used(fs: FsStats | undefined, resource: "ephemeral-storage" | "inodes"): number {
  return (resource === "inodes" ? fs?.inodesUsed : fs?.usedBytes) ?? 0;
}

/**
 * A pod's disk (bytes) or inode usage over the kinds measured (upstream podDiskUsage).
 * @param s the pod's stats
 * @param pod the pod
 * @param measure which usage counts
 * @param resource bytes or inodes
 * @returns the usage
 */
export function podDiskUsage(
  s: PodSummary,
  pod: Pod,
  measure: readonly FsStatsType[],
  resource: "ephemeral-storage" | "inodes",
): number {
  let total = 0;
  for (const c of s.containers) {
    if (measure.includes("root")) total += used(c.rootfs, resource);
    if (measure.includes("logs")) total += used(c.logs, resource);
  }
  if (measure.includes("localVolumeSource")) {
    for (const v of pod.spec.volumes ?? []) {
      if (!isLocalVolume(v)) continue;
      const stats = s.volume?.find((vs) => vs.name === v.name);
      total += used(stats, resource);
    }
  }
  return total;
}

/**
 * Upstream rankDiskPressureFunc: pods over their ephemeral-storage request,
 * then by priority, then by usage above the request.
 * @param measure which usage counts
 * @param resource bytes or inodes
 * @returns the rank function
 */
export function rankDiskPressure(
  measure: readonly FsStatsType[],
  resource: "ephemeral-storage" | "inodes",
): RankFunc {
  return (pods, stats) => {
    orderedBy(
      withStats(stats, (a, b, pa, pb) =>
        cmpBool(
          podDiskUsage(a, pa, measure, resource) > request(pa, resource),
          podDiskUsage(b, pb, measure, resource) > request(pb, resource),
        )),
      priority,
      withStats(stats, (a, b, pa, pb) => {
        const ua = podDiskUsage(a, pa, measure, resource) - request(pa, "ephemeral-storage");
        const ub = podDiskUsage(b, pb, measure, resource) - request(pb, "ephemeral-storage");
        return ua === ub ? 0 : ub > ua ? 1 : -1;
      }),
    )(pods);
  };
}

/**
 * The rank function of each signal (upstream buildSignalToRankFunc): with a
 * dedicated image filesystem nodefs counts logs and local volumes and
 * imagefs the writable layers; on one filesystem every signal counts all.
 * @param dedicatedImageFs the image filesystem is not the node's
 * @param splitContainerFs the writable layers are not on the image filesystem
 * @returns signal → rank function
 */
export function signalRankFuncs(
  dedicatedImageFs: boolean,
  splitContainerFs: boolean,
): Record<Signal, RankFunc> {
  const disk = (measure: FsStatsType[]) => ({
    bytes: rankDiskPressure(measure, "ephemeral-storage"),
    inodes: rankDiskPressure(measure, "inodes"),
  });
  let node, image, container;
  if (dedicatedImageFs && !splitContainerFs) {
    node = disk(["logs", "localVolumeSource"]);
    image = disk(["root"]);
    container = image;
  } else if (dedicatedImageFs && splitContainerFs) {
    node = disk(["logs", "localVolumeSource", "root"]);
    image = disk([]);
    container = node;
  } else {
    node = disk(["root", "logs", "localVolumeSource"]);
    image = node;
    container = node;
  }
  return {
    "memory.available": rankMemoryPressure,
    "allocatableMemory.available": rankMemoryPressure,
    "pid.available": rankPIDPressure,
    "nodefs.available": node.bytes,
    "nodefs.inodesFree": node.inodes,
    "imagefs.available": image.bytes,
    "imagefs.inodesFree": image.inodes,
    "containerfs.available": container.bytes,
    "containerfs.inodesFree": container.inodes,
  };
}
