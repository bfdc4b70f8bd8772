/**
 * Finding a pod's or container's cgroup from what the runtime reports:
 *
 * - a CRI `cgroupParent` (pod sandbox) or OCI `cgroupsPath` (container, from
 *   containerd's verbose ContainerStatus info), in either driver's spelling:
 *   cgroupfs ("/kubepods/burstable/pod<uid>/<id>") or systemd
 *   ("kubepods-burstable-pod<uid>.slice:cri-containerd:<id>");
 * - or a process in it, through /proc/PID/cgroup.
 *
 * @module
 */

import { StatsParseError } from "./errors.ts";
import { parseProcCgroup } from "./parse.ts";
import { readRequiredText } from "./read_file.ts";
import type { CgroupRef, V1Controller } from "./types.ts";

/** Where procfs is mounted. */
export const DEFAULT_PROC_ROOT = "/proc";

const V1_CONTROLLERS: readonly V1Controller[] = ["cpu", "cpuacct", "memory", "blkio", "pids"];

/**
 * Expands a systemd slice name into its path, the way systemd nests slices:
 * "kubepods-burstable-pod1.slice" → "/kubepods.slice/kubepods-burstable.slice/
 * kubepods-burstable-pod1.slice"; "-.slice" is the root.
 * @param slice a unit name ending in ".slice"
 * @returns the absolute cgroup path
 * @throws {StatsParseError} when the name is not a valid slice name
 */
export function expandSlice(slice: string): string {
  const where = `slice name "${slice}"`;
  if (!slice.endsWith(".slice")) throw new StatsParseError(where, 'must end in ".slice"');
  const name = slice.slice(0, -".slice".length);
  if (name === "-") return "/";
  if (
    name === "" || name.includes("/") || name.startsWith("-") || name.endsWith("-") ||
    name.includes("--")
  ) {
    throw new StatsParseError(where, "not a valid systemd slice name");
  }
  let path = "";
  let prefix = "";
  for (const part of name.split("-")) {
    prefix = prefix === "" ? part : `${prefix}-${part}`;
    path += `/${prefix}.slice`;
  }
  return path;
}

/**
 * Turns a runtime-reported cgroup path into a path under the hierarchy root.
 * Accepts the cgroupfs form (an absolute path, returned cleaned), a systemd slice
 * ("kubepods-besteffort-pod<uid>.slice", as a sandbox's cgroupParent) and the
 * systemd "slice:prefix:name" triple runc uses for a container's cgroupsPath.
 * @param reported the cgroupParent or cgroupsPath
 * @returns an absolute cgroup path such as "/kubepods/besteffort/pod<uid>/<id>"
 * @throws {StatsParseError} when it is neither form
 */
export function cgroupPathFromRuntime(reported: string): string {
  const value = reported.trim();
  if (value.startsWith("/")) {
    const clean = value.split("/").filter((p) => p !== "" && p !== ".").join("/");
    return `/${clean}`;
  }
  const parts = value.split(":");
  if (parts.length === 1 && value.endsWith(".slice")) return expandSlice(value);
  if (parts.length === 3) {
    const [slice, prefix, name] = parts as [string, string, string];
    const parent = slice === "" ? "/system.slice" : expandSlice(slice);
    // runc: a name that is itself a slice is used as is; otherwise "<prefix>-<name>.scope".
    const unit = name.endsWith(".slice")
      ? name
      : `${prefix === "" ? "" : `${prefix}-`}${name}.scope`;
    return `${parent === "/" ? "" : parent}/${unit}`;
  }
  throw new StatsParseError(
    `cgroup path "${reported}"`,
    'expected an absolute cgroupfs path, a ".slice" name or "slice:prefix:name"',
  );
}

/**
 * A reference to the same cgroup path in every hierarchy, as runc creates a
 * container's cgroup under one path in each v1 controller and in the v2 tree.
 * @param path absolute cgroup path (see {@link cgroupPathFromRuntime})
 * @returns the reference
 */
export function cgroupRefFromPath(path: string): CgroupRef {
  const v1: CgroupRef["v1"] = {};
  for (const c of V1_CONTROLLERS) v1[c] = path;
  return { unified: path, v1 };
}

/** Options for {@link cgroupRefFromPid}. */
export interface ProcOptions {
  /** procfs root; /proc unless a test points at a fixture. */
  procRoot?: string;
}

/**
 * Reads a process's cgroups from /proc/PID/cgroup ("self" for denolet itself).
 * @param pid process id, or "self"
 * @param opts procfs root
 * @returns the cgroup path in each hierarchy the process belongs to
 * @throws {StatsFileError} when the file is missing (process gone) or malformed
 */
export function cgroupRefFromPid(pid: number | "self", opts: ProcOptions = {}): CgroupRef {
  const file = `${opts.procRoot ?? DEFAULT_PROC_ROOT}/${pid}/cgroup`;
  const ref: CgroupRef = { v1: {} };
  for (const entry of parseProcCgroup(readRequiredText(file), file)) {
    if (entry.hierarchyId === 0 && entry.controllers.length === 0) {
      ref.unified = entry.path;
      continue;
    }
    for (const controller of entry.controllers) {
      const known = V1_CONTROLLERS.find((c) => c === controller);
      if (known) ref.v1[known] = entry.path;
    }
  }
  return ref;
}
