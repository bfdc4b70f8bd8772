/**
 * Every route the agent serves, built from what it needs from the agent
 * ({@link AgentProvider}), as upstream's kubelet server installs them:
 *
 * - the healthz port: `/healthz`;
 * - the read-only port: `/pods`, `/healthz`, `/stats/summary`, `/metrics`,
 *   `/metrics/resource`, `/metrics/cadvisor`, `/metrics/probes`, the node page
 *   (`/ui`, `/ui/data`: lib/ui), and 405
 *   "Debug endpoints are disabled." on the debugging paths;
 * - the secure port ({@link secureRoutes}): the same, and with
 *   `enableDebuggingHandlers` `/configz`, `/runningpods/`, `/debug/flags/v`
 *   and the mount points of the log and streaming handlers
 *   ({@link RouteMounts}) and denolet's `/debug/pods/{ns}/{name}/syncs` (the
 *   sync trace, also on the read-only port); `enableSystemLogHandler`, `enableDebugFlagsHandler`
 *   and `enableProfilingHandler` turn their endpoint into a 405 when false.
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
import { nodePageRoutes, type NodePageSource } from "../ui/mod.ts";
import { TEXT_ERROR_HEADERS, writeRawResponse } from "../util/raw_http.ts";
import { type HealthCheck, healthzHandler } from "./healthz.ts";
import { type Handler, json, textResponse } from "./serve.ts";
import type { PodSyncTrace } from "../trace/mod.ts";
import { SYNC_TRACE_PREFIX, syncTraceHandler } from "./sync_trace_route.ts";

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
  /** `/ui` and `/ui/data`, the node page; not served without it. */
  nodePage?: NodePageSource;
  /**
   * `/debug/pods/{namespace}/{name}/syncs`: the pod's sync trace; absent when
   * the trace is off (`--sync-trace-depth=0`), and the route is then not served.
   */
  syncTrace?(namespace: string, name: string): PodSyncTrace | undefined;
}

/**
 * The sync trace's prefix route, when the agent keeps one.
 * @param provider the agent
 * @returns `{"/debug/pods/": handler}` or nothing
 */
export function syncTraceRoutes(provider: AgentProvider): Record<string, Handler> {
  const lookup = provider.syncTrace?.bind(provider);
  return lookup ? { [SYNC_TRACE_PREFIX]: syncTraceHandler(lookup) } : {};
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
 * The routes both the read-only and the secure port serve (upstream's
 * "auth not required" handlers; the secure port still authenticates them).
 * @param provider the agent
 * @returns the routes
 */
export function readOnlyRoutes(provider: AgentProvider): Record<string, Handler> {
  return {
    "/pods": () => podList(provider.podsWithStatus()),
    "/healthz": () => new Response("ok"),
    ...statsHandlers(provider.stats, () => provider.renderMetrics()),
    "/metrics/probes": () => exposition(provider.renderProbeMetrics()),
    ...(provider.nodePage ? nodePageRoutes(provider.nodePage) : {}),
  };
}

/** The paths upstream answers 405 on when the debugging handlers are off. */
export const DEBUGGING_PATHS = [
  "/run/",
  "/exec/",
  "/attach/",
  "/portForward/",
  "/containerLogs/",
  "/runningpods/",
  "/debug/pprof/",
  "/logs/",
] as const;

/** A handler answering 405 with `message`, as upstream's handlers for a disabled endpoint. */
function disabled(message: string): Handler {
  return () => textResponse(405, `${message}\n`);
}

/**
 * Upstream's InstallDebuggingDisabledHandlers: 405 "Debug endpoints are disabled."
 * on every debugging path; what the read-only port always serves there.
 * @returns prefix routes
 */
export function debuggingDisabledRoutes(): Record<string, Handler> {
  const h = disabled("Debug endpoints are disabled.");
  return Object.fromEntries(DEBUGGING_PATHS.map((p) => [p, h]));
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

/** The secure port's debugging settings (KubeletConfiguration fields of the same names). */
export interface DebuggingSettings {
  /** Off: every debugging path answers 405 and `/configz` is not served. */
  enableDebuggingHandlers: boolean;
  /** `/logs/`; off: 405 "logs endpoint is disabled." */
  enableSystemLogHandler: boolean;
  /** `/debug/flags/v`; off: 405 "flags endpoint is disabled." */
  enableDebugFlagsHandler: boolean;
  /**
   * `/debug/pprof/`; off: 405 "profiling endpoint is disabled." On, it is not
   * served (404): denolet has no Go profiler, and start-up warns about it.
   */
  enableProfilingHandler: boolean;
  /** What a PUT to `/debug/flags/v` changes: the logger's verbosity. */
  setVerbosity(level: number): void;
}

/** Upstream's defaults: everything on. */
const DEBUGGING_DEFAULTS: DebuggingSettings = {
  enableDebuggingHandlers: true,
  enableSystemLogHandler: true,
  enableDebugFlagsHandler: true,
  enableProfilingHandler: true,
  setVerbosity: () => {},
};

/** An upgrade route refused before the switch, as a plain handler would refuse it. */
function refusedUpgrade(status: number, message: string): UpgradeHandler {
  return (_req, socket) =>
    writeRawResponse(socket, status, new TextEncoder().encode(message), TEXT_ERROR_HEADERS);
}

/**
 * `/debug/flags/v`: a PUT whose body is a verbosity sets it, as upstream's
 * StringFlagPutHandler with klog's setter; anything else is 406.
 */
function debugFlagsHandler(setVerbosity: (level: number) => void): Handler {
  // apiserver's writePlainText: "text/plain" with no charset, a newline after the text.
  const plain = (status: number, text: string) =>
    textResponse(status, `${text}\n`, { "content-type": "text/plain" });
  return async (req) => {
    if (req.method !== "PUT") return plain(406, "unsupported http method");
    const body = await req.text();
    // Go's strconv.ParseUint(val, 10, 32): digits only, no sign, no spaces.
    if (!/^\d+$/.test(body) || Number(body) > 0xffffffff) {
      return plain(400, `strconv.ParseUint: parsing ${JSON.stringify(body)}: invalid syntax`);
    }
    setVerbosity(Number(body));
    return plain(200, `successfully set klog.logging.verbosity to ${body}`);
  };
}

/**
 * The secure port's routes, as upstream's NewServer installs them: the read-only
 * port's (one home per route) and, with `enableDebuggingHandlers`, `/configz`,
 * `/runningpods/` (GET only), `/debug/flags/v` and the mounted prefix and upgrade
 * handlers; without it, 405 on every debugging path.
 * @param provider the agent
 * @param mounts the log and streaming handlers
 * @param debugging the debugging settings (upstream's defaults when absent)
 * @returns the route table
 */
export function secureRoutes(
  provider: AgentProvider,
  mounts: RouteMounts = {},
  debugging: DebuggingSettings = DEBUGGING_DEFAULTS,
): RouteTable {
  if (!debugging.enableDebuggingHandlers) {
    const message = "Debug endpoints are disabled.\n";
    return {
      exact: readOnlyRoutes(provider),
      prefixes: debuggingDisabledRoutes(),
      upgrades: Object.fromEntries(
        SECURE_UPGRADE_PREFIXES.map((p) => [p, refusedUpgrade(405, message)]),
      ),
    };
  }
  const prefixes: Record<string, Handler> = { ...syncTraceRoutes(provider) };
  for (const [prefix, h] of Object.entries(mounts.prefixes ?? {})) if (h) prefixes[prefix] = h;
  if (!debugging.enableSystemLogHandler) {
    prefixes["/logs/"] = disabled("logs endpoint is disabled.");
  }
  if (!debugging.enableProfilingHandler) {
    prefixes["/debug/pprof/"] = disabled("profiling endpoint is disabled.");
  }
  const upgrades: Record<string, UpgradeHandler> = {};
  for (const [prefix, h] of Object.entries(mounts.upgrades ?? {})) if (h) upgrades[prefix] = h;
  const exact: Record<string, Handler> = {
    ...readOnlyRoutes(provider),
    "/configz": configzHandler(provider.kubeletConfig),
    "/runningpods/": (req) => {
      if (req.method !== "GET") {
        return textResponse(405, "Method Not Allowed", { allow: "GET" });
      }
      return podList(provider.runningPods());
    },
    "/debug/flags/v": debugging.enableDebugFlagsHandler
      ? debugFlagsHandler(debugging.setVerbosity)
      : disabled("flags endpoint is disabled."),
  };
  return { exact, prefixes, upgrades };
}
