/**
 * Starts the agent's servers from the flags' addresses and ports.
 *
 * @module
 */

import type { Logger } from "../util/log.ts";
import {
  type AgentProvider,
  debuggingDisabledRoutes,
  type DebuggingSettings,
  healthzRoutes,
  readOnlyRoutes,
  type RouteMounts,
  secureRoutes,
  syncTraceRoutes,
} from "./routes.ts";
import { type SecureServerOptions, startSecureServer } from "./secure.ts";
import { type RunningServer, serve } from "./serve.ts";

/** Where one server listens; port 0 or less disables it. */
export interface ListenAddress {
  hostname: string;
  port: number;
}

/** The secure server's settings: everything but its routes, which come from the provider. */
export type SecureSettings = Omit<SecureServerOptions, "routes" | "logger"> & {
  /** The log and streaming handlers mounted on the secure port. */
  mounts?: RouteMounts;
  /** `enableDebuggingHandlers` and the endpoints it gates; upstream's defaults when absent. */
  debugging?: DebuggingSettings;
};

/** Options for {@link startAgentServers}. */
export interface AgentServersOptions {
  /** `--healthz-bind-address`, `--healthz-port`. */
  healthz: ListenAddress;
  /** `--address`, `--read-only-port`. */
  readOnly: ListenAddress;
  /** `--address`, `--port` and the TLS/auth settings; absent when `enableServer` is false. */
  secure?: SecureSettings;
  provider: AgentProvider;
  logger: Logger;
}

/**
 * Starts the healthz, read-only and secure servers that have a port.
 * @param opts addresses, the agent and a logger
 * @returns the running servers
 * @throws {Error} naming the address or setting when one cannot start (the others are shut down)
 */
export async function startAgentServers(opts: AgentServersOptions): Promise<RunningServer[]> {
  const { provider, logger } = opts;
  const servers: RunningServer[] = [];
  try {
    // First: a refused setting then fails start-up before anything answers, and once
    // /healthz answers every server is up.
    if (opts.secure && opts.secure.port > 0) {
      const { mounts, debugging, ...settings } = opts.secure;
      servers.push(
        await startSecureServer({
          ...settings,
          routes: secureRoutes(provider, mounts, debugging),
          logger,
        }),
      );
    }
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
        // Upstream builds the read-only server without a configuration, so with its
        // debugging handlers off.
        prefixes: { ...debuggingDisabledRoutes(), ...syncTraceRoutes(provider) },
      }));
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.shutdown().catch(() => {})));
    throw err;
  }
  return servers;
}
