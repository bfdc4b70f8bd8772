/**
 * Reading one cgroup whatever the layout: v2 reads the unified tree; v1 reads
 * each controller's hierarchy; hybrid reads the v1 controllers and takes from
 * the v2 tree what v1 lacks (PSI, and CPU when cpuacct is not mounted).
 *
 * @module
 */

import { CgroupNotFoundError } from "./errors.ts";
import { isDirectory } from "./read_file.ts";
import type { CgroupLayout, CgroupRef, CgroupStats, V1Controller } from "./types.ts";
import { readCpuV1, readIoV1, readMemoryV1, readPidsV1 } from "./v1.ts";
import { readCpuV2, readIoV2, readMemoryV2, readPidsV2, readPressure } from "./v2.ts";

function join(mount: string, path: string): string {
  return path === "/" || path === "" ? mount : `${mount}${path.startsWith("/") ? "" : "/"}${path}`;
}

function unifiedDir(layout: CgroupLayout, ref: CgroupRef): string | undefined {
  if (layout.unified === undefined || ref.unified === undefined) return undefined;
  const dir = join(layout.unified, ref.unified);
  return isDirectory(dir) ? dir : undefined;
}

function v1Dir(layout: CgroupLayout, ref: CgroupRef, c: V1Controller): string | undefined {
  const mount = layout.v1[c];
  const path = ref.v1[c];
  if (mount === undefined || path === undefined) return undefined;
  const dir = join(mount, path);
  return isDirectory(dir) ? dir : undefined;
}

/**
 * Reads every figure denolet keeps for one cgroup.
 * @param layout from {@link detectCgroupLayout}
 * @param ref the cgroup's path in each hierarchy
 * @returns the figures; a group is absent when its files are absent
 * @throws {CgroupNotFoundError} when the cgroup exists in no hierarchy (it is gone)
 * @throws {StatsParseError} when a file is empty or malformed (names the file)
 * @throws {StatsPermissionError} when Deno refuses /sys (run with -A)
 */
export function readCgroupStats(layout: CgroupLayout, ref: CgroupRef): CgroupStats {
  const v2 = unifiedDir(layout, ref);
  const stats: CgroupStats = {};

  if (layout.mode === "v2") {
    if (v2 === undefined) throw new CgroupNotFoundError(join(layout.root, ref.unified ?? ""));
    const cpu = readCpuV2(v2);
    const memory = readMemoryV2(v2);
    const io = readIoV2(v2);
    const pids = readPidsV2(v2);
    const pressure = readPressure(v2);
    if (cpu) stats.cpu = cpu;
    if (memory) stats.memory = memory;
    if (io) stats.io = io;
    if (pids) stats.pids = pids;
    if (pressure) stats.pressure = pressure;
    return stats;
  }

  const cpuacct = v1Dir(layout, ref, "cpuacct");
  const cpuDir = v1Dir(layout, ref, "cpu");
  const memoryDir = v1Dir(layout, ref, "memory");
  const blkio = v1Dir(layout, ref, "blkio");
  const pidsDir = v1Dir(layout, ref, "pids");
  if (!v2 && !cpuacct && !cpuDir && !memoryDir && !blkio && !pidsDir) {
    const path = ref.unified ?? Object.values(ref.v1)[0] ?? "";
    throw new CgroupNotFoundError(join(layout.root, path));
  }

  // On hybrid machines the v2 side has cpu.stat even without the cpu controller.
  const cpu = readCpuV1(cpuacct, cpuDir) ?? (v2 ? readCpuV2(v2) : undefined);
  const memory = memoryDir ? readMemoryV1(memoryDir) : undefined;
  const io = blkio ? readIoV1(blkio) : undefined;
  const pids = pidsDir ? readPidsV1(pidsDir) : undefined;
  const pressure = v2 ? readPressure(v2) : undefined;
  if (cpu) stats.cpu = cpu;
  if (memory) stats.memory = memory;
  if (io) stats.io = io;
  if (pids) stats.pids = pids;
  if (pressure) stats.pressure = pressure;
  return stats;
}
