/**
 * Starts the agent's servers from the flags' addresses and ports.
 *
 * @module
 */

import type { Logger } from "../util/log.ts";
import { type AgentProvider, healthzRoutes, readOnlyRoutes } from "./routes.ts";
import { type RunningServer, serve } from "./serve.ts";

/** Where one server listens; port 0 or less disables it. */
export interface ListenAddress {
  hostname: string;
  port: number;
}

/** Options for {@link startAgentServers}. */
export interface AgentServersOptions {
  /** `--healthz-bind-address`, `--healthz-port`. */
  healthz: ListenAddress;
  /** `--address`, `--read-only-port`. */
  readOnly: ListenAddress;
  provider: AgentProvider;
  logger: Logger;
}

/**
 * Starts the healthz and read-only servers that have a port.
 * @param opts addresses, the agent and a logger
 * @returns the running servers
 * @throws {Error} naming the address when one cannot bind (the others are shut down)
 */
export function startAgentServers(opts: AgentServersOptions): RunningServer[] {
  const { provider, logger } = opts;
  const servers: RunningServer[] = [];
  try {
    if (opts.healthz.port > 0) {
      servers.push(serve({
        name: "healthz",
        ...opts.healthz,
        logger,
        routes: healthzRoutes(provider),
      }));
    }
    if (opts.readOnly.port > 0) {
      servers.push(serve({
        name: "read-only",
        ...opts.readOnly,
        logger,
        routes: readOnlyRoutes(provider),
      }));
    }
  } catch (err) {
    for (const s of servers) void s.shutdown();
    throw err;
  }
  return servers;
}
