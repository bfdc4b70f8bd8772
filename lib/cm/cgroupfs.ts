/**
 * The cgroupfs driver's cgroup manager: creates, sets, lists and removes a
 * cgroup by writing the kernel's files, as upstream's cgroup manager does
 * through libcontainer's fs (v1) and fs2 (v2) managers:
 *
 * - v1 (and hybrid): the cgroup is made in every mounted hierarchy (each
 *   controller's, name=systemd's, and in hybrid mode the cgroup2 tree), a new
 *   cpuset cgroup gets its parent's cpus and mems; limits go to cpu.shares,
 *   cpu.cfs_period_us/cpu.cfs_quota_us, memory.limit_in_bytes and pids.max.
 * - v2: the cgroup is made in the unified tree, each ancestor's available
 *   controllers enabled in its cgroup.subtree_control; limits go to
 *   cpu.weight (from shares), cpu.max, memory.max, pids.max and the `unified` files.
 *
 * Hierarchies are found by files, like lib/cgroup's layout detection, so a
 * fixture tree in a temporary directory stands in for /sys/fs/cgroup in tests.
 *
 * @module
 */

import { existsSync } from "node:fs";
import { DEFAULT_CGROUP_ROOT } from "../cgroup/mod.ts";
import { cpuWeightFromShares, type ResourceConfig } from "./resource_config.ts";

/** One mounted hierarchy. */
export interface CgroupHierarchy {
  /** Its mount point. */
  path: string;
  /** Its controllers by mount directory name ("cpu", "cpu,cpuacct", "systemd"); [] for cgroup2. */
  controllers: string[];
}

/** The machine's hierarchies: `v2` writes limits to the unified tree, otherwise to v1's. */
export interface CgroupHierarchies {
  mode: "v1" | "v2" | "hybrid";
  /** v1 hierarchies (empty on v2). */
  v1: CgroupHierarchy[];
  /** The cgroup2 tree: the root on v2, root/unified on hybrid. */
  unified?: string;
}

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Finds the mounted hierarchies under `root`: a cgroup2 root (v2), or each
 * v1 directory with a cgroup.procs (symlinked aliases such as "cpu" →
 * "cpu,cpuacct" counted once) plus root/unified when it is a cgroup2 tree.
 * @param root the cgroup mount root; /sys/fs/cgroup
 * @returns the hierarchies
 * @throws {Error} when none is found
 */
export function findCgroupHierarchies(root = DEFAULT_CGROUP_ROOT): CgroupHierarchies {
  if (existsSync(`${root}/cgroup.controllers`)) return { mode: "v2", v1: [], unified: root };
  const v1: CgroupHierarchy[] = [];
  const seen = new Set<string>();
  for (const name of [...Deno.readDirSync(root)].map((e) => e.name).sort()) {
    const dir = `${root}/${name}`;
    if (name === "unified" || !existsSync(`${dir}/cgroup.procs`)) continue;
    // Joined controllers are mounted once ("cpu,cpuacct") with aliases ("cpu") linking to it.
    const real = Deno.realPathSync(dir);
    if (seen.has(real)) continue;
    seen.add(real);
    v1.push({ path: dir, controllers: real.slice(real.lastIndexOf("/") + 1).split(",") });
  }
  if (v1.length === 0) throw new Error(`no cgroup hierarchy found under ${root}`);
  const unified = `${root}/unified`;
  const hybrid = existsSync(`${unified}/cgroup.controllers`);
  return hybrid ? { mode: "hybrid", v1, unified } : { mode: "v1", v1 };
}

/** v1 controllers whose cgroup must exist for upstream's Exists (its allowlist). */
const EXISTS_CONTROLLERS = new Set(["cpu", "cpuacct", "cpuset", "memory", "systemd", "pids"]);

/** Writes one cgroup file, naming the file and value when the kernel refuses it. */
function writeFile(dir: string, file: string, value: string): void {
  try {
    Deno.writeTextFileSync(`${dir}/${file}`, value);
  } catch (cause) {
    throw new Error(`cannot write ${JSON.stringify(value)} to ${dir}/${file}`, { cause });
  }
}

/** The cgroup manager for the cgroupfs driver; cgroups are named by cgroupfs path ("/kubepods/burstable"). */
export class CgroupfsManager {
  readonly #h: CgroupHierarchies;

  /** @param hierarchies where the hierarchies are mounted ({@link findCgroupHierarchies}) */
  constructor(hierarchies: CgroupHierarchies) {
    this.#h = hierarchies;
  }

  /** The hierarchies this manager writes to. */
  get hierarchies(): CgroupHierarchies {
    return this.#h;
  }

  /** Every directory of cgroup `name`, one per hierarchy. */
  #dirs(name: string): string[] {
    const rel = name === "/" ? "" : name;
    const dirs = this.#h.v1.map((h) => `${h.path}${rel}`);
    if (this.#h.unified !== undefined) dirs.push(`${this.#h.unified}${rel}`);
    return dirs;
  }

  /**
   * The cgroup's directory in one hierarchy that every cgroup made here has:
   * the unified tree on v2, the memory hierarchy on v1 (else the first).
   */
  #primaryDir(name: string): string {
    const rel = name === "/" ? "" : name;
    if (this.#h.mode === "v2") return `${this.#h.unified}${rel}`;
    return `${this.#v1("memory") ?? this.#h.v1[0]!.path}${rel}`;
  }

  #v1(controller: string): string | undefined {
    return this.#h.v1.find((h) => h.controllers.includes(controller))?.path;
  }

  /**
   * Whether the cgroup exists (upstream Exists): on v1 in each of the cpu,
   * cpuacct, cpuset, memory, name=systemd and pids hierarchies mounted; on v2
   * in the unified tree.
   * @param name the cgroupfs path
   */
  exists(name: string): boolean {
    const rel = name === "/" ? "" : name;
    if (this.#h.mode === "v2") return existsSync(`${this.#h.unified}${rel}`);
    return this.#h.v1
      .filter((h) => h.controllers.some((c) => EXISTS_CONTROLLERS.has(c)))
      .every((h) => existsSync(`${h.path}${rel}`));
  }

  /**
   * Creates the cgroup (and its missing parents) in every hierarchy and sets
   * `config` on it (upstream Create: libcontainer's Apply(-1), then Set).
   * @param name the cgroupfs path
   * @param config the limits
   * @throws {Error} naming the directory or file the kernel refused
   */
  create(name: string, config: ResourceConfig): void {
    if (this.#h.mode === "v2") {
      this.#createV2(name);
    } else {
      for (const h of this.#h.v1) {
        this.#mkdirs(h.path, name, h.controllers.includes("cpuset"));
      }
      if (this.#h.unified !== undefined) this.#mkdirs(this.#h.unified, name, false);
    }
    this.update(name, config);
  }

  /** mkdir of each missing level; a new cpuset cgroup gets its parent's cpus and mems. */
  #mkdirs(mount: string, name: string, cpuset: boolean): void {
    let dir = mount;
    for (const part of name.split("/").filter((p) => p !== "")) {
      const parent = dir;
      dir = `${dir}/${part}`;
      if (!makeCgroupDir(dir)) continue;
      if (!cpuset) continue;
      for (const file of ["cpuset.cpus", "cpuset.mems"]) {
        if ((readText(`${dir}/${file}`) ?? "").trim() !== "") continue;
        writeFile(dir, file, readText(`${parent}/${file}`) ?? "");
      }
    }
  }

  /** v2: mkdir each level, enabling every ancestor's controllers for its children. */
  #createV2(name: string): void {
    let dir = this.#h.unified!;
    for (const part of name.split("/").filter((p) => p !== "")) {
      this.#enableControllers(dir);
      dir = `${dir}/${part}`;
      makeCgroupDir(dir);
    }
  }

  /** Enables in `dir`'s cgroup.subtree_control every controller its cgroup.controllers lists. */
  #enableControllers(dir: string): void {
    const available = (readText(`${dir}/cgroup.controllers`) ?? "").split(/\s+/).filter((c) =>
      c !== ""
    );
    if (available.length === 0) return;
    const enabled = new Set(
      (readText(`${dir}/cgroup.subtree_control`) ?? "").split(/\s+/).filter((c) => c !== ""),
    );
    const missing = available.filter((c) => !enabled.has(c));
    if (missing.length === 0) return;
    try {
      Deno.writeTextFileSync(
        `${dir}/cgroup.subtree_control`,
        missing.map((c) => `+${c}`).join(" "),
      );
    } catch {
      // As libcontainer: one at a time, leaving out the ones the kernel refuses.
      for (const c of missing) {
        try {
          Deno.writeTextFileSync(`${dir}/cgroup.subtree_control`, `+${c}`);
        } catch { /* not available for children here */ }
      }
    }
  }

  /**
   * Sets `config` on an existing cgroup (upstream Update / SetCgroupConfig);
   * absent fields are left as they are.
   * @param name the cgroupfs path
   * @param config the limits
   * @throws {Error} naming the file the kernel refused
   */
  update(name: string, config: ResourceConfig): void {
    const rel = name === "/" ? "" : name;
    if (this.#h.mode === "v2") {
      const dir = `${this.#h.unified}${rel}`;
      if (config.cpuShares !== undefined) {
        writeFile(dir, "cpu.weight", String(cpuWeightFromShares(config.cpuShares)));
      }
      if (config.cpuQuota !== undefined || config.cpuPeriod !== undefined) {
        const quota = config.cpuQuota !== undefined && config.cpuQuota > 0
          ? String(config.cpuQuota)
          : "max";
        writeFile(dir, "cpu.max", config.cpuPeriod ? `${quota} ${config.cpuPeriod}` : quota);
      }
      if (config.memory) writeFile(dir, "memory.max", limitText(config.memory));
      if (config.pidsLimit) writeFile(dir, "pids.max", limitText(config.pidsLimit));
      for (const [file, value] of Object.entries(config.unified ?? {})) {
        writeFile(dir, file, value);
      }
      return;
    }
    const cpu = this.#v1("cpu");
    if (cpu !== undefined) this.#setCpuV1(`${cpu}${rel}`, config);
    const memory = this.#v1("memory");
    if (memory !== undefined && config.memory) {
      writeFile(`${memory}${rel}`, "memory.limit_in_bytes", String(config.memory));
    }
    const pids = this.#v1("pids");
    if (pids !== undefined && config.pidsLimit) {
      writeFile(`${pids}${rel}`, "pids.max", limitText(config.pidsLimit));
    }
  }

  /** cpu.shares, then the period, then the quota (and the period again if the kernel refused it first). */
  #setCpuV1(dir: string, config: ResourceConfig): void {
    if (config.cpuShares) writeFile(dir, "cpu.shares", String(config.cpuShares));
    let retryPeriod = false;
    if (config.cpuPeriod) {
      try {
        writeFile(dir, "cpu.cfs_period_us", String(config.cpuPeriod));
      } catch (err) {
        // A period below the current one can exceed the parent's quota until the quota is set.
        if (!config.cpuQuota) throw err;
        retryPeriod = true;
      }
    }
    if (config.cpuQuota) {
      writeFile(dir, "cpu.cfs_quota_us", String(config.cpuQuota));
      if (retryPeriod) writeFile(dir, "cpu.cfs_period_us", String(config.cpuPeriod));
    }
  }

  /**
   * The cgroup's child cgroups' names, from every hierarchy or from the
   * memory hierarchy alone (the unified tree on v2).
   * @param name the cgroupfs path
   * @param from "all" (the union) or "primary"
   * @returns the children's base names
   */
  children(name: string, from: "all" | "primary" = "all"): string[] {
    const out = new Set<string>();
    for (const dir of from === "all" ? this.#dirs(name) : [this.#primaryDir(name)]) {
      try {
        for (const e of Deno.readDirSync(dir)) if (e.isDirectory) out.add(e.name);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    return [...out];
  }

  /**
   * The processes in the cgroup and below, in any hierarchy (upstream Pids).
   * @param name the cgroupfs path
   * @returns the PIDs
   */
  pids(name: string): number[] {
    const out = new Set<number>();
    const walk = (dir: string) => {
      const procs = readText(`${dir}/cgroup.procs`);
      if (procs === undefined) return;
      for (const line of procs.split("\n")) if (line.trim() !== "") out.add(Number(line));
      for (const e of Deno.readDirSync(dir)) if (e.isDirectory) walk(`${dir}/${e.name}`);
    };
    for (const dir of this.#dirs(name)) walk(dir);
    return [...out];
  }

  /**
   * Kills what still runs in the cgroup and removes it from every hierarchy,
   * children first (upstream podContainerManager.Destroy: up to five kill
   * rounds, then libcontainer's RemovePaths).
   * @param name the cgroupfs path
   * @throws {Error} when processes survive or a directory cannot be removed
   */
  destroy(name: string): void {
    for (let round = 0; round < 5; round++) {
      const pids = this.pids(name);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* already gone */ }
      }
    }
    const failed: string[] = [];
    for (const dir of this.#dirs(name)) removeTree(dir, failed);
    if (failed.length > 0) throw new Error(`cannot remove cgroup paths: ${failed.join(", ")}`);
  }
}

/** -1 (and any negative) is "max", the kernel's unlimited. */
function limitText(value: number): string {
  return value < 0 ? "max" : String(value);
}

/** rmdir of a cgroup directory and its children, bottom-up; the paths that stayed go to `failed`. */
function removeTree(dir: string, failed: string[]): void {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  for (const e of entries) if (e.isDirectory) removeTree(`${dir}/${e.name}`, failed);
  try {
    // A cgroup directory holds only kernel files: rmdir removes it once its children are gone.
    Deno.removeSync(dir);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) failed.push(`${dir} (${(err as Error).message})`);
  }
}

/**
 * mkdir of one cgroup level unless it is there (another agent or runc may make it first).
 * @returns true when this call made it
 */
function makeCgroupDir(dir: string): boolean {
  if (existsSync(dir)) return false;
  try {
    Deno.mkdirSync(dir);
    return true;
  } catch (cause) {
    if (cause instanceof Deno.errors.AlreadyExists) return false;
    throw new Error(`cannot create cgroup ${dir}`, { cause });
  }
}
