/**
 * The Summary API's JSON shapes (k8s.io/kubelet/pkg/apis/stats/v1alpha1),
 * field for field: the same JSON names, units (ns, nanocores, bytes) and
 * omitempty behaviour (an optional property is absent, never null). Times are
 * metav1.Time strings (RFC 3339, whole seconds, UTC).
 *
 * @module
 */

/** `Summary`: what `/stats/summary` returns. */
export interface Summary {
  node: NodeSummary;
  pods: PodSummary[];
}

/** `NodeStats`. */
export interface NodeSummary {
  nodeName: string;
  systemContainers?: ContainerSummary[];
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  io?: IOStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: RlimitStats;
  swap?: SwapStats;
}

/** `RlimitStats`. */
export interface RlimitStats {
  time: string;
  maxpid?: number;
  curproc?: number;
}

/** `RuntimeStats`. */
export interface RuntimeStats {
  imageFs?: FsStats;
  containerFs?: FsStats;
}

/** `ProcessStats`. */
export interface ProcessStats {
  process_count?: number;
}

/** `PodStats`. */
export interface PodSummary {
  podRef: PodReference;
  startTime: string;
  containers: ContainerSummary[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  io?: IOStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  "ephemeral-storage"?: FsStats;
  process_stats?: ProcessStats;
  swap?: SwapStats;
}

/** `ContainerStats`. */
export interface ContainerSummary {
  name: string;
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  io?: IOStats;
  rootfs?: FsStats;
  logs?: FsStats;
  swap?: SwapStats;
}

/** `PodReference`. */
export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

/** `InterfaceStats`. */
export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** `NetworkStats`: the default interface inline, plus every interface. */
export interface NetworkStats extends InterfaceStats {
  time: string;
  interfaces?: InterfaceStats[];
}

/** `PSIData`. */
export interface PSIData {
  /** Cumulative stall time, µs. */
  total: number;
  avg10: number;
  avg60: number;
  avg300: number;
}

/** `PSIStats` (the KubeletPSI feature). */
export interface PSIStats {
  full: PSIData;
  some: PSIData;
}

/** `CPUStats`. */
export interface CPUStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
  psi?: PSIStats;
}

/** `MemoryStats`. */
export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  psi?: PSIStats;
}

/** `IOStats`. */
export interface IOStats {
  time: string;
  psi?: PSIStats;
}

/** `SwapStats`. */
export interface SwapStats {
  time: string;
  swapAvailableBytes?: number;
  swapUsageBytes?: number;
}

/** `FsStats`. */
export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

/** `VolumeStats`. */
export interface VolumeStats extends FsStats {
  name?: string;
  pvcRef?: { name: string; namespace: string };
}
