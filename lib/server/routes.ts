/**
 * Every route the agent serves, built from what it needs from the agent
 * ({@link AgentProvider}): the healthz port's `/healthz`, and the read-only
 * port's `/pods`, `/healthz`, `/configz`, `/stats/summary`, `/metrics`,
 * `/metrics/resource`, `/metrics/cadvisor` and `/metrics/probes`. The secure
 * port serves the same handlers ({@link secureRoutes}) plus `/runningpods/`
 * and the mount points of the log and streaming handlers ({@link RouteMounts}).
 *
 * @module
 */

import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Pod } from "../api/types.ts";
import { EXPOSITION_CONTENT_TYPE } from "../metrics/mod.ts";
import { encodeKubeletConfiguration, type KubeletConfiguration } from "../options/mod.ts";
import { renderCadvisorMetrics, renderResourceMetrics, type StatsProvider } from "../stats/mod.ts";
import type { Summary } from "../stats/mod.ts";
import { type HealthCheck, healthzHandler } from "./healthz.ts";
import { type Handler, json, textResponse } from "./serve.ts";

/** The node and pod stats the stats routes read. */
export type StatsSource = Pick<StatsProvider, "summary" | "snapshot">;

/** What the routes need from the agent. */
export interface AgentProvider {
  /** `/pods`: the desired pods, each with its latest status. */
  podsWithStatus(): Pod[];
  /**
   * `/runningpods/` (secure port): the pods the runtime runs, as minimal API pods
   * (lib/kuberuntime runningApiPods).
   */
  runningPods(): Pod[];
  /** `/healthz` on the healthz port: the agent's checks, after `ping`. */
  healthChecks: readonly HealthCheck[];
  /** `/configz`: the effective configuration. */
  kubeletConfig: KubeletConfiguration;
  /** `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor`. */
  stats: StatsSource;
  /** `/metrics`: the agent's own metrics in the Prometheus text format. */
  renderMetrics(): string;
  /** `/metrics/probes`: the prober's metrics in the Prometheus text format. */
  renderProbeMetrics(): string;
}

function exposition(body: string): Response {
  return new Response(body, { headers: { "content-type": EXPOSITION_CONTENT_TYPE } });
}

/**
 * The healthz port's routes: `/healthz` runs `ping` and the agent's checks.
 * @param provider the agent
 * @returns the routes
 */
export function healthzRoutes(
  provider: Pick<AgentProvider, "healthChecks">,
): Record<string, Handler> {
  return {
    "/healthz": healthzHandler([
      { name: "ping", check: () => undefined },
      ...provider.healthChecks,
    ]),
  };
}

/**
 * The read-only port's routes.
 * @param provider the agent
 * @returns the routes
 */
export function readOnlyRoutes(provider: AgentProvider): Record<string, Handler> {
  return {
    "/pods": () => podList(provider.podsWithStatus()),
    "/healthz": () => new Response("ok"),
    "/configz": configzHandler(provider.kubeletConfig),
    ...statsHandlers(provider.stats, () => provider.renderMetrics()),
    "/metrics/probes": () => exposition(provider.renderProbeMetrics()),
  };
}

/**
 * Builds the `/configz` handler: the effective KubeletConfiguration as
 * upstream's configz serves it, `{"kubeletconfig": {...}}`. The body is
 * rendered once: the configuration does not change while the agent runs.
 * @param config the effective configuration (AgentOptions.config)
 * @returns a handler answering `{"kubeletconfig": {...}}` as application/json
 */
export function configzHandler(config: KubeletConfiguration): (req: Request) => Response {
  const body = JSON.stringify({ kubeletconfig: encodeKubeletConfiguration(config) });
  return (req) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response("method not allowed", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    return new Response(req.method === "HEAD" ? null : body, {
      headers: { "content-type": "application/json" },
    });
  };
}

/**
 * The stats routes and the agent's own `/metrics`.
 * @param stats the stats provider
 * @param renderMetrics renders the agent's metrics, for `/metrics`
 * @returns handlers for `/stats/summary`, `/metrics/resource`, `/metrics/cadvisor`, `/metrics`
 */
export function statsHandlers(
  stats: StatsSource,
  renderMetrics: () => string,
): Record<string, Handler> {
  return {
    "/stats/summary": async (_req, url) => {
      const only = url.searchParams.get("only_cpu_and_memory") === "true";
      const summary = await stats.summary({ onlyCpuAndMemory: only });
      return new Response(JSON.stringify(summary), {
        headers: { "content-type": "application/json" },
      });
    },
    "/metrics/resource": async () => {
      let summary: Summary | undefined;
      try {
        summary = await stats.summary({ onlyCpuAndMemory: true });
      } catch {
        // Served as resource_scrape_error 1, as upstream does.
      }
      return exposition(renderResourceMetrics(summary));
    },
    "/metrics/cadvisor": async () =>
      exposition(renderCadvisorMetrics(await stats.snapshot({ withFs: false }))),
    "/metrics": () => exposition(renderMetrics()),
  };
}

/**
 * An upgrade route (`/exec/`, `/attach/`, `/portForward/`): it owns the
 * socket once called, and answers (101, or an HTTP error) on it itself.
 */
export type UpgradeHandler = (
  req: IncomingMessage,
  socket: Duplex,
  head: Uint8Array,
) => void | Promise<void>;

/**
 * The secure port's prefix routes for plain requests, as upstream's kubelet server has them.
 * The upgrade routes are here too: upstream checks a plain request to them as it checks an
 * upgrade (bad options 400, unknown pod 404) before refusing it for not upgrading.
 */
export const SECURE_PREFIXES = [
  "/containerLogs/",
  "/logs/",
  "/run/",
  "/exec/",
  "/attach/",
  "/portForward/",
] as const;
/** The secure port's prefix routes for upgrade requests. */
export const SECURE_UPGRADE_PREFIXES = ["/exec/", "/attach/", "/portForward/"] as const;

/**
 * Handlers mounted on the secure port by prefix. A prefix with no handler
 * answers 404, as an unknown path does.
 */
export interface RouteMounts {
  /**
   * Plain handlers: `/containerLogs/` (`/containerLogs/{ns}/{pod}/{container}`),
   * `/logs/` (node logs), `/run/` (POST `/run/{ns}/{pod}[/{uid}]/{container}`), and
   * the answer to a request without `Upgrade` on `/exec/`, `/attach/`, `/portForward/`.
   */
  prefixes?: Partial<Record<(typeof SECURE_PREFIXES)[number], Handler>>;
  /**
   * Upgrade handlers: `/exec/`, `/attach/` (`{ns}/{pod}[/{uid}]/{container}`),
   * `/portForward/` (`{ns}/{pod}[/{uid}]`).
   */
  upgrades?: Partial<Record<(typeof SECURE_UPGRADE_PREFIXES)[number], UpgradeHandler>>;
}

/** What a server serves: exact paths, then prefixes, and upgrade prefixes. */
export interface RouteTable {
  exact: Record<string, Handler>;
  prefixes: Record<string, Handler>;
  upgrades: Record<string, UpgradeHandler>;
}

/** A PodList as upstream's encodePods writes it. */
function podList(items: Pod[]): Response {
  return json({ kind: "PodList", apiVersion: "v1", metadata: {}, items });
}

/**
 * The secure port's routes: the read-only port's (one home per route),
 * `/runningpods/` (GET only, as upstream's debugging handlers), and the
 * mounted prefix and upgrade handlers.
 * @param provider the agent
 * @param mounts the log and streaming handlers
 * @returns the route table
 */
export function secureRoutes(provider: AgentProvider, mounts: RouteMounts = {}): RouteTable {
  const prefixes: Record<string, Handler> = {};
  for (const [prefix, h] of Object.entries(mounts.prefixes ?? {})) if (h) prefixes[prefix] = h;
  const upgrades: Record<string, UpgradeHandler> = {};
  for (const [prefix, h] of Object.entries(mounts.upgrades ?? {})) if (h) upgrades[prefix] = h;
  const exact: Record<string, Handler> = {
    ...readOnlyRoutes(provider),
    "/runningpods/": (req) => {
      if (req.method !== "GET") {
        return textResponse(405, "Method Not Allowed", { allow: "GET" });
      }
      return podList(provider.runningPods());
    },
  };
  return { exact, prefixes, upgrades };
}

/**
 * The route of `path`: an exact route, else the longest matching prefix.
 * @returns the handler, or undefined (a 404)
 */
export function findRoute<T>(
  exact: Record<string, T>,
  prefixes: Record<string, T>,
  path: string,
): T | undefined {
  if (Object.hasOwn(exact, path)) return exact[path];
  let best: string | undefined;
  for (const prefix of Object.keys(prefixes)) {
    if (path.startsWith(prefix) && (best === undefined || prefix.length > best.length)) {
      best = prefix;
    }
  }
  return best === undefined ? undefined : prefixes[best];
}
