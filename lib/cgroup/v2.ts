/**
 * Reading one cgroup of the cgroup2 tree (Documentation/admin-guide/
 * cgroup-v2.rst). Used for v2 machines, and on hybrid machines for what only
 * the v2 side has (PSI) or when a v1 controller is missing.
 *
 * @module
 */

import { parseFlatKeyed, parseIoStat, parsePressure, parseSingleValue } from "./parse.ts";
import { readOptionalText } from "./read_file.ts";
import type { CpuStats, DeviceIo, MemoryStats, PidsStats, Pressure } from "./types.ts";

function readKeyed(file: string): Map<string, number> | undefined {
  const text = readOptionalText(file);
  return text === undefined ? undefined : parseFlatKeyed(text, file);
}

function readValue(file: string): number | null | undefined {
  const text = readOptionalText(file);
  return text === undefined ? undefined : parseSingleValue(text, file);
}

/**
 * Reads cpu.stat (usage_usec, user_usec, system_usec, nr_periods, nr_throttled,
 * throttled_usec).
 * @param dir the cgroup directory
 * @returns CPU figures in ns, or undefined when cpu.stat is absent
 */
export function readCpuV2(dir: string): CpuStats | undefined {
  const stat = readKeyed(`${dir}/cpu.stat`);
  const usage = stat?.get("usage_usec");
  if (!stat || usage === undefined) return undefined;
  const cpu: CpuStats = { usageNs: usage * 1000 };
  const user = stat.get("user_usec");
  const system = stat.get("system_usec");
  if (user !== undefined) cpu.userNs = user * 1000;
  if (system !== undefined) cpu.systemNs = system * 1000;
  // The nr_*/throttled_* keys appear only when the cpu controller is enabled.
  const periods = stat.get("nr_periods");
  const throttled = stat.get("nr_throttled");
  const throttledUs = stat.get("throttled_usec");
  if (periods !== undefined) cpu.periods = periods;
  if (throttled !== undefined) cpu.throttledPeriods = throttled;
  if (throttledUs !== undefined) cpu.throttledNs = throttledUs * 1000;
  return cpu;
}

/**
 * Reads memory.current, memory.stat, memory.max and memory.events. In the root
 * cgroup, which has no memory.current, usage is anon + file from memory.stat
 * (what runc reports for the root, so cAdvisor's root working set matches).
 * @param dir the cgroup directory
 * @returns memory figures, or undefined when the memory controller is absent
 */
export function readMemoryV2(dir: string): MemoryStats | undefined {
  const stat = readKeyed(`${dir}/memory.stat`);
  let usage = readValue(`${dir}/memory.current`);
  if (usage === undefined || usage === null) {
    const anon = stat?.get("anon");
    const file = stat?.get("file");
    if (anon === undefined || file === undefined) return undefined;
    usage = anon + file;
  }
  const inactiveFile = stat?.get("inactive_file") ?? 0;
  const memory: MemoryStats = {
    usageBytes: usage,
    workingSetBytes: Math.max(0, usage - inactiveFile),
  };
  const set = (key: keyof MemoryStats, value: number | undefined) => {
    if (value !== undefined) (memory as unknown as Record<string, number>)[key] = value;
  };
  set("rssBytes", stat?.get("anon"));
  set("cacheBytes", stat?.get("file"));
  set("pageFaults", stat?.get("pgfault"));
  set("majorPageFaults", stat?.get("pgmajfault"));
  const limit = readValue(`${dir}/memory.max`);
  if (limit !== undefined) memory.limitBytes = limit;
  const events = readKeyed(`${dir}/memory.events`);
  set("oomKills", events?.get("oom_kill"));
  set("limitHits", events?.get("max"));
  return memory;
}

/**
 * Reads io.stat.
 * @param dir the cgroup directory
 * @returns per-device counters, or undefined when io.stat is absent
 */
export function readIoV2(dir: string): DeviceIo[] | undefined {
  const file = `${dir}/io.stat`;
  const text = readOptionalText(file);
  return text === undefined ? undefined : parseIoStat(text, file);
}

/**
 * Reads pids.current and pids.max.
 * @param dir the cgroup directory
 * @returns process counts, or undefined when the pids controller is absent
 */
export function readPidsV2(dir: string): PidsStats | undefined {
  const current = readValue(`${dir}/pids.current`);
  if (current === undefined || current === null) return undefined;
  const pids: PidsStats = { current };
  const max = readValue(`${dir}/pids.max`);
  if (max !== undefined) pids.max = max;
  return pids;
}

/**
 * Reads cpu.pressure, memory.pressure and io.pressure (Linux ≥ 4.20 with PSI).
 * @param dir the cgroup directory
 * @returns the files that exist, or undefined when none does
 */
export function readPressure(
  dir: string,
): { cpu?: Pressure; memory?: Pressure; io?: Pressure } | undefined {
  const out: { cpu?: Pressure; memory?: Pressure; io?: Pressure } = {};
  for (const kind of ["cpu", "memory", "io"] as const) {
    const file = `${dir}/${kind}.pressure`;
    const text = readOptionalText(file);
    if (text !== undefined) out[kind] = parsePressure(text, file);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
