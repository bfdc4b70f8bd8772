/**
 * Signals read off a Summary (upstream makeSignalObservations) and what each
 * signal means: the resource it reclaims and the node condition it raises.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import type { FsStats, PodSummary, Summary } from "../stats/summary_types.ts";
import type {
  Observation,
  Observations,
  PressureCondition,
  ReclaimResource,
  Signal,
  StatsFunc,
} from "./types.ts";

/** Each signal's resource (upstream signalToResource). */
export const SIGNAL_RESOURCE: Readonly<Record<Signal, ReclaimResource>> = {
  "memory.available": "memory",
  "allocatableMemory.available": "memory",
  "nodefs.available": "ephemeral-storage",
  "nodefs.inodesFree": "inodes",
  "imagefs.available": "ephemeral-storage",
  "imagefs.inodesFree": "inodes",
  "containerfs.available": "ephemeral-storage",
  "containerfs.inodesFree": "inodes",
  "pid.available": "pids",
};

/** Each signal's node condition (upstream signalToNodeCondition). */
export const SIGNAL_CONDITION: Readonly<Record<Signal, PressureCondition>> = {
  "memory.available": "MemoryPressure",
  "allocatableMemory.available": "MemoryPressure",
  "nodefs.available": "DiskPressure",
  "nodefs.inodesFree": "DiskPressure",
  "imagefs.available": "DiskPressure",
  "imagefs.inodesFree": "DiskPressure",
  "containerfs.available": "DiskPressure",
  "containerfs.inodesFree": "DiskPressure",
  "pid.available": "PIDPressure",
};

/** A metav1.Time string as epoch ms; undefined when absent or unparsable. */
function timeMs(time: string | undefined): number | undefined {
  if (time === undefined) return undefined;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}

function fsObservations(
  out: Observations,
  fs: FsStats | undefined,
  bytes: Signal,
  inodes: Signal,
): void {
  if (!fs) return;
  const at = timeMs(fs.time);
  if (fs.availableBytes !== undefined && fs.capacityBytes !== undefined) {
    out.set(bytes, obs(fs.availableBytes, fs.capacityBytes, at));
  }
  if (fs.inodesFree !== undefined && fs.inodes !== undefined) {
    out.set(inodes, obs(fs.inodesFree, fs.inodes, at));
  }
}

function obs(available: number, capacity: number, at: number | undefined): Observation {
  const o: Observation = { available, capacity };
  if (at !== undefined) o.timeMs = at;
  return o;
}

/**
 * The signals' observations in a Summary, as upstream: memory.available from
 * the node's available bytes and working set (their sum is the capacity),
 * allocatableMemory.available from the `pods` system container, the node,
 * image and container filesystems' bytes and inodes, and pid.available from
 * the rlimit block.
 * @param summary the Summary with filesystem stats
 * @returns the observations and a lookup of a pod's stats by UID
 */
export function makeSignalObservations(
  summary: Summary,
): { observations: Observations; stats: StatsFunc } {
  const byUID = new Map<string, PodSummary>();
  for (const p of summary.pods) byUID.set(p.podRef.uid, p);
  const stats: StatsFunc = (pod: Pod) => byUID.get(pod.metadata.uid ?? "");
  const out: Observations = new Map();
  const node = summary.node;
  const mem = node.memory;
  if (mem?.availableBytes !== undefined && mem.workingSetBytes !== undefined) {
    out.set(
      "memory.available",
      obs(mem.availableBytes, mem.availableBytes + mem.workingSetBytes, timeMs(mem.time)),
    );
  }
  const pods = node.systemContainers?.find((c) => c.name === "pods")?.memory;
  if (pods?.availableBytes !== undefined && pods.workingSetBytes !== undefined) {
    out.set(
      "allocatableMemory.available",
      obs(pods.availableBytes, pods.availableBytes + pods.workingSetBytes, timeMs(pods.time)),
    );
  }
  fsObservations(out, node.fs, "nodefs.available", "nodefs.inodesFree");
  fsObservations(out, node.runtime?.imageFs, "imagefs.available", "imagefs.inodesFree");
  fsObservations(
    out,
    node.runtime?.containerFs,
    "containerfs.available",
    "containerfs.inodesFree",
  );
  const rlimit = node.rlimit;
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) {
    out.set(
      "pid.available",
      obs(rlimit.maxpid - rlimit.curproc, rlimit.maxpid, timeMs(rlimit.time)),
    );
  }
  return { observations: out, stats };
}
