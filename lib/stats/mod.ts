/**
 * The stats path, cAdvisor's job in denolet: the machine's facts, read once
 * at start-up (machine_info.ts), per-container housekeeping into
 * ring buffers (housekeeping.ts), node figures from /proc (node.ts), the
 * {@link StatsProvider} that tracks what runs, and the renderers of
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

export { Housekeeper, type HousekeeperOptions, NODE_ID, type Sample } from "./housekeeping.ts";
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
export { buildSummary, DEFAULT_INTERFACE, type SummaryOptions } from "./summary.ts";
export type * from "./summary_types.ts";
export { renderResourceMetrics } from "./prometheus_resource.ts";
export { renderCadvisorMetrics } from "./prometheus_cadvisor.ts";
