/**
 * Building the Summary API (stats/v1alpha1) from a {@link StatsSnapshot}, the
 * way the kubelet's summary provider does: node from the root cgroup and
 * /proc, system containers, pods with their containers. `onlyCpuAndMemory`
 * gives what upstream's GetCPUAndMemoryStats gives (metrics-server's view):
 * node and system containers with cpu/memory, pods and containers with
 * cpu/memory only. Pure: no I/O.
 *
 * @module
 */

import type { Pressure } from "../cgroup/mod.ts";
import type { Sample } from "./housekeeping.ts";
import { metaTime } from "../util/time.ts";
import type {
  CgroupSnapshot,
  FsUsage,
  NetworkSnapshot,
  PodSnapshot,
  StatsSnapshot,
} from "./snapshot.ts";
import type {
  ContainerSummary,
  CPUStats,
  FsStats,
  InterfaceStats,
  IOStats,
  MemoryStats,
  NetworkStats,
  PodSummary,
  PSIStats,
  Summary,
  VolumeStats,
} from "./summary_types.ts";
import type { VolumeUsage } from "./volume_stats.ts";

/** The interface the Summary API inlines in `network` (cAdvisor's default). */
export const DEFAULT_INTERFACE = "eth0";

function psi(p: Pressure | undefined): PSIStats | undefined {
  if (!p) return undefined;
  const data = (l: Pressure["some"] | undefined) => ({
    total: l?.totalUs ?? 0,
    avg10: l?.avg10 ?? 0,
    avg60: l?.avg60 ?? 0,
    avg300: l?.avg300 ?? 0,
  });
  return { full: data(p.full), some: data(p.some) };
}

/**
 * CPU figures of a cgroup.
 * @param c the cgroup's cached figures
 * @returns CPUStats, or undefined before the first sample with CPU
 */
export function cpuStats(c: CgroupSnapshot): CPUStats | undefined {
  const s = c.sample;
  if (s?.cpuUsageNs === undefined) return undefined;
  const out: CPUStats = { time: metaTime(s.timestampMs) };
  if (c.usageNanoCores !== undefined) out.usageNanoCores = c.usageNanoCores;
  out.usageCoreNanoSeconds = Math.round(s.cpuUsageNs);
  const p = psi(c.stats?.pressure?.cpu);
  if (p) out.psi = p;
  return out;
}

/**
 * Memory figures of a cgroup. availableBytes is limit − working set when the
 * cgroup has a limit (the node's limit is its capacity), as upstream.
 * @param c the cgroup's cached figures
 * @returns MemoryStats, or undefined before the first sample with memory
 */
export function memoryStats(c: CgroupSnapshot): MemoryStats | undefined {
  const s = c.sample;
  if (s?.memoryUsageBytes === undefined) return undefined;
  const out: MemoryStats = { time: metaTime(s.timestampMs) };
  const ws = s.memoryWorkingSetBytes;
  const limit = s.memoryLimitBytes;
  if (limit !== undefined && Number.isFinite(limit) && ws !== undefined) {
    out.availableBytes = Math.max(0, limit - ws);
  }
  out.usageBytes = s.memoryUsageBytes;
  if (ws !== undefined) out.workingSetBytes = ws;
  if (s.memoryRssBytes !== undefined) out.rssBytes = s.memoryRssBytes;
  if (s.memoryPageFaults !== undefined) out.pageFaults = s.memoryPageFaults;
  if (s.memoryMajorPageFaults !== undefined) out.majorPageFaults = s.memoryMajorPageFaults;
  const p = psi(c.stats?.pressure?.memory);
  if (p) out.psi = p;
  return out;
}

function ioStats(c: CgroupSnapshot): IOStats | undefined {
  const p = psi(c.stats?.pressure?.io);
  return p && c.sample ? { time: metaTime(c.sample.timestampMs), psi: p } : undefined;
}

/**
 * Network figures: every interface, and the default one ({@link DEFAULT_INTERFACE},
 * else the first) inline.
 * @param n interface counters
 * @returns NetworkStats, or undefined when there are no interfaces
 */
export function networkStats(n: NetworkSnapshot | undefined): NetworkStats | undefined {
  if (!n || n.interfaces.length === 0) return undefined;
  const interfaces: InterfaceStats[] = n.interfaces.map((i) => ({
    name: i.name,
    rxBytes: i.rxBytes,
    rxErrors: i.rxErrors,
    txBytes: i.txBytes,
    txErrors: i.txErrors,
  }));
  const main = interfaces.find((i) => i.name === DEFAULT_INTERFACE) ?? interfaces[0]!;
  return { time: metaTime(n.timeMs), ...main, interfaces };
}

/**
 * Filesystem figures with only the known fields.
 * @param f the usage
 * @returns FsStats, or undefined
 */
export function fsStats(f: FsUsage | undefined): FsStats | undefined {
  if (!f) return undefined;
  const out: FsStats = { time: metaTime(f.timeMs) };
  if (f.availableBytes !== undefined) out.availableBytes = f.availableBytes;
  if (f.capacityBytes !== undefined) out.capacityBytes = f.capacityBytes;
  if (f.usedBytes !== undefined) out.usedBytes = f.usedBytes;
  if (f.inodesFree !== undefined) out.inodesFree = f.inodesFree;
  if (f.inodes !== undefined) out.inodes = f.inodes;
  if (f.inodesUsed !== undefined) out.inodesUsed = f.inodesUsed;
  return out;
}

/** The figures built from one sample of a cgroup, and what else they were built from. */
interface BuiltFromSample {
  usageNanoCores: number | undefined;
  stats: CgroupSnapshot["stats"];
  cpu: CPUStats | undefined;
  memory: MemoryStats | undefined;
  io: IOStats | undefined;
}

/**
 * A cgroup's figures by its newest sample: the sample stays the newest until the cgroup's
 * next housekeeping tick, and every scrape until then writes the same figures; built once,
 * they are neither garbage nor new strings to scan for each Summary. Summaries share them,
 * so nothing may change them (the node's own are built afresh: their availableBytes is
 * set below).
 */
const builtFromSample = new WeakMap<Sample, BuiltFromSample>();

function fromSample(c: CgroupSnapshot): BuiltFromSample {
  const sample = c.sample;
  const known = sample && builtFromSample.get(sample);
  if (known && known.usageNanoCores === c.usageNanoCores && known.stats === c.stats) return known;
  const built = {
    usageNanoCores: c.usageNanoCores,
    stats: c.stats,
    cpu: cpuStats(c),
    memory: memoryStats(c),
    io: ioStats(c),
  };
  if (sample) builtFromSample.set(sample, built);
  return built;
}

function cpuMemory<T extends object>(target: T, c: CgroupSnapshot, shared = true): T & {
  cpu?: CPUStats;
  memory?: MemoryStats;
} {
  const out: T & { cpu?: CPUStats; memory?: MemoryStats } = target;
  const { cpu, memory } = shared ? fromSample(c) : { cpu: cpuStats(c), memory: memoryStats(c) };
  if (cpu) out.cpu = cpu;
  if (memory) out.memory = memory;
  return out;
}

/**
 * A volume's entry in the pod's `volume` list (upstream parsePodVolumeStats:
 * every figure set).
 * @param v the volume's last figures
 * @returns the VolumeStats
 */
export function volumeStats(v: VolumeUsage): VolumeStats {
  return {
    time: metaTime(v.timeMs),
    availableBytes: v.availableBytes,
    capacityBytes: v.capacityBytes,
    usedBytes: v.usedBytes,
    inodesFree: v.inodesFree,
    inodes: v.inodes,
    inodesUsed: v.inodesUsed,
    name: v.name,
  };
}

/**
 * The pod's ephemeral storage as upstream's calcEphemeralStorage sums it: the
 * node filesystem's size, and as usage each container's writable layer and
 * log files, the local ephemeral volumes (disk-backed emptyDir, configMap),
 * files at the top of the pod's log directory and its managed hosts file.
 * The time is the newest of theirs. Absent when neither the node filesystem
 * nor any usage is known.
 * @param p the pod
 * @param nodeFs the node filesystem (the root dir's)
 * @returns the FsStats, or undefined
 */
export function ephemeralStorage(p: PodSnapshot, nodeFs: FsUsage | undefined): FsStats | undefined {
  const parts: { timeMs: number; usedBytes?: number; inodesUsed?: number }[] = [];
  for (const c of p.containers) {
    if (c.rootfs) parts.push(c.rootfs);
    if (c.logs) parts.push(c.logs);
  }
  parts.push(...(p.volumes?.ephemeral ?? []));
  if (p.podLogs) parts.push(p.podLogs);
  if (p.etcHosts) parts.push(p.etcHosts);
  if (!nodeFs && parts.length === 0) return undefined;
  const { usedBytes: _u, inodesUsed: _i, ...size } = nodeFs ?? { timeMs: 0 };
  const out: FsUsage = size;
  for (const part of parts) {
    out.timeMs = Math.max(out.timeMs, part.timeMs);
    if (part.usedBytes !== undefined) out.usedBytes = (out.usedBytes ?? 0) + part.usedBytes;
    if (part.inodesUsed !== undefined) out.inodesUsed = (out.inodesUsed ?? 0) + part.inodesUsed;
  }
  return fsStats(out);
}

/** Options for {@link buildSummary}. */
export interface SummaryOptions {
  /** `?only_cpu_and_memory=true`. */
  onlyCpuAndMemory: boolean;
}

function podSummary(p: PodSnapshot, only: boolean, nodeFs: FsUsage | undefined): PodSummary {
  const containers: ContainerSummary[] = p.containers.map((c) => {
    const out = cpuMemory<ContainerSummary>(
      { name: c.name, startTime: metaTime(c.startTimeMs) },
      c.cgroup,
    );
    if (only) return out;
    const io = fromSample(c.cgroup).io;
    const rootfs = fsStats(c.rootfs);
    const logs = fsStats(c.logs);
    if (io) out.io = io;
    if (rootfs) out.rootfs = rootfs;
    if (logs) out.logs = logs;
    return out;
  });
  const pod = cpuMemory<PodSummary>({
    podRef: { name: p.name, namespace: p.namespace, uid: p.uid },
    startTime: metaTime(p.startTimeMs),
    containers,
  }, p.cgroup);
  if (only) return pod;
  const io = fromSample(p.cgroup).io;
  const network = networkStats(p.network);
  if (io) pod.io = io;
  if (network) pod.network = network;
  const volumes = [...(p.volumes?.ephemeral ?? []), ...(p.volumes?.persistent ?? [])];
  if (volumes.length > 0) pod.volume = volumes.map(volumeStats);
  const eph = ephemeralStorage(p, nodeFs);
  if (eph) pod["ephemeral-storage"] = eph;
  const pids = p.cgroup.sample?.pidsCurrent;
  if (pids !== undefined) pod.process_stats = { process_count: pids };
  return pod;
}

/**
 * Builds the Summary.
 * @param snap the provider's snapshot
 * @param opts onlyCpuAndMemory as the query parameter asks
 * @returns the Summary, ready for JSON.stringify
 */
export function buildSummary(snap: StatsSnapshot, opts: SummaryOptions): Summary {
  const only = opts.onlyCpuAndMemory;
  const n = snap.node;
  const node = cpuMemory<Summary["node"]>(
    {
      nodeName: n.nodeName,
      startTime: metaTime(n.startTimeMs),
    },
    n.cgroup,
    false,
  );
  const system = n.systemContainers.map((s) =>
    cpuMemory<ContainerSummary>({ name: s.name, startTime: metaTime(s.startTimeMs) }, s.cgroup)
  );
  if (system.length > 0) node.systemContainers = system;
  // The node's memory.available is capacity − working set (what eviction uses).
  if (
    node.memory && node.memory.workingSetBytes !== undefined && n.machine.memoryCapacityBytes > 0
  ) {
    node.memory.availableBytes = Math.max(
      0,
      n.machine.memoryCapacityBytes - node.memory.workingSetBytes,
    );
  }
  if (!only) {
    const io = ioStats(n.cgroup);
    const network = networkStats(n.network);
    const fs = fsStats(n.fs);
    const imageFs = fsStats(n.imageFs);
    const containerFs = fsStats(n.containerFs);
    if (io) node.io = io;
    if (network) node.network = network;
    if (fs) node.fs = fs;
    if (imageFs || containerFs) {
      node.runtime = {};
      if (imageFs) node.runtime.imageFs = imageFs;
      if (containerFs) node.runtime.containerFs = containerFs;
    }
    if (n.rlimit) {
      node.rlimit = { time: metaTime(n.rlimit.timeMs) };
      if (n.rlimit.maxPid !== undefined) node.rlimit.maxpid = n.rlimit.maxPid;
      if (n.rlimit.curproc !== undefined) node.rlimit.curproc = n.rlimit.curproc;
    }
  }
  return { node, pods: snap.pods.map((p) => podSummary(p, only, n.fs)) };
}
