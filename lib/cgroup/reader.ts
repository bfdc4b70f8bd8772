/**
 * Reading one cgroup whatever the layout: v2 reads the unified tree; v1 reads
 * each controller's hierarchy; hybrid reads the v1 controllers and takes from
 * the v2 tree what v1 lacks (PSI, and CPU when cpuacct is not mounted).
 *
 * @module
 */

import { CgroupNotFoundError } from "./errors.ts";
import { cgroupDirHeldOpen, forgetCgroupDir, isDirectory, lostCgroupFiles } from "./read_file.ts";
import type { CgroupLayout, CgroupRef, CgroupStats, V1Controller } from "./types.ts";
import { readCpuV1, readIoV1, readMemoryV1, readPidsV1 } from "./v1.ts";
import { readCpuV2, readIoV2, readMemoryV2, readPidsV2, readPressure } from "./v2.ts";

/**
 * The directory when it exists; when gone, its cached handles are closed.
 * With `trustOpen`, a directory whose files are held open counts as existing
 * without a stat (a tenth of a housekeeping tick): on kernfs, reads through
 * those handles fail once the cgroup is removed, which {@link readCgroupStats}
 * notices and answers by looking again.
 */
function existing(dir: string, trustOpen: boolean): string | undefined {
  if (trustOpen && cgroupDirHeldOpen(dir)) return dir;
  if (isDirectory(dir)) return dir;
  forgetCgroupDir(dir);
  return undefined;
}

function join(mount: string, path: string): string {
  return path === "/" || path === "" ? mount : `${mount}${path.startsWith("/") ? "" : "/"}${path}`;
}

function unifiedDir(layout: CgroupLayout, ref: CgroupRef, trust: boolean): string | undefined {
  if (layout.unified === undefined || ref.unified === undefined) return undefined;
  return existing(join(layout.unified, ref.unified), trust);
}

function v1Dir(
  layout: CgroupLayout,
  ref: CgroupRef,
  c: V1Controller,
  trust: boolean,
): string | undefined {
  const mount = layout.v1[c];
  const path = ref.v1[c];
  if (mount === undefined || path === undefined) return undefined;
  return existing(join(mount, path), trust);
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
  const lost = lostCgroupFiles();
  const stats = readStats(layout, ref, true);
  // A held-open file vanished: its cgroup may be gone. Read again, looking
  // every directory up, so a removed cgroup throws CgroupNotFoundError.
  return lostCgroupFiles() === lost ? stats : readStats(layout, ref, false);
}

function readStats(layout: CgroupLayout, ref: CgroupRef, trust: boolean): CgroupStats {
  const v2 = unifiedDir(layout, ref, trust);
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

  const cpuacct = v1Dir(layout, ref, "cpuacct", trust);
  const cpuDir = v1Dir(layout, ref, "cpu", trust);
  const memoryDir = v1Dir(layout, ref, "memory", trust);
  const blkio = v1Dir(layout, ref, "blkio", trust);
  const pidsDir = v1Dir(layout, ref, "pids", trust);
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
