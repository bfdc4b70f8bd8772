/**
 * Node-level figures from /proc and the root filesystem: CPU (/proc/stat),
 * memory (/proc/meminfo, or the root cgroup), network per interface
 * (/proc/net/dev, or /proc/PID/net/dev for a sandbox's network namespace),
 * the root-dir filesystem (statfs through node:fs), load and process counts.
 * Everything here is a handful of small reads or one syscall: no forks, no
 * walk of /proc/PID, safe for the housekeeping path.
 *
 * @module
 */

import { statfsSync } from "node:fs";
import {
  DEFAULT_PROC_ROOT,
  type MemoryStats,
  readOptionalText,
  readRequiredText,
  StatsFileError,
  StatsParseError,
  StatsPermissionError,
} from "../cgroup/mod.ts";

/** Where to read from; tests point these at fixtures. */
export interface NodeStatsOptions {
  /** procfs root, /proc by default. */
  procRoot?: string;
  /** The kubelet root dir whose filesystem is reported, "/" by default. */
  rootDir?: string;
  /** USER_HZ, the unit of /proc/stat; 100 on every Linux ABI in use. */
  clockTicksPerSecond?: number;
}

/** Node CPU time since boot. */
export interface NodeCpuStats {
  /** Busy time (user+nice+system+irq+softirq+steal), ns. Guest time is inside user. */
  usageNs: number;
  userNs: number;
  systemNs: number;
  idleNs: number;
}

/** Node memory. */
export interface NodeMemoryStats {
  /** MemTotal. */
  capacityBytes: number;
  /** MemAvailable (the kernel's estimate), when the kernel reports it. */
  availableBytes?: number;
  /** MemFree. */
  freeBytes: number;
  /** Memory charged like the root cgroup: anon + file pages. */
  usageBytes: number;
  /** usage − inactive file, as cAdvisor computes the root cgroup's working set. */
  workingSetBytes: number;
  /** What eviction calls memory.available: capacity − working set (never below 0). */
  evictionAvailableBytes: number;
  rssBytes: number;
  cacheBytes: number;
}

/** Counters of one network interface. */
export interface InterfaceStats {
  name: string;
  rxBytes: number;
  rxPackets: number;
  rxErrors: number;
  rxDropped: number;
  txBytes: number;
  txPackets: number;
  txErrors: number;
  txDropped: number;
}

/** A filesystem's size and inodes. */
export interface FsStats {
  capacityBytes: number;
  /** Available to unprivileged users (f_bavail). */
  availableBytes: number;
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  inodesUsed: number;
}

/** /proc/loadavg. */
export interface LoadStats {
  load1: number;
  load5: number;
  load15: number;
  /** Runnable scheduling entities now. */
  runnable: number;
  /** Threads in the system (the kernel's nr_threads, what sysinfo() calls procs). */
  threads: number;
}

/** Process counts for the Summary API's rlimit block. */
export interface ProcessStats {
  /** Threads in the system now (the kubelet's rlimit.curproc). */
  threads: number;
  /** min(pid_max, threads-max): the kubelet's rlimit.maxpid. */
  maxPid?: number;
  /** Processes running / blocked (from /proc/stat). */
  running: number;
  blocked: number;
  /** Forks since boot. */
  forks: number;
}

/** Everything {@link readNodeStats} returns. */
export interface NodeStats {
  cpu: NodeCpuStats;
  memory: NodeMemoryStats;
  network: InterfaceStats[];
  fs: FsStats;
  load: LoadStats;
  processes: ProcessStats;
}

function num(token: string | undefined, file: string, what: string): number {
  if (token === undefined || !/^\d+(\.\d+)?$/.test(token)) {
    throw new StatsParseError(file, `bad ${what}: "${token ?? ""}"`);
  }
  return Number(token);
}

/**
 * Parses /proc/stat: the aggregate "cpu" line and the process counters.
 * @param text file content
 * @param file path, for errors
 * @param ticksPerSecond USER_HZ
 * @returns CPU times in ns and process counters
 * @throws {StatsParseError} when the "cpu" line is missing or malformed
 */
export function parseProcStat(
  text: string,
  file: string,
  ticksPerSecond = 100,
): { cpu: NodeCpuStats; running: number; blocked: number; forks: number } {
  let cpu: NodeCpuStats | undefined;
  let running = 0, blocked = 0, forks = 0;
  const ns = 1e9 / ticksPerSecond;
  for (const line of text.split("\n")) {
    const parts = line.trim().split(/\s+/);
    switch (parts[0]) {
      case "cpu": {
        // user nice system idle iowait irq softirq steal guest guest_nice
        const t = parts.slice(1, 9).map((v, i) => num(v, file, `cpu field ${i + 1}`));
        if (t.length < 4) throw new StatsParseError(file, "cpu line has too few fields");
        const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, soft = 0, steal = 0] =
          t;
        cpu = {
          usageNs: (user + nice + system + irq + soft + steal) * ns,
          userNs: (user + nice) * ns,
          systemNs: system * ns,
          idleNs: (idle + iowait) * ns,
        };
        break;
      }
      case "processes":
        forks = num(parts[1], file, "processes");
        break;
      case "procs_running":
        running = num(parts[1], file, "procs_running");
        break;
      case "procs_blocked":
        blocked = num(parts[1], file, "procs_blocked");
        break;
    }
  }
  if (!cpu) throw new StatsParseError(file, 'no aggregate "cpu" line');
  return { cpu, running, blocked, forks };
}

/**
 * Parses /proc/meminfo into bytes ("MemTotal:  16305440 kB").
 * @param text file content
 * @param file path, for errors
 * @returns values in bytes by key
 * @throws {StatsParseError} when empty or a line is malformed
 */
export function parseMeminfo(text: string, file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const m = /^([^:\s]+):\s+(\d+)(?:\s+(kB))?$/.exec(line);
    if (!m) throw new StatsParseError(file, `bad line "${line}"`);
    out.set(m[1]!, Number(m[2]) * (m[3] ? 1024 : 1));
  }
  if (!out.has("MemTotal")) throw new StatsParseError(file, "no MemTotal");
  return out;
}

/**
 * Node memory from /proc/meminfo. With the root cgroup's memory figures (from
 * the cgroup reader) usage and working set are taken from them, exactly as
 * cAdvisor reports the root container; without, they are derived from meminfo
 * the way the kernel charges the root memcg: usage = AnonPages + file pages
 * (Buffers + Cached + SwapCached), working set = usage − Inactive(file).
 * @param meminfo from {@link parseMeminfo}
 * @param rootCgroup the root cgroup's memory figures, when available
 * @returns node memory
 */
export function nodeMemory(
  meminfo: Map<string, number>,
  rootCgroup?: MemoryStats,
): NodeMemoryStats {
  const get = (k: string) => meminfo.get(k) ?? 0;
  const capacity = get("MemTotal");
  const file = get("Buffers") + get("Cached") + get("SwapCached");
  const anon = get("AnonPages");
  const usage = rootCgroup?.usageBytes ?? anon + file;
  const workingSet = rootCgroup?.workingSetBytes ?? Math.max(0, usage - get("Inactive(file)"));
  const out: NodeMemoryStats = {
    capacityBytes: capacity,
    freeBytes: get("MemFree"),
    usageBytes: usage,
    workingSetBytes: workingSet,
    evictionAvailableBytes: Math.max(0, capacity - workingSet),
    rssBytes: rootCgroup?.rssBytes ?? anon,
    cacheBytes: rootCgroup?.cacheBytes ?? file,
  };
  const available = meminfo.get("MemAvailable");
  if (available !== undefined) out.availableBytes = available;
  return out;
}

/**
 * Parses /proc/net/dev (two header lines, then "iface: 16 counters").
 * @param text file content
 * @param file path, for errors
 * @returns one entry per interface
 * @throws {StatsParseError} on a malformed interface line
 */
export function parseNetDev(text: string, file: string): InterfaceStats[] {
  const out: InterfaceStats[] = [];
  for (const raw of text.split("\n")) {
    const colon = raw.indexOf(":");
    if (colon < 0 || raw.includes("|")) continue; // header lines
    const name = raw.slice(0, colon).trim();
    const f = raw.slice(colon + 1).trim().split(/\s+/).map((v) => num(v, file, `${name} counter`));
    if (f.length < 16) throw new StatsParseError(file, `interface ${name}: expected 16 counters`);
    out.push({
      name,
      rxBytes: f[0]!,
      rxPackets: f[1]!,
      rxErrors: f[2]!,
      rxDropped: f[3]!,
      txBytes: f[8]!,
      txPackets: f[9]!,
      txErrors: f[10]!,
      txDropped: f[11]!,
    });
  }
  return out;
}

/**
 * Parses /proc/loadavg ("0.20 0.18 0.12 1/80 11206").
 * @param text file content
 * @param file path, for errors
 * @returns load averages and entity counts
 * @throws {StatsParseError} when malformed
 */
export function parseLoadavg(text: string, file: string): LoadStats {
  const parts = text.trim().split(/\s+/);
  const entities = /^(\d+)\/(\d+)$/.exec(parts[3] ?? "");
  if (parts.length < 4 || !entities) {
    throw new StatsParseError(file, `expected "l1 l5 l15 run/total lastpid", got "${text.trim()}"`);
  }
  return {
    load1: num(parts[0], file, "load1"),
    load5: num(parts[1], file, "load5"),
    load15: num(parts[2], file, "load15"),
    runnable: Number(entities[1]),
    threads: Number(entities[2]),
  };
}

/**
 * Reads node CPU time.
 * @param opts procfs root and USER_HZ
 * @returns CPU times and process counters from /proc/stat
 */
export function readNodeCpu(opts: NodeStatsOptions = {}): ReturnType<typeof parseProcStat> {
  const file = `${opts.procRoot ?? DEFAULT_PROC_ROOT}/stat`;
  return parseProcStat(readRequiredText(file), file, opts.clockTicksPerSecond ?? 100);
}

/**
 * Reads node memory.
 * @param opts procfs root
 * @param rootCgroup the root cgroup's memory, to match cAdvisor's working set
 * @returns node memory
 */
export function readNodeMemory(
  opts: NodeStatsOptions = {},
  rootCgroup?: MemoryStats,
): NodeMemoryStats {
  const file = `${opts.procRoot ?? DEFAULT_PROC_ROOT}/meminfo`;
  return nodeMemory(parseMeminfo(readRequiredText(file), file), rootCgroup);
}

/**
 * Reads interface counters of the host's network namespace, or of the
 * namespace process `pid` lives in (a sandbox's PID gives the pod's network).
 * @param opts procfs root, and the PID whose namespace to read
 * @returns one entry per interface
 * @throws {StatsFileError} when the process is gone
 */
export function readNetworkStats(opts: NodeStatsOptions & { pid?: number } = {}): InterfaceStats[] {
  const root = opts.procRoot ?? DEFAULT_PROC_ROOT;
  const file = opts.pid === undefined ? `${root}/net/dev` : `${root}/${opts.pid}/net/dev`;
  return parseNetDev(readRequiredText(file), file);
}

/**
 * Reads a filesystem's size with statfs(2) through node:fs (Deno has no statfs
 * of its own; this needs --allow-sys, and forks nothing).
 * @param path any path on the filesystem
 * @returns capacity, available, used and inodes
 * @throws {StatsPermissionError} when Deno refuses the statfs
 * @throws {StatsFileError} when the path does not exist
 */
export function readFsStats(path: string): FsStats {
  let s;
  try {
    s = statfsSync(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotCapable) throw new StatsPermissionError(path, err);
    const detail = err instanceof Error ? err.message : String(err);
    throw new StatsFileError(path, `statfs failed: ${detail}`, { cause: err });
  }
  const capacity = s.blocks * s.bsize;
  return {
    capacityBytes: capacity,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
    inodesUsed: s.files - s.ffree,
  };
}

/**
 * Reads /proc/loadavg.
 * @param opts procfs root
 * @returns load averages and entity counts
 */
export function readLoad(opts: NodeStatsOptions = {}): LoadStats {
  const file = `${opts.procRoot ?? DEFAULT_PROC_ROOT}/loadavg`;
  return parseLoadavg(readRequiredText(file), file);
}

function readLimit(file: string): number | undefined {
  const text = readOptionalText(file)?.trim();
  if (text === undefined) return undefined;
  return num(text, file, "limit");
}

/**
 * Reads the node's whole picture.
 * @param opts roots and USER_HZ
 * @param rootCgroup the root cgroup's memory, to match cAdvisor's working set
 * @returns CPU, memory, network, filesystem, load and process counts
 * @throws {StatsPermissionError} when Deno refuses /proc (run with -A)
 */
export function readNodeStats(opts: NodeStatsOptions = {}, rootCgroup?: MemoryStats): NodeStats {
  const root = opts.procRoot ?? DEFAULT_PROC_ROOT;
  const stat = readNodeCpu(opts);
  const load = readLoad(opts);
  const processes: ProcessStats = {
    threads: load.threads,
    running: stat.running,
    blocked: stat.blocked,
    forks: stat.forks,
  };
  const pidMax = readLimit(`${root}/sys/kernel/pid_max`);
  const threadsMax = readLimit(`${root}/sys/kernel/threads-max`);
  const limits = [pidMax, threadsMax].filter((v): v is number => v !== undefined);
  if (limits.length > 0) processes.maxPid = Math.min(...limits);
  return {
    cpu: stat.cpu,
    memory: readNodeMemory(opts, rootCgroup),
    network: readNetworkStats(opts),
    fs: readFsStats(opts.rootDir ?? "/"),
    load,
    processes,
  };
}

/**
 * The node as a cgroup-shaped reading, for the node's own housekeeping loop:
 * CPU from /proc/stat and memory from /proc/meminfo (or the root cgroup).
 * @param opts procfs root and USER_HZ
 * @param rootCgroup the root cgroup's memory, to match cAdvisor's working set
 * @returns cpu and memory, with the memory limit set to the node's capacity
 */
export function readNodeUsage(
  opts: NodeStatsOptions = {},
  rootCgroup?: MemoryStats,
): { cpu: NodeCpuStats; memory: MemoryStats } {
  const cpu = readNodeCpu(opts).cpu;
  const m = readNodeMemory(opts, rootCgroup);
  return {
    cpu,
    memory: {
      usageBytes: m.usageBytes,
      workingSetBytes: m.workingSetBytes,
      rssBytes: m.rssBytes,
      cacheBytes: m.cacheBytes,
      limitBytes: m.capacityBytes,
    },
  };
}
