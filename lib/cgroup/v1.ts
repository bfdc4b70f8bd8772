/**
 * Reading one cgroup from the v1 controller hierarchies (Documentation/
 * admin-guide/cgroup-v1/{cpuacct,memory,blkio-controller,pids}.rst), giving the
 * same figures v2 gives from its own files.
 *
 * @module
 */

import { parseBlkioInto, parseSingleValue } from "./parse.ts";
import { readCgroupFile, readCgroupLimit } from "./read_file.ts";
import type { CpuStats, DeviceIo, MemoryStats, PidsStats } from "./types.ts";
import { memoryStats, pickFlatKeyed, readSlowKeys } from "./v2.ts";

/**
 * The v1 memory controller reports "no limit" as PAGE_COUNTER_MAX in bytes
 * (9223372036854771712 on 4 KiB pages); anything this large is unlimited.
 */
const V1_UNLIMITED = 2 ** 62;

/** USER_HZ: cpuacct.stat counts in these ticks; 100 on every Linux ABI in use. */
export const USER_HZ = 100;

function readKeys(
  dir: string,
  name: string,
  keys: readonly string[],
): (number | undefined)[] | undefined {
  const text = readCgroupFile(dir, name);
  return text === undefined ? undefined : pickFlatKeyed(text, `${dir}/${name}`, keys);
}

const TICK_KEYS = ["user", "system"] as const;
const THROTTLE_KEYS = ["nr_periods", "nr_throttled", "throttled_time"] as const;
const MEMORY_KEYS = [
  "total_inactive_file",
  "total_rss",
  "total_cache",
  "total_pgfault",
  "total_pgmajfault",
] as const;
const OOM_KEYS = ["oom_kill"] as const;

function readValue(dir: string, name: string): number | null | undefined {
  const text = readCgroupFile(dir, name);
  return text === undefined ? undefined : parseSingleValue(text, `${dir}/${name}`);
}

/** A limit: housekeeping may answer it from its last read (see readCgroupLimit). */
function readLimit(dir: string, name: string): number | null | undefined {
  const text = readCgroupLimit(dir, name);
  return text === undefined ? undefined : parseSingleValue(text, `${dir}/${name}`);
}

/**
 * Reads cpuacct.usage (+ usage_user/usage_sys, or cpuacct.stat ticks on older
 * kernels) and the cpu controller's cpu.stat (throttling).
 * @param cpuacctDir the cgroup in the cpuacct hierarchy, if mounted
 * @param cpuDir the cgroup in the cpu hierarchy, if mounted
 * @returns CPU figures in ns, or undefined when cpuacct.usage is absent
 */
export function readCpuV1(
  cpuacctDir: string | undefined,
  cpuDir: string | undefined,
): CpuStats | undefined {
  if (cpuacctDir === undefined) return undefined;
  const usage = readValue(cpuacctDir, "cpuacct.usage");
  if (usage === undefined || usage === null) return undefined;
  const cpu: CpuStats = { usageNs: usage };
  const user = readValue(cpuacctDir, "cpuacct.usage_user");
  const system = readValue(cpuacctDir, "cpuacct.usage_sys");
  if (typeof user === "number" && typeof system === "number") {
    cpu.userNs = user;
    cpu.systemNs = system;
  } else {
    const [u, s] = readKeys(cpuacctDir, "cpuacct.stat", TICK_KEYS) ?? [];
    if (u !== undefined) cpu.userNs = u * (1e9 / USER_HZ);
    if (s !== undefined) cpu.systemNs = s * (1e9 / USER_HZ);
  }
  if (cpuDir !== undefined) {
    const [periods, throttled, throttledNs] = readKeys(cpuDir, "cpu.stat", THROTTLE_KEYS) ?? [];
    if (periods !== undefined) cpu.periods = periods;
    if (throttled !== undefined) cpu.throttledPeriods = throttled;
    if (throttledNs !== undefined) cpu.throttledNs = throttledNs;
  }
  return cpu;
}

/**
 * Reads memory.usage_in_bytes, memory.stat (the hierarchical total_* keys),
 * memory.limit_in_bytes, memory.failcnt and memory.oom_control.
 * @param dir the cgroup in the memory hierarchy
 * @returns memory figures, or undefined when memory.usage_in_bytes is absent
 */
export function readMemoryV1(dir: string): MemoryStats | undefined {
  const usage = readValue(dir, "memory.usage_in_bytes");
  if (usage === undefined || usage === null) return undefined;
  const [inactiveFile, rss, cache, faults, majorFaults] =
    readKeys(dir, "memory.stat", MEMORY_KEYS) ?? [];
  const memory = memoryStats(usage, { inactiveFile, rss, cache, faults, majorFaults });
  const limit = readLimit(dir, "memory.limit_in_bytes");
  if (limit !== undefined) {
    memory.limitBytes = limit === null || limit >= V1_UNLIMITED ? null : limit;
  }
  const limitHits = readValue(dir, "memory.failcnt");
  if (limitHits !== undefined && limitHits !== null) memory.limitHits = limitHits;
  // oom_kill in oom_control appeared in Linux 4.13.
  const [oomKills] = readSlowKeys(dir, "memory.oom_control", OOM_KEYS) ?? [];
  if (oomKills !== undefined) memory.oomKills = oomKills;
  return memory;
}

/**
 * Reads blkio counters. The throttle files come first: they count at the
 * generic block layer for every device whatever its IO scheduler, which is what
 * v2's io.stat counts; the bfq/cfq files only see their scheduler's devices.
 * @param dir the cgroup in the blkio hierarchy
 * @returns per-device counters, or undefined when no blkio file is present
 */
export function readIoV1(dir: string): DeviceIo[] | undefined {
  const families = [
    ["blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_serviced_recursive"],
    ["blkio.throttle.io_service_bytes", "blkio.throttle.io_serviced"],
    ["blkio.bfq.io_service_bytes_recursive", "blkio.bfq.io_serviced_recursive"],
    ["blkio.io_service_bytes_recursive", "blkio.io_serviced_recursive"],
  ] as const;
  for (const [bytesName, opsName] of families) {
    const bytes = readCgroupFile(dir, bytesName);
    if (bytes === undefined) continue;
    const byDevice = new Map<string, DeviceIo>();
    parseBlkioInto(bytes, `${dir}/${bytesName}`, byDevice, "bytes");
    const ops = readCgroupFile(dir, opsName);
    if (ops !== undefined) parseBlkioInto(ops, `${dir}/${opsName}`, byDevice, "ops");
    return [...byDevice.values()];
  }
  return undefined;
}

/**
 * Reads pids.current and pids.max.
 * @param dir the cgroup in the pids hierarchy
 * @returns process counts, or undefined when the pids controller is absent
 */
export function readPidsV1(dir: string): PidsStats | undefined {
  const current = readValue(dir, "pids.current");
  if (current === undefined || current === null) return undefined;
  const pids: PidsStats = { current };
  const max = readLimit(dir, "pids.max");
  if (max !== undefined) pids.max = max;
  return pids;
}
