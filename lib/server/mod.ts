/**
 * The agent's HTTP servers and every route they serve: `/healthz` on the
 * healthz port; on `--read-only-port` `/pods`, `/healthz`, `/stats/summary`,
 * `/metrics/*` and the node page (`/ui`, lib/ui); and on `--port` (10250, TLS, authenticated and authorized
 * by lib/server_auth) the same routes plus, with the debugging handlers on,
 * `/configz`, `/runningpods/`, `/debug/flags/v` and the mounted log and
 * streaming handlers ({@link RouteMounts}). The routes read
 * the agent through an {@link AgentProvider}.
 *
 * ```ts
 * const servers = await startAgentServers({
 *   healthz: { hostname: "127.0.0.1", port: 10248 },
 *   readOnly: { hostname: "0.0.0.0", port: 0 },
 *   secure: {
 *     address: "0.0.0.0", port: 10250, tlsCertFile: "", tlsPrivateKeyFile: "",
 *     certDir: "/var/lib/kubelet/pki", hostname: "node-1", nodeIPs: ["10.0.0.5"],
 *     authentication, authorization, client, nodeName: "node-1",
 *     mounts: {
 *       prefixes: { "/containerLogs/": containerLogsHandler },
 *       upgrades: { "/exec/": execUpgradeHandler },
 *     },
 *   },
 *   provider,
 *   logger,
 * });
 * ```
 *
 * @module
 */

export { type HealthCheck, healthzHandler } from "./healthz.ts";
export {
  findRoute,
  type Handler,
  json,
  type RunningServer,
  serve,
  type ServeOptions,
  textResponse,
} from "./serve.ts";
export {
  type AgentProvider,
  configzHandler,
  DEBUGGING_PATHS,
  debuggingDisabledRoutes,
  type DebuggingSettings,
  healthzRoutes,
  readOnlyRoutes,
  type RouteMounts,
  type RouteTable,
  SECURE_PREFIXES,
  SECURE_UPGRADE_PREFIXES,
  secureRoutes,
  statsHandlers,
  type StatsSource,
  type UpgradeHandler,
} from "./routes.ts";
export {
  type BridgeOptions,
  handleNodeRequest,
  notFound,
  toFetchRequest,
  writeFetchResponse,
} from "./node_bridge.ts";
export { type SecureServerOptions, startSecureServer } from "./secure.ts";
export {
  type AgentServersOptions,
  type ListenAddress,
  type SecureSettings,
  startAgentServers,
} from "./servers.ts";
