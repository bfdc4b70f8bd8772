/**
 * Facts about the machine, read once at start-up the way cAdvisor's
 * MachineInfo and VersionInfo are: online CPUs, memory, the root-dir
 * filesystem's size, hugepage pools, machine/system/boot IDs, boot time, the
 * process limit, kernel and OS image. The one place they are read: the Node
 * status, node allocatable (the default of a container's unset limits), OOM
 * scores and the stats are all built from the same reading.
 *
 * @module
 */

import { readNodeStats } from "./node.ts";

/** The machine's facts; read once by {@link readMachineInfo}. */
export interface MachineInfo {
  /** Online logical CPUs. */
  numCores: number;
  /** MemTotal, bytes. */
  memoryCapacityBytes: number;
  /** Boot time, epoch ms (/proc/stat btime): the root container's start; 0 when unknown. */
  bootTimeMs: number;
  /** min(pid_max, threads-max): the Summary API's rlimit.maxpid; absent when unreadable. */
  maxPid?: number;
  /** Size of the filesystem holding `--root-dir`, bytes. */
  ephemeralStorageCapacityBytes: number;
  /** Hugepage pools: page size in bytes → pages configured. */
  hugepages: { pageSizeBytes: number; numPages: number }[];
  machineID: string;
  /** "" when the DMI product UUID is unreadable (upstream reports it empty). */
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  operatingSystem: string;
  architecture: string;
}

/** Thrown when a fact the node cannot be registered without is unreadable. */
export class MachineInfoError extends Error {
  /** The file or call that failed. */
  readonly source: string;
  /**
   * @param source the file or call
   * @param message what went wrong
   * @param options the cause
   */
  constructor(source: string, message: string, options?: ErrorOptions) {
    super(`machine info: ${source}: ${message}`, options);
    this.name = "MachineInfoError";
    this.source = source;
  }
}

/** Where {@link readMachineInfo} reads from; tests point these at fixture trees. */
export interface MachineInfoOptions {
  /** `--root-dir`; its filesystem's size is the ephemeral-storage capacity. */
  rootDir: string;
  /** "/" by default; prefixed to /proc, /sys and /etc paths. */
  hostRoot?: string;
  /**
   * Memory and root-dir filesystem capacity in bytes; by default from
   * {@link readNodeStats} (MemTotal and statfs), which must see the real /proc.
   */
  capacities?: () => { memoryBytes: number; fsBytes: number };
}

/**
 * Counts CPUs in a kernel CPU list ("0-3,5,7-8" → 7).
 * @param text content of /sys/devices/system/cpu/online
 * @returns the count, 0 when the list is empty
 * @throws {Error} on a malformed range
 */
export function countCpuList(text: string): number {
  let n = 0;
  for (const part of text.trim().split(",")) {
    if (part === "") continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`bad CPU list entry "${part}"`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new Error(`bad CPU range "${part}"`);
    n += hi - lo + 1;
  }
  return n;
}

/**
 * The OS image as cAdvisor reports it: PRETTY_NAME from os-release, "Linux"
 * when there is none.
 * @param text content of /etc/os-release, or undefined when missing
 * @returns the image name
 */
export function parseOsImage(text: string | undefined): string {
  for (const line of (text ?? "").split("\n")) {
    const m = /^PRETTY_NAME=(.*)$/.exec(line.trim());
    if (!m) continue;
    const raw = m[1]!.trim();
    const unquoted = /^(["'])(.*)\1$/.exec(raw)?.[2] ?? raw;
    if (unquoted !== "") return unquoted;
  }
  return "Linux";
}

/**
 * Maps Deno's architecture to Go's GOARCH, which is what nodes report and
 * what the `kubernetes.io/arch` label and image platforms use.
 * @param arch Deno.build.arch
 * @returns "amd64", "arm64", or `arch` unchanged
 */
export function goArch(arch: string): string {
  switch (arch) {
    case "x86_64":
      return "amd64";
    case "aarch64":
      return "arm64";
    default:
      return arch;
  }
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    // DMI files are root-only on some hosts; an unreadable optional file is absent.
    if (err instanceof Deno.errors.PermissionDenied) return undefined;
    throw new MachineInfoError(path, "read failed", { cause: err });
  }
}

async function firstOf(paths: string[]): Promise<string> {
  for (const p of paths) {
    const text = (await readText(p))?.trim().replace(/\0/g, "");
    if (text) return text;
  }
  return "";
}

async function readHugepages(dir: string): Promise<MachineInfo["hugepages"]> {
  const out: MachineInfo["hugepages"] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return out;
    throw new MachineInfoError(dir, "cannot list hugepage pools", { cause: err });
  }
  for (const e of entries) {
    const m = /^hugepages-(\d+)kB$/.exec(e.name);
    if (!m) continue;
    const file = `${dir}/${e.name}/nr_hugepages`;
    const text = await readText(file);
    const pages = Number(text?.trim());
    if (text === undefined || !Number.isInteger(pages)) {
      throw new MachineInfoError(file, `bad page count "${text?.trim() ?? ""}"`);
    }
    out.push({ pageSizeBytes: Number(m[1]) * 1024, numPages: pages });
  }
  return out.sort((a, b) => a.pageSizeBytes - b.pageSizeBytes);
}

/**
 * Reads the machine's facts. Call it once, at start-up, and pass the result on.
 * @param opts the root dir and where to read from
 * @returns the facts
 * @throws {MachineInfoError} naming the file when CPUs, memory, the root-dir
 *   filesystem or the boot ID cannot be read
 */
export async function readMachineInfo(opts: MachineInfoOptions): Promise<MachineInfo> {
  const root = (opts.hostRoot ?? "/").replace(/\/$/, "");
  const onlineFile = `${root}/sys/devices/system/cpu/online`;
  const online = await readText(onlineFile);
  let numCores: number;
  try {
    numCores = online === undefined ? navigator.hardwareConcurrency : countCpuList(online);
  } catch (err) {
    throw new MachineInfoError(onlineFile, (err as Error).message, { cause: err });
  }
  let caps: { memoryBytes: number; fsBytes: number };
  try {
    caps = opts.capacities?.() ?? defaultCapacities(opts.rootDir);
  } catch (err) {
    throw new MachineInfoError(
      `memory and filesystem of ${opts.rootDir}`,
      (err as Error).message,
      { cause: err },
    );
  }
  const bootFile = `${root}/proc/sys/kernel/random/boot_id`;
  const bootID = (await readText(bootFile))?.trim();
  if (!bootID) throw new MachineInfoError(bootFile, "no boot ID");
  const btime = /^btime\s+(\d+)$/m.exec((await readText(`${root}/proc/stat`)) ?? "");
  const limits: number[] = [];
  for (const name of ["pid_max", "threads-max"]) {
    const n = Number((await readText(`${root}/proc/sys/kernel/${name}`))?.trim() || NaN);
    if (Number.isInteger(n)) limits.push(n);
  }
  return {
    numCores,
    memoryCapacityBytes: caps.memoryBytes,
    bootTimeMs: btime ? Number(btime[1]) * 1000 : 0,
    ...(limits.length > 0 ? { maxPid: Math.min(...limits) } : {}),
    ephemeralStorageCapacityBytes: caps.fsBytes,
    hugepages: await readHugepages(`${root}/sys/kernel/mm/hugepages`),
    machineID: await firstOf([`${root}/etc/machine-id`, `${root}/var/lib/dbus/machine-id`]),
    // cAdvisor's order: DMI, then the device tree (POWER, some ARM boards).
    systemUUID: await firstOf([
      `${root}/sys/class/dmi/id/product_uuid`,
      `${root}/proc/device-tree/system-id`,
      `${root}/proc/device-tree/vm,uuid`,
    ]),
    bootID,
    kernelVersion: Deno.osRelease(),
    osImage: parseOsImage(await readText(`${root}/etc/os-release`)),
    operatingSystem: "linux",
    architecture: goArch(Deno.build.arch),
  };
}

function defaultCapacities(rootDir: string): { memoryBytes: number; fsBytes: number } {
  const stats = readNodeStats({ rootDir });
  return { memoryBytes: stats.memory.capacityBytes, fsBytes: stats.fs.capacityBytes };
}
