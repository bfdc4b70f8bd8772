/**
 * The agent's HTTP servers and every route they serve: `/healthz` on the
 * healthz port, and on `--read-only-port` `/pods`, `/healthz`, `/configz`,
 * `/stats/summary` and `/metrics/*`. The routes read the agent through an
 * {@link AgentProvider}, so the authenticated 10250 server can serve the
 * same handlers.
 *
 * ```ts
 * const servers = startAgentServers({
 *   healthz: { hostname: "127.0.0.1", port: 10248 },
 *   readOnly: { hostname: "0.0.0.0", port: 10255 },
 *   provider,
 *   logger,
 * });
 * ```
 *
 * @module
 */

export { type HealthCheck, healthzHandler } from "./healthz.ts";
export { type Handler, json, type RunningServer, serve, type ServeOptions } from "./serve.ts";
export {
  type AgentProvider,
  configzHandler,
  healthzRoutes,
  readOnlyRoutes,
  statsHandlers,
  type StatsSource,
} from "./routes.ts";
export { type AgentServersOptions, type ListenAddress, startAgentServers } from "./servers.ts";
