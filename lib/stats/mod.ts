/**
 * The stats path, cAdvisor's job in denolet: the machine's facts, read once
 * at start-up (machine_info.ts), per-container housekeeping into
 * ring buffers (housekeeping.ts), node figures from /proc (node.ts), the
 * pods' volume usage walked on its own timers (volume_stats.ts, disk_usage.ts),
 * the runtime's filesystem figures and the pods' log and hosts files read on
 * loops of their own (runtime_fs.ts, pod_files.ts),
 * the {@link StatsProvider} that tracks what runs, and the renderers of
 * `/metrics/resource` and `/metrics/cadvisor`. lib/server serves them, with
 * `/stats/summary` (stats/v1alpha1).
 *
 * ```ts
 * const machine = await readMachineInfo({ rootDir: "/var/lib/kubelet" });
 * const provider = new StatsProvider({ clock: realClock, runtime, nodeName, machine });
 * provider.reconcile(pods); // after each relist
 * const summary = await provider.summary({ onlyCpuAndMemory: false });
 * ```
 *
 * @module
 */

export {
  Housekeeper,
  type HousekeeperOptions,
  nanoCoresBetween,
  NODE_ID,
  type Sample,
} from "./housekeeping.ts";
export { readNodeStats } from "./node.ts";
export {
  countCpuList,
  goArch,
  type MachineInfo,
  MachineInfoError,
  type MachineInfoOptions,
  parseOsImage,
  readMachineInfo,
} from "./machine_info.ts";
export { StatsProvider, type StatsProviderOptions } from "./provider.ts";
export type * from "./snapshot.ts";
export {
  buildSummary,
  DEFAULT_INTERFACE,
  ephemeralStorage,
  type SummaryOptions,
  volumeStats,
} from "./summary.ts";
export { type DiskUsage, diskUsage, filesUsage, fileUsage } from "./disk_usage.ts";
export {
  PodVolumeStatsCache,
  type PodVolumeStatsOptions,
  type PodVolumeUsage,
  type VolumeUsage,
} from "./volume_stats.ts";
export {
  type MeasuredUsage,
  PodFilesCache,
  type PodFilesCacheOptions,
  type PodFilesTarget,
  type PodFilesUsage,
} from "./pod_files.ts";
export {
  DEFAULT_RUNTIME_FS_PERIOD_MS,
  RuntimeFsCache,
  type RuntimeFsCacheOptions,
  type RuntimeFsFigure,
  type RuntimeFsFigures,
} from "./runtime_fs.ts";
export type * from "./summary_types.ts";
export { renderResourceMetrics } from "./prometheus_resource.ts";
export { renderCadvisorMetrics } from "./prometheus_cadvisor.ts";
