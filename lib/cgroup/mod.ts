/**
 * The cgroup reader: detects the machine's layout (v2, v1 or hybrid), finds a
 * pod's or container's cgroup from what the runtime reports, and reads its CPU,
 * memory, IO, pids and PSI figures the way cAdvisor does.
 *
 * ```ts
 * const layout = detectCgroupLayout();
 * const ref = cgroupRefFromPath(cgroupPathFromRuntime(status.cgroupsPath));
 * const stats = readCgroupStats(layout, ref);
 * ```
 *
 * Deno 2.9 refuses reads under /sys and /proc unless the process has every
 * permission (`--allow-all`); such a read throws {@link StatsPermissionError}.
 *
 * @module
 */

export {
  CgroupNotFoundError,
  isCgroupNotFound,
  StatsFileError,
  StatsParseError,
  StatsPermissionError,
} from "./errors.ts";
export { DEFAULT_CGROUP_ROOT, detectCgroupLayout } from "./layout.ts";
export type { DetectOptions } from "./layout.ts";
export {
  cgroupPathFromRuntime,
  cgroupRefFromPath,
  cgroupRefFromPid,
  DEFAULT_PROC_ROOT,
  expandSlice,
} from "./paths.ts";
export type { ProcOptions } from "./paths.ts";
export {
  parseFlatKeyed,
  parseIoStat,
  parsePressure,
  parseProcCgroup,
  parseSingleValue,
} from "./parse.ts";
export type { ProcCgroupEntry } from "./parse.ts";
export {
  CgroupFileCache,
  cgroupFileCache,
  readOptionalText,
  readRequiredText,
  withCachedReads,
} from "./read_file.ts";
export { readCgroupStats } from "./reader.ts";
export type {
  CgroupLayout,
  CgroupMode,
  CgroupRef,
  CgroupStats,
  CpuStats,
  DeviceIo,
  MemoryStats,
  PidsStats,
  Pressure,
  PressureLine,
  V1Controller,
} from "./types.ts";
