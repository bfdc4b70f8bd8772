/**
 * What a cgroup read yields. The shape is the same whichever hierarchy the
 * figures came from (v2, v1 or hybrid). A field is absent when its file is
 * absent (controller not enabled, older kernel); absent is never an error.
 * Units: nanoseconds, bytes, counts; PSI averages are percentages.
 *
 * @module
 */

/** The cgroup layout of a machine. */
export type CgroupMode = "v2" | "v1" | "hybrid";

/** v1 controllers denolet reads. */
export type V1Controller = "cpu" | "cpuacct" | "memory" | "blkio" | "pids";

/** Where the hierarchies are mounted. */
export interface CgroupLayout {
  mode: CgroupMode;
  /** The cgroup mount root, normally /sys/fs/cgroup. */
  root: string;
  /** Mount point of the cgroup2 tree: the root itself (v2) or root/unified (hybrid). */
  unified?: string;
  /** Controllers of the cgroup2 tree (cgroup.controllers at its root). */
  unifiedControllers: string[];
  /** Mount point of each v1 controller present (v1 and hybrid). */
  v1: Partial<Record<V1Controller, string>>;
}

/**
 * A cgroup, as paths relative to each hierarchy's root (starting with "/").
 * From a CRI cgroupsPath every hierarchy has the same path; from
 * /proc/PID/cgroup they may differ.
 */
export interface CgroupRef {
  /** Path in the cgroup2 tree. */
  unified?: string;
  /** Path in each v1 hierarchy. */
  v1: Partial<Record<V1Controller, string>>;
}

/** CPU accounting. */
export interface CpuStats {
  /** Cumulative CPU time, ns. */
  usageNs: number;
  userNs?: number;
  systemNs?: number;
  /** CFS bandwidth: enforcement periods elapsed. */
  periods?: number;
  /** Periods in which the cgroup was throttled. */
  throttledPeriods?: number;
  /** Total time throttled, ns. */
  throttledNs?: number;
}

/** Memory accounting. */
export interface MemoryStats {
  /** Bytes charged (v2 memory.current, v1 memory.usage_in_bytes). */
  usageBytes: number;
  /** usage − inactive file pages, never below 0 (what eviction and the Summary API use). */
  workingSetBytes: number;
  /** Anonymous memory (v2 anon, v1 total_rss). */
  rssBytes?: number;
  /** Page cache (v2 file, v1 total_cache). */
  cacheBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** Hard limit in bytes; `null` means unlimited ("max"). */
  limitBytes?: number | null;
  /** OOM kills in this cgroup (v2 memory.events oom_kill, v1 memory.oom_control oom_kill). */
  oomKills?: number;
  /** Times usage hit the limit (v2 memory.events max, v1 memory.failcnt). */
  limitHits?: number;
}

/** IO counters of one block device. */
export interface DeviceIo {
  major: number;
  minor: number;
  readBytes: number;
  writeBytes: number;
  readOps: number;
  writeOps: number;
}

/** Process counts. */
export interface PidsStats {
  current: number;
  /** Limit; `null` means unlimited ("max"). */
  max?: number | null;
}

/** One line of a PSI file. */
export interface PressureLine {
  avg10: number;
  avg60: number;
  avg300: number;
  /** Cumulative stall time, µs (as the kernel reports it). */
  totalUs: number;
}

/** A PSI file (cpu.pressure, memory.pressure, io.pressure). */
export interface Pressure {
  some: PressureLine;
  /** Absent in cpu.pressure before Linux 5.13. */
  full?: PressureLine;
}

/** Everything read from one cgroup. */
export interface CgroupStats {
  cpu?: CpuStats;
  memory?: MemoryStats;
  /** Per device, in the order the kernel lists them. */
  io?: DeviceIo[];
  pids?: PidsStats;
  pressure?: { cpu?: Pressure; memory?: Pressure; io?: Pressure };
}
