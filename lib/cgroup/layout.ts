/**
 * Which cgroup layout the machine has. Detection looks at files, not at mount
 * types, so that a fixture tree in a temporary directory is detected exactly
 * like /sys/fs/cgroup:
 *
 * - v2 (unified): the root itself has `cgroup.controllers`.
 * - hybrid: v1 controller hierarchies under the root, and a cgroup2 tree at
 *   root/unified (systemd's "hybrid" mode; ours has only hugetlb as controller
 *   there, yet every cgroup still has cpu.stat and *.pressure).
 * - v1 (legacy): only v1 controller hierarchies.
 *
 * @module
 */

import { StatsFileError } from "./errors.ts";
import { isDirectory, listDirectory, pathExists, readOptionalText } from "./read_file.ts";
import type { CgroupLayout, V1Controller } from "./types.ts";

/** Where cgroups are mounted on every distribution we know of. */
export const DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup";

const V1_CONTROLLERS: readonly V1Controller[] = ["cpu", "cpuacct", "memory", "blkio", "pids"];

/** Options for {@link detectCgroupLayout}. */
export interface DetectOptions {
  /** The cgroup mount root; /sys/fs/cgroup unless a test points at a fixture. */
  cgroupRoot?: string;
}

function controllersOf(file: string): string[] {
  const text = readOptionalText(file);
  return text === undefined ? [] : text.trim().split(/\s+/).filter((c) => c !== "");
}

/**
 * Detects the cgroup layout under `cgroupRoot`.
 * @param opts where the cgroup mounts live
 * @returns the mode and the mount point of each hierarchy
 * @throws {StatsFileError} when no hierarchy is found (cgroups not mounted)
 * @throws {StatsPermissionError} when Deno refuses to read /sys (run with -A)
 */
export function detectCgroupLayout(opts: DetectOptions = {}): CgroupLayout {
  const root = opts.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  if (pathExists(`${root}/cgroup.controllers`)) {
    return {
      mode: "v2",
      root,
      unified: root,
      unifiedControllers: controllersOf(`${root}/cgroup.controllers`),
      v1: {},
    };
  }

  const v1: Partial<Record<V1Controller, string>> = {};
  // Mount points are named after their controllers; joined ones ("cpu,cpuacct")
  // usually also have symlinks ("cpu", "cpuacct"), which resolve to the same tree.
  for (const name of listDirectory(root).sort()) {
    if (name === "unified") continue;
    const dir = `${root}/${name}`;
    if (!isDirectory(dir) || !pathExists(`${dir}/cgroup.procs`)) continue;
    for (const controller of name.split(",")) {
      const known = V1_CONTROLLERS.find((c) => c === controller);
      if (known && v1[known] === undefined) v1[known] = dir;
    }
  }

  const unified = `${root}/unified`;
  if (pathExists(`${unified}/cgroup.controllers`)) {
    return {
      mode: "hybrid",
      root,
      unified,
      unifiedControllers: controllersOf(`${unified}/cgroup.controllers`),
      v1,
    };
  }
  if (Object.keys(v1).length === 0) {
    throw new StatsFileError(
      root,
      "no cgroup hierarchy found (neither cgroup2 nor v1 controllers)",
    );
  }
  return { mode: "v1", root, unifiedControllers: [], v1 };
}
