/**
 * Mount table and cgroup helpers for tear-down: which mounts live under a directory,
 * where each cgroup hierarchy is mounted, and the test cgroup parent in each of them.
 * Only the parent directory a runtime created is ever touched.
 *
 * @module
 */

import { waitFor } from "../kit/mod.ts";
import { exec } from "./_exec.ts";

/** One line of /proc/self/mountinfo. */
export interface MountEntry {
  mountPoint: string;
  fsType: string;
  /** Superblock options (for cgroup v1: the controllers). */
  superOptions: string;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(field: string): string {
  return field.replace(
    /\\([0-7]{3})/g,
    (_, octal: string) => String.fromCharCode(parseInt(octal, 8)),
  );
}

/** Parses /proc/self/mountinfo. */
export function readMounts(): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of Deno.readTextFileSync("/proc/self/mountinfo").split("\n")) {
    const fields = line.split(" ");
    const sep = fields.indexOf("-");
    const mountPoint = fields[4];
    const fsType = fields[sep + 1];
    if (sep < 0 || mountPoint === undefined || fsType === undefined) continue;
    entries.push({ mountPoint: unescape(mountPoint), fsType, superOptions: fields[sep + 3] ?? "" });
  }
  return entries;
}

/**
 * Unmounts everything mounted at or below `dir`, deepest first, lazily when a plain
 * unmount is refused (a mount still busy goes away once its last user does).
 *
 * @param dir an absolute directory
 */
export async function unmountUnder(dir: string): Promise<void> {
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  const targets = readMounts()
    .map((entry) => entry.mountPoint)
    .filter((point) => point === dir || point.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
  for (const target of targets) {
    const plain = await exec("umount", [target], { allowFailure: true });
    if (plain.code !== 0) await exec("umount", ["-l", target], { allowFailure: true });
  }
}

/** The mount points of every cgroup hierarchy: each v1 controller set and the v2 tree. */
export function cgroupMounts(): MountEntry[] {
  const seen = new Set<string>();
  return readMounts().filter((entry) => {
    if (entry.fsType !== "cgroup" && entry.fsType !== "cgroup2") return false;
    if (seen.has(entry.mountPoint)) return false;
    seen.add(entry.mountPoint);
    return true;
  });
}

/**
 * Creates the cgroup parent `/name` in every hierarchy. In the v1 cpuset hierarchy a new
 * group has no CPUs or memory nodes until given some, so copy the root's.
 *
 * @param name the parent, e.g. `/denolet-test-1a2b3c`
 * @throws Error naming the directory that could not be created
 */
export function createCgroupParent(name: string): void {
  for (const mount of cgroupMounts()) {
    const path = `${mount.mountPoint}${name}`;
    try {
      Deno.mkdirSync(path, { recursive: true });
      if (mount.fsType === "cgroup" && mount.superOptions.split(",").includes("cpuset")) {
        for (const file of ["cpuset.cpus", "cpuset.mems"]) {
          const value = Deno.readTextFileSync(`${mount.mountPoint}/${file}`);
          Deno.writeTextFileSync(`${path}/${file}`, value);
        }
      }
    } catch (cause) {
      throw new Error(`harness: cannot create cgroup ${path}`, { cause });
    }
  }
}

/** The mount point of the cgroup v1 hierarchy of the cpu controller, or undefined. */
export function cpuHierarchy(): string | undefined {
  return cgroupMounts().find((m) =>
    m.fsType === "cgroup" && m.superOptions.split(",").includes("cpu")
  )?.mountPoint;
}

/**
 * A process's cgroup in the v1 cpu hierarchy, from its /proc entry.
 * @param pid the process
 * @returns e.g. `/denolet-test-1a2b3c-agent` (`/` for the root); undefined without a v1
 *   cpu hierarchy
 * @throws Deno.errors.NotFound when the process is gone
 */
export function cpuCgroupOf(pid: number): string | undefined {
  return Deno.readTextFileSync(`/proc/${pid}/cgroup`).split("\n")
    .find((l) => /^\d+:[^:]*\bcpu\b[^:]*:/.test(l))?.split(":")[2];
}

/**
 * Creates cgroup `/name` in the cgroup v1 hierarchy of the cpu controller only.
 *
 * @param name e.g. `/denolet-test-1a2b3c-runtime`
 * @returns its `cgroup.procs` file, for a process to join
 * @throws Error when there is no v1 cpu hierarchy, or naming the directory not created
 */
export function createCpuCgroup(name: string): string[] {
  const cpu = cpuHierarchy();
  if (!cpu) throw new Error(`harness: no cgroup v1 cpu hierarchy for ${name}`);
  const path = `${cpu}${name}`;
  try {
    Deno.mkdirSync(path, { recursive: true });
  } catch (cause) {
    throw new Error(`harness: cannot create cgroup ${path}`, { cause });
  }
  return [`${path}/cgroup.procs`];
}

/**
 * The processes in cgroup parent `name` or below, in any hierarchy.
 *
 * @param name the parent, e.g. `/denolet-test-1a2b3c`
 */
export function cgroupProcs(name: string): number[] {
  const pids = new Set<number>();
  const walk = (dir: string): void => {
    try {
      for (const line of Deno.readTextFileSync(`${dir}/cgroup.procs`).split("\n")) {
        if (line !== "") pids.add(Number(line));
      }
      for (const entry of Deno.readDirSync(dir)) {
        if (entry.isDirectory) walk(`${dir}/${entry.name}`);
      }
    } catch {
      // Removed while we looked: nothing left to report there.
    }
  };
  for (const mount of cgroupMounts()) walk(`${mount.mountPoint}${name}`);
  return [...pids];
}

function removeTree(dir: string): string[] {
  const failed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (err) {
    return err instanceof Deno.errors.NotFound ? [] : [dir];
  }
  for (const entry of entries) {
    if (entry.isDirectory) failed.push(...removeTree(`${dir}/${entry.name}`));
  }
  try {
    // A cgroup directory holds only kernel files: rmdir (not a recursive remove) is how
    // it is deleted, and it fails while processes remain, which is what we want.
    Deno.removeSync(dir);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) failed.push(dir);
  }
  return failed;
}

/**
 * Removes cgroup parent `name` and its descendants from every hierarchy, retrying while
 * the kernel still holds exiting tasks.
 *
 * @param name the parent, e.g. `/denolet-test-1a2b3c`
 * @throws Error listing directories that stayed busy
 */
export async function removeCgroupParent(name: string): Promise<void> {
  if (!/^\/denolet-[A-Za-z0-9-]+$/.test(name)) {
    throw new Error(`harness: refusing to remove cgroup ${name}: not a test cgroup parent`);
  }
  let failed: string[] = [];
  try {
    await waitFor(`cgroups ${name} removed`, () => {
      failed = cgroupMounts().flatMap((mount) => removeTree(`${mount.mountPoint}${name}`));
      return failed.length === 0;
    }, { timeoutMs: 5_000, intervalMs: 100 });
  } catch (err) {
    throw new Error(`harness: cgroups still busy after tear-down: ${failed.join(", ")}`, {
      cause: err,
    });
  }
}
