/**
 * A pod cgroup's limits as upstream computes them (pkg/kubelet/cm/
 * helpers_linux.go ResourceConfigForPod, MilliCPUToShares, MilliCPUToQuota,
 * and cgroup_manager_linux.go's shares → cpu.weight for cgroup v2). Pure.
 *
 * @module
 */

import { podLimits, podRequests, resourceAmounts } from "../api/scheduling.ts";
import { podQOSClass } from "../api/qos.ts";
import type { Pod } from "../api/types.ts";

/** What a cgroup is set to; an absent field is left as it is. */
export interface ResourceConfig {
  /** cpu.shares (v1); cpu.weight on v2 is derived from it ({@link cpuWeightFromShares}). */
  cpuShares?: number;
  /** CFS quota in µs; -1 = unlimited. */
  cpuQuota?: number;
  /** CFS period in µs. */
  cpuPeriod?: number;
  /** Memory limit in bytes; 0 = unlimited. */
  memory?: number;
  /** Maximum number of processes; -1 = unlimited. */
  pidsLimit?: number;
  /** cgroup v2 files written as given (upstream's `Unified`), e.g. `memory.low`. */
  unified?: Record<string, string>;
}

/** The kernel's minimum cpu.shares (upstream MinShares), BestEffort's share. */
export const MIN_SHARES = 2;
/** The kernel's maximum cpu.shares. */
export const MAX_SHARES = 262144;
const SHARES_PER_CPU = 1024;
/** The CFS period upstream uses (100 ms in µs); CPUCFSQuotaPeriod is an alpha gate, off. */
export const QUOTA_PERIOD = 100000;
const MIN_QUOTA_PERIOD = 1000;

/**
 * Millicores to cpu.shares (upstream MilliCPUToShares): 0 → 2, clamped to [2, 262144].
 * @param milliCPU the cpu request in millicores
 * @returns the shares
 */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return MIN_SHARES;
  const shares = Math.trunc((milliCPU * SHARES_PER_CPU) / 1000);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/**
 * Millicores to a CFS quota over `period` µs (upstream MilliCPUToQuota): 0 for
 * no limit, at least 1 ms otherwise.
 * @param milliCPU the cpu limit in millicores
 * @param period the period in µs
 * @returns the quota in µs
 */
export function milliCPUToQuota(milliCPU: number, period = QUOTA_PERIOD): number {
  if (milliCPU === 0) return 0;
  return Math.max(MIN_QUOTA_PERIOD, Math.trunc((milliCPU * period) / 1000));
}

/**
 * cpu.shares to cgroup v2's cpu.weight, upstream's getCPUWeight:
 * `1 + ((shares - 2) * 9999) / 262142`, 10000 at the maximum.
 * @param shares cpu.shares
 * @returns cpu.weight in [1, 10000]
 */
export function cpuWeightFromShares(shares: number): number {
  if (shares >= MAX_SHARES) return 10000;
  return 1 + Math.trunc(((shares - 2) * 9999) / 262142);
}

/** Node settings {@link resourceConfigForPod} reads. */
export interface PodResourceOptions {
  /** `cpuCFSQuota`; true: a cpu limit becomes a CFS quota, false: the quota is -1. */
  enforceCPULimits?: boolean;
  /** The CFS period in µs; {@link QUOTA_PERIOD}. */
  cpuPeriod?: number;
}

/**
 * The pod cgroup's limits (upstream ResourceConfigForPod, MemoryQoS off):
 * cpu.shares from the pod's summed requests (overhead included); a CFS quota
 * and memory limit from the summed limits (overhead added to non-zero limits)
 * when every container declares one, always for Guaranteed pods; BestEffort
 * pods get only the minimum shares.
 * @param pod the pod
 * @param opts cpu quota enforcement and period
 * @returns the config
 */
export function resourceConfigForPod(pod: Pod, opts: PodResourceOptions = {}): ResourceConfig {
  const period = opts.cpuPeriod ?? QUOTA_PERIOD;
  const reqs = podRequests(pod);
  const limits = podLimits(pod);
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const own = resourceAmounts(c.resources?.limits);
    if (!own.get("cpu")) cpuLimitsDeclared = false;
    if (!own.get("memory")) memoryLimitsDeclared = false;
  }
  const podLevel = resourceAmounts(pod.spec.resources?.limits);
  if (podLevel.get("cpu")) cpuLimitsDeclared = true;
  if (podLevel.get("memory")) memoryLimitsDeclared = true;

  const cpuShares = milliCPUToShares(reqs.get("cpu") ?? 0);
  const cpuQuota = opts.enforceCPULimits === false
    ? -1
    : milliCPUToQuota(limits.get("cpu") ?? 0, period);
  const memory = limits.get("memory") ?? 0;
  switch (podQOSClass(pod)) {
    case "Guaranteed":
      return { cpuShares, cpuQuota, cpuPeriod: period, memory };
    case "Burstable":
      return {
        cpuShares,
        ...(cpuLimitsDeclared ? { cpuQuota, cpuPeriod: period } : {}),
        ...(memoryLimitsDeclared ? { memory } : {}),
      };
    default:
      return { cpuShares: MIN_SHARES };
  }
}

/**
 * The pods' top cgroup's limits from the node's allocatable amounts (upstream
 * getCgroupConfig): cpu.shares from cpu, the memory limit, pids.max from `pid`.
 * @param allocatable resource → amount (cpu in millicores, memory in bytes, pid a count)
 * @returns the config
 */
export function nodeAllocatableResourceConfig(
  allocatable: ReadonlyMap<string, number>,
): ResourceConfig {
  const config: ResourceConfig = {};
  const memory = allocatable.get("memory");
  if (memory !== undefined) config.memory = memory;
  const cpu = allocatable.get("cpu");
  if (cpu !== undefined) config.cpuShares = milliCPUToShares(cpu);
  const pids = allocatable.get("pid");
  if (pids !== undefined) config.pidsLimit = pids;
  return config;
}
