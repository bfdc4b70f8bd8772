/**
 * Summary API fixtures (lib/stats/summary_types.ts) for tests of what reads a
 * Summary (the eviction manager): a node with memory, filesystems and rlimit,
 * and pods with memory, disk and process figures.
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import type { ContainerSummary, PodSummary, Summary } from "../../lib/stats/summary_types.ts";

/** What {@link testSummary} puts on the node; every field optional. */
export interface TestNodeFigures {
  /** When sampled (epoch ms); default 0. */
  timeMs?: number;
  memoryAvailable?: number;
  memoryWorkingSet?: number;
  /** The `pods` system container's available memory and working set. */
  podsAvailable?: number;
  podsWorkingSet?: number;
  nodefs?: { available: number; capacity: number; inodesFree?: number; inodes?: number };
  imagefs?: { available: number; capacity: number };
  maxPid?: number;
  curproc?: number;
}

/** A pod's figures for {@link podSummary}. */
export interface TestPodFigures {
  /** Working set of the pod, bytes. */
  memory?: number;
  /** Per container: working set, writable layer and log usage. */
  containers?: Record<string, { memory?: number; rootfs?: number; logs?: number }>;
  /** Volume name → used bytes. */
  volumes?: Record<string, number>;
  ephemeralStorage?: number;
  processes?: number;
}

/**
 * A pod's entry in a Summary.
 * @param pod the pod (its name, namespace and UID)
 * @param f its figures
 * @param time the sample time (RFC 3339)
 */
export function podSummary(
  pod: Pod,
  f: TestPodFigures,
  time = new Date(0).toISOString(),
): PodSummary {
  const containers: ContainerSummary[] = Object.entries(f.containers ?? {}).map(([name, c]) => {
    const out: ContainerSummary = { name, startTime: time };
    if (c.memory !== undefined) out.memory = { time, workingSetBytes: c.memory };
    if (c.rootfs !== undefined) out.rootfs = { time, usedBytes: c.rootfs };
    if (c.logs !== undefined) out.logs = { time, usedBytes: c.logs };
    return out;
  });
  const out: PodSummary = {
    podRef: {
      name: pod.metadata.name ?? "",
      namespace: pod.metadata.namespace ?? "default",
      uid: pod.metadata.uid ?? "",
    },
    startTime: time,
    containers,
  };
  if (f.memory !== undefined) out.memory = { time, workingSetBytes: f.memory };
  if (f.volumes) {
    out.volume = Object.entries(f.volumes).map(([name, usedBytes]) => ({ time, name, usedBytes }));
  }
  if (f.ephemeralStorage !== undefined) {
    out["ephemeral-storage"] = { time, usedBytes: f.ephemeralStorage };
  }
  if (f.processes !== undefined) out.process_stats = { process_count: f.processes };
  return out;
}

/**
 * A Summary with the node figures given and the pods' entries.
 * @param node the node's figures
 * @param pods the pods' entries
 */
export function testSummary(node: TestNodeFigures, pods: PodSummary[] = []): Summary {
  const time = new Date(node.timeMs ?? 0).toISOString().replace(/\.\d{3}Z$/, "Z");
  const summary: Summary = { node: { nodeName: "testnode", startTime: time }, pods };
  const n = summary.node;
  if (node.memoryAvailable !== undefined || node.memoryWorkingSet !== undefined) {
    n.memory = { time };
    if (node.memoryAvailable !== undefined) n.memory.availableBytes = node.memoryAvailable;
    if (node.memoryWorkingSet !== undefined) n.memory.workingSetBytes = node.memoryWorkingSet;
  }
  if (node.podsAvailable !== undefined && node.podsWorkingSet !== undefined) {
    n.systemContainers = [{
      name: "pods",
      startTime: time,
      memory: { time, availableBytes: node.podsAvailable, workingSetBytes: node.podsWorkingSet },
    }];
  }
  if (node.nodefs) {
    n.fs = { time, availableBytes: node.nodefs.available, capacityBytes: node.nodefs.capacity };
    if (node.nodefs.inodes !== undefined) {
      n.fs.inodes = node.nodefs.inodes;
      n.fs.inodesFree = node.nodefs.inodesFree ?? 0;
    }
  }
  if (node.imagefs) {
    n.runtime = {
      imageFs: {
        time,
        availableBytes: node.imagefs.available,
        capacityBytes: node.imagefs.capacity,
      },
    };
  }
  if (node.maxPid !== undefined) {
    n.rlimit = { time, maxpid: node.maxPid };
    if (node.curproc !== undefined) n.rlimit.curproc = node.curproc;
  }
  return summary;
}
