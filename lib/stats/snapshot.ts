/**
 * {@link StatsSnapshot}: the node's, the pods' and the containers' figures at
 * one moment, as the stats provider (provider.ts) assembles them from the
 * housekeeping cache. The Summary API and both Prometheus renderers are built
 * from it, so it sits apart from the provider that makes it and from the
 * builders that read it.
 *
 * @module
 */

import type { CgroupStats } from "../cgroup/mod.ts";
import type { Sample } from "./housekeeping.ts";
import type { MachineInfo } from "./machine_info.ts";
import type { FsStats, InterfaceStats } from "./node.ts";
import type { PodVolumeUsage } from "./volume_stats.ts";

/** One cgroup's cached figures. */
export interface CgroupSnapshot {
  /** The cgroup path ("/" for the node), cAdvisor's container name and `id` label. */
  path: string;
  /** Newest sample; absent before the first housekeeping tick. */
  sample?: Sample;
  /** CPU rate from the two newest samples. */
  usageNanoCores?: number;
  /** Newest full reading (PSI averages, per-device IO). */
  stats?: CgroupStats;
}

/** Filesystem figures; any may be unknown. */
export type FsUsage = { timeMs: number } & Partial<FsStats>;

/** Interface counters at a time. */
export interface NetworkSnapshot {
  timeMs: number;
  interfaces: InterfaceStats[];
}

/** A running container. */
export interface ContainerSnapshot {
  id: string;
  name: string;
  image: string;
  /** Epoch ms the container started (created, when start is unknown). */
  startTimeMs: number;
  cgroup: CgroupSnapshot;
  /** The writable layer (ListContainerStats). */
  rootfs?: FsUsage;
  /** The files in the container's log directory. */
  logs?: FsUsage;
}

/** A pod with a ready sandbox or a running container. */
export interface PodSnapshot {
  uid: string;
  name: string;
  namespace: string;
  startTimeMs: number;
  cgroup: CgroupSnapshot;
  network?: NetworkSnapshot;
  containers: ContainerSnapshot[];
  /** The volumes' last figures (volume_stats.ts). */
  volumes?: PodVolumeUsage;
  /** Files at the top of the pod's log directory (not its containers'). */
  podLogs?: FsUsage;
  /** The pod's managed hosts file. */
  etcHosts?: FsUsage;
}

/** The Summary API's system containers. */
export interface SystemContainerSnapshot {
  name: "kubelet" | "runtime" | "pods";
  startTimeMs: number;
  cgroup: CgroupSnapshot;
}

/** The node. */
export interface NodeSnapshot {
  nodeName: string;
  /** Boot time, epoch ms: the root cgroup's start. */
  startTimeMs: number;
  cgroup: CgroupSnapshot;
  machine: MachineFacts;
  network?: NetworkSnapshot;
  fs?: FsUsage;
  imageFs?: FsUsage;
  containerFs?: FsUsage;
  rlimit?: { timeMs: number; maxPid?: number; curproc?: number };
  systemContainers: SystemContainerSnapshot[];
}

/** Everything the endpoints are built from. */
export interface StatsSnapshot {
  timeMs: number;
  node: NodeSnapshot;
  pods: PodSnapshot[];
}

/**
 * What the stats use of the machine's facts: the node's start, the Summary's
 * rlimit and available memory, and the cAdvisor `machine_*` series.
 */
export type MachineFacts = Pick<
  MachineInfo,
  | "bootTimeMs"
  | "maxPid"
  | "numCores"
  | "memoryCapacityBytes"
  | "bootID"
  | "machineID"
  | "systemUUID"
>;
