/**
 * What `enforceNodeAllocatable` limits, as upstream's node container manager
 * decides it (pkg/kubelet/cm/node_container_manager_linux.go,
 * enforceNodeAllocatableCgroups and getCgroupConfig). Pure.
 *
 * - kubepods always gets cpu.shares, a memory limit and pids.max: from the
 *   node's allocatable (capacity less kubeReserved and systemReserved; the
 *   hard eviction thresholds are not held back here) when `pods` is enforced,
 *   else from the whole capacity, since the kernel's default shares would
 *   starve the pods.
 * - `system-reserved` / `kube-reserved` limit the existing
 *   `systemReservedCgroup` / `kubeReservedCgroup` to the reservation (memory,
 *   cpu shares, pids); the `-compressible` forms set only cpu shares.
 *
 * @module
 */

import { cgroupNameToCgroupfs, parseCgroupfsToCgroupName } from "./cgroup_name.ts";
import type { CgroupfsManager } from "./cgroupfs.ts";
import { nodeAllocatableResourceConfig, type ResourceConfig } from "./resource_config.ts";

/** Upstream's enforcement keys. */
export const ENFORCE_PODS = "pods";
export const ENFORCE_SYSTEM_RESERVED = "system-reserved";
export const ENFORCE_KUBE_RESERVED = "kube-reserved";
export const ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE = "system-reserved-compressible";
export const ENFORCE_KUBE_RESERVED_COMPRESSIBLE = "kube-reserved-compressible";

/** What {@link nodeAllocatableEnforcement} decides from. */
export interface NodeAllocatableInput {
  /** `enforceNodeAllocatable` (validated). */
  enforce: readonly string[];
  /** `cgroupsPerQOS`: without it no key applies to kubepods (there is none). */
  cgroupsPerQOS: boolean;
  /** The capacity with the `pid` count (upstream internalCapacity), base units. */
  internalCapacity: ReadonlyMap<string, number>;
  /** internalCapacity less kubeReserved and systemReserved (getNodeAllocatableInternalAbsolute). */
  allocatable: ReadonlyMap<string, number>;
  /** `systemReserved` in base units; empty when unset. */
  systemReserved: ReadonlyMap<string, number>;
  /** `kubeReserved` in base units; empty when unset. */
  kubeReserved: ReadonlyMap<string, number>;
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
}

/** One reserved cgroup to limit. */
export interface ReservedCgroupEnforcement {
  /** The enforcement key that asked for it, e.g. `system-reserved`. */
  key: string;
  /** "System Reserved" or "Kube Reserved" (with " Compressible"), for messages. */
  title: string;
  /** The cgroup, in the driver's form as given. */
  cgroup: string;
  /**
   * Its limits; undefined when the reservation is unset, which upstream
   * refuses ("cgroup is not configured properly").
   */
  config: ResourceConfig | undefined;
}

/** The decision. */
export interface NodeAllocatableEnforcement {
  /** kubepods' limits. */
  kubepods: ResourceConfig;
  /** The reserved cgroups to limit, in upstream's order. */
  reserved: ReservedCgroupEnforcement[];
}

/**
 * Sets a reserved cgroup's limits (upstream enforceExistingCgroup): the
 * reservation must be set and the cgroup exist (in every hierarchy).
 * @param cgroups the cgroupfs writer
 * @param r the cgroup and its limits
 * @throws {Error} upstream's "Failed to enforce … Cgroup Limits on …" with the reason
 */
export function enforceReservedCgroup(
  cgroups: CgroupfsManager,
  r: ReservedCgroupEnforcement,
): void {
  const path = cgroupNameToCgroupfs(parseCgroupfsToCgroupName(r.cgroup));
  const fail = (why: string, cause?: unknown) =>
    new Error(
      `Failed to enforce ${r.title} Cgroup Limits on ${JSON.stringify(path)}: ${why}`,
      cause === undefined ? undefined : { cause },
    );
  if (!r.config) throw fail(`${JSON.stringify(path)} cgroup is not configured properly`);
  if (!cgroups.exists(path)) throw fail(`cgroup ${JSON.stringify(path)} does not exist`);
  try {
    cgroups.update(path, r.config);
  } catch (err) {
    throw fail(String(err), err);
  }
}

/**
 * Decides the limits of kubepods and of the reserved cgroups.
 * @param input the settings and amounts
 * @returns what to write
 */
export function nodeAllocatableEnforcement(
  input: NodeAllocatableInput,
): NodeAllocatableEnforcement {
  const enforce = new Set(input.enforce);
  const pods = input.cgroupsPerQOS && enforce.has(ENFORCE_PODS);
  const reserved: ReservedCgroupEnforcement[] = [];
  const steps = [
    [ENFORCE_SYSTEM_RESERVED, "System Reserved", "system", false],
    [ENFORCE_KUBE_RESERVED, "Kube Reserved", "kube", false],
    [ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE, "System Reserved Compressible", "system", true],
    [ENFORCE_KUBE_RESERVED_COMPRESSIBLE, "Kube Reserved Compressible", "kube", true],
  ] as const;
  for (const [key, title, which, compressible] of steps) {
    if (!enforce.has(key)) continue;
    const amounts = which === "system" ? input.systemReserved : input.kubeReserved;
    reserved.push({
      key,
      title,
      cgroup: which === "system" ? input.systemReservedCgroup : input.kubeReservedCgroup,
      config: reservedCgroupConfig(amounts, compressible),
    });
  }
  return {
    kubepods: nodeAllocatableResourceConfig(pods ? input.allocatable : input.internalCapacity),
    reserved,
  };
}

/**
 * A reserved cgroup's limits (upstream getCgroupConfig of the reservation):
 * memory, cpu shares and pids, or only cpu shares when compressible.
 * @param amounts the reservation in base units
 * @param compressibleOnly only cpu
 * @returns the config, or undefined for an unset reservation
 */
export function reservedCgroupConfig(
  amounts: ReadonlyMap<string, number>,
  compressibleOnly: boolean,
): ResourceConfig | undefined {
  if (amounts.size === 0) return undefined;
  const config = nodeAllocatableResourceConfig(amounts);
  if (!compressibleOnly) return config;
  return config.cpuShares === undefined ? {} : { cpuShares: config.cpuShares };
}
