/**
 * The kubelet's secure server on `--address`:`--port` (10250): the serving
 * certificate (configured, or self-signed under `--cert-dir`), TLS settings,
 * authentication and authorization from lib/server_auth, and the
 * {@link RouteTable} behind them: plain requests through the fetch bridge,
 * upgrades to the mounted {@link UpgradeHandler}s.
 *
 * @module
 */

import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { resolveServingCertFiles, ServingCertificate } from "../certs/mod.ts";
import type { KubeClient } from "../kubeapi/mod.ts";
import type { KubeletAuthentication, KubeletAuthorization } from "../options/mod.ts";
import {
  buildAuthenticator,
  buildAuthorizer,
  createRequestFilter,
  resolveTlsOptions,
  startSecureListener,
} from "../server_auth/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { handleNodeRequest } from "./node_bridge.ts";
import type { RouteTable } from "./routes.ts";
import { findRoute } from "./serve.ts";
import type { RunningServer } from "./serve.ts";
import { TEXT_ERROR_HEADERS, writeRawResponse } from "../util/raw_http.ts";

/** Options for {@link startSecureServer}. */
export interface SecureServerOptions {
  /** `address`. */
  address: string;
  /** `port`; 0 picks a free one (tests). */
  port: number;
  /** `tlsCertFile` / `tlsPrivateKeyFile`; empty for the self-signed pair. */
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  /** `--cert-dir`, where the self-signed pair lives. */
  certDir: string;
  /** The node's hostname and IPs, named by a self-signed certificate. */
  hostname: string;
  nodeIPs: string[];
  tlsMinVersion?: string;
  tlsCipherSuites?: string[];
  authentication: KubeletAuthentication;
  authorization: KubeletAuthorization;
  /** The apiserver client; required by the webhook modes. */
  client?: KubeClient | undefined;
  nodeName: string;
  routes: RouteTable;
  clock?: Clock;
  logger: Logger;
}

function upgradePath(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? "/", "https://kubelet").pathname;
  } catch {
    return "";
  }
}

/**
 * Starts the secure server as upstream's kubelet does at start-up.
 * @returns the running server (its certificate watcher stops with it)
 * @throws Error naming the setting or file at fault: a half-configured or
 *   unreadable certificate pair, a TLS setting Deno cannot honour, a webhook
 *   mode without an apiserver client ("no client provided, cannot use webhook
 *   authentication"), or an address it cannot listen on
 */
export async function startSecureServer(opts: SecureServerOptions): Promise<RunningServer> {
  const { logger, routes } = opts;
  const files = await resolveServingCertFiles({
    tlsCertFile: opts.tlsCertFile,
    tlsPrivateKeyFile: opts.tlsPrivateKeyFile,
    certDir: opts.certDir,
    host: opts.hostname,
    ips: opts.nodeIPs,
  });
  if (files.generated) {
    logger.info("Generated self-signed serving certificate", {
      cert: files.certFile,
      key: files.keyFile,
    });
  }
  const clock = opts.clock ? { clock: opts.clock } : {};
  const client = opts.client ? { client: opts.client } : {};
  // Built before the certificate watcher starts, so a refused setting leaves nothing running.
  const authenticator = await buildAuthenticator({
    authentication: opts.authentication,
    ...client,
    ...clock,
    logger,
  });
  const authorizer = buildAuthorizer({
    authorization: opts.authorization,
    ...client,
    ...clock,
    logger,
  });
  const servingCert = await ServingCertificate.load({
    certFile: files.certFile,
    keyFile: files.keyFile,
    ...clock,
    logger,
  });
  const tls = resolveTlsOptions({
    ...(opts.tlsMinVersion ? { tlsMinVersion: opts.tlsMinVersion } : {}),
    ...(opts.tlsCipherSuites ? { tlsCipherSuites: opts.tlsCipherSuites } : {}),
    keyType: servingCert.keyType(),
  });
  for (const w of tls.warnings) logger.warn(w);
  const filter = createRequestFilter({
    authenticator,
    authorizer,
    nodeName: opts.nodeName,
    logger,
  });
  servingCert.start();
  let listener;
  try {
    listener = await startSecureListener({
      address: opts.address,
      port: opts.port,
      servingCert,
      tls,
      filter,
      logger,
      routes: {
        onRequest: async (req, res) => {
          const path = new URL(req.url ?? "/", "https://kubelet").pathname;
          const handler = findRoute(routes.exact, routes.prefixes, path);
          await handleNodeRequest(req, res, { handler, logger, name: "secure" });
        },
        onUpgrade: async (req: IncomingMessage, socket: Duplex, head: Uint8Array) => {
          const handler = findRoute({}, routes.upgrades, upgradePath(req));
          if (!handler) {
            writeRawResponse(
              socket,
              404,
              new TextEncoder().encode("404 page not found\n"),
              TEXT_ERROR_HEADERS,
            );
            return;
          }
          await handler(req, socket, head);
        },
      },
    });
  } catch (err) {
    servingCert.close();
    throw err;
  }
  return {
    port: listener.port,
    shutdown: async () => {
      servingCert.close();
      await listener.close();
    },
  };
}
