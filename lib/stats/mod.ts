/**
 * The stats path, cAdvisor's job in denolet: the machine's facts, read once
 * at start-up (machine_info.ts), per-container housekeeping into
 * ring buffers (housekeeping.ts), node figures from /proc (node.ts), the
 * {@link StatsProvider} that tracks what runs, and the endpoints built on it:
 * `/stats/summary` (stats/v1alpha1), `/metrics/resource`, `/metrics/cadvisor`,
 * plus the agent's own `/metrics`.
 *
 * ```ts
 * const machine = await readMachineInfo({ rootDir: "/var/lib/kubelet" });
 * const provider = new StatsProvider({ clock: realClock, runtime, nodeName, machine });
 * provider.reconcile(pods); // after each relist
 * serve({ routes: { ...statsHandlers(provider, metrics) }, ... });
 * ```
 *
 * @module
 */

import { EXPOSITION_CONTENT_TYPE, type KubeletMetrics } from "../metrics/mod.ts";
import { renderCadvisorMetrics } from "./prometheus_cadvisor.ts";
import { renderResourceMetrics } from "./prometheus_resource.ts";
import type { StatsProvider } from "./provider.ts";
import type { Summary } from "./summary_types.ts";

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

/** A route handler, as lib/server's `Handler`. */
export type StatsHandler = (req: Request, url: URL) => Response | Promise<Response>;

function text(body: string): Response {
  return new Response(body, { headers: { "content-type": EXPOSITION_CONTENT_TYPE } });
}

/**
 * The stats routes for the read-only (and later the authenticated) server.
 * @param provider the stats provider
 * @param metrics the agent's metrics, for `/metrics`
 * @returns handlers for `/stats/summary`, `/metrics/resource`, `/metrics/cadvisor`, `/metrics`
 */
export function statsHandlers(
  provider: StatsProvider,
  metrics: KubeletMetrics,
): Record<string, StatsHandler> {
  return {
    "/stats/summary": async (_req, url) => {
      const only = url.searchParams.get("only_cpu_and_memory") === "true";
      const summary = await provider.summary({ onlyCpuAndMemory: only });
      return new Response(JSON.stringify(summary), {
        headers: { "content-type": "application/json" },
      });
    },
    "/metrics/resource": async () => {
      let summary: Summary | undefined;
      try {
        summary = await provider.summary({ onlyCpuAndMemory: true });
      } catch {
        // Served as resource_scrape_error 1, as upstream does.
      }
      return text(renderResourceMetrics(summary));
    },
    "/metrics/cadvisor": async () =>
      text(renderCadvisorMetrics(await provider.snapshot({ withFs: false }))),
    "/metrics": () => text(metrics.render()),
  };
}
