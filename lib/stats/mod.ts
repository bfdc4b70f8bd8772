/**
 * The stats path, cAdvisor's job in denolet: per-container housekeeping into
 * ring buffers (housekeeping.ts), node figures from /proc (node.ts), the
 * {@link StatsProvider} that tracks what runs, and the renderers of
 * `/metrics/resource` and `/metrics/cadvisor`. lib/server serves them, with
 * `/stats/summary` (stats/v1alpha1).
 *
 * ```ts
 * const provider = new StatsProvider({ clock: realClock, runtime, nodeName });
 * provider.reconcile(pods); // after each relist
 * const summary = await provider.summary({ onlyCpuAndMemory: false });
 * ```
 *
 * @module
 */

export { Housekeeper, type HousekeeperOptions, NODE_ID, type Sample } from "./housekeeping.ts";
export { readNodeStats } from "./node.ts";
export {
  type CgroupSnapshot,
  type ContainerSnapshot,
  type FsUsage,
  type MachineFacts,
  type NetworkSnapshot,
  type NodeSnapshot,
  type PodSnapshot,
  StatsProvider,
  type StatsProviderOptions,
  type StatsSnapshot,
  type SystemContainerSnapshot,
} from "./provider.ts";
export { buildSummary, DEFAULT_INTERFACE, metaTime, type SummaryOptions } from "./summary.ts";
export type * from "./summary_types.ts";
export { renderResourceMetrics } from "./prometheus_resource.ts";
export { renderCadvisorMetrics } from "./prometheus_cadvisor.ts";
