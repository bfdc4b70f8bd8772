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
import {
  resolveServingCertFiles,
  ServingCertificate,
  type ServingCertSource,
} from "../certs/mod.ts";
import type { KubeClient } from "../kubeapi/mod.ts";
import type { KubeletAuthentication, KubeletAuthorization } from "../options/mod.ts";
import {
  buildAuthenticator,
  buildAuthorizer,
  createRequestFilter,
  resolveTlsOptions,
  type SecureListener,
  startSecureListener,
} from "../server_auth/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { handleNodeRequest } from "./node_bridge.ts";
import type { RouteTable } from "./routes.ts";
import { findRoute } from "./serve.ts";
import type { RunningServer } from "./serve.ts";
import { TEXT_ERROR_HEADERS, writeRawResponse } from "../util/raw_http.ts";

/**
 * A serving certificate requested from the cluster (`serverTLSBootstrap`):
 * nothing is served on the secure port until it is issued, as upstream.
 */
export interface RequestedServingCert {
  /**
   * Resolves once a certificate is issued.
   * @throws the signal's reason when aborted first
   */
  ready(signal: AbortSignal): Promise<ServingCertSource>;
  /** The requested key's type ("ec"), for resolving `tlsCipherSuites`. */
  keyType: string;
}

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
  /** With `serverTLSBootstrap`: the requested certificate, used instead of the files. */
  requestedCert?: RequestedServingCert | undefined;
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
  const clock = opts.clock ? { clock: opts.clock } : {};
  const client = opts.client ? { client: opts.client } : {};
  let files: { certFile: string; keyFile: string } | undefined;
  if (!opts.requestedCert) {
    const resolved = await resolveServingCertFiles({
      tlsCertFile: opts.tlsCertFile,
      tlsPrivateKeyFile: opts.tlsPrivateKeyFile,
      certDir: opts.certDir,
      host: opts.hostname,
      ips: opts.nodeIPs,
    });
    if (resolved.generated) {
      logger.info("Generated self-signed serving certificate", {
        cert: resolved.certFile,
        key: resolved.keyFile,
      });
    }
    files = resolved;
  }
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
  const servingCert = files
    ? await ServingCertificate.load({ ...files, ...clock, logger })
    : undefined;
  const tls = resolveTlsOptions({
    ...(opts.tlsMinVersion ? { tlsMinVersion: opts.tlsMinVersion } : {}),
    ...(opts.tlsCipherSuites ? { tlsCipherSuites: opts.tlsCipherSuites } : {}),
    keyType: servingCert?.keyType() ?? opts.requestedCert?.keyType ?? "",
  });
  for (const w of tls.warnings) logger.warn(w);
  const filter = createRequestFilter({
    authenticator,
    authorizer,
    nodeName: opts.nodeName,
    logger,
  });
  const listen = (source: ServingCertSource) =>
    startSecureListener({
      address: opts.address,
      port: opts.port,
      servingCert: source,
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
  if (!servingCert) return deferredListener(opts, listen);
  servingCert.start();
  let listener;
  try {
    listener = await listen(servingCert);
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

/** The secure port once the requested serving certificate is issued; nothing before. */
function deferredListener(
  opts: SecureServerOptions,
  listen: (source: ServingCertSource) => Promise<SecureListener>,
): RunningServer {
  const { logger } = opts;
  const stop = new AbortController();
  let listener: SecureListener | undefined;
  logger.info("Waiting for the serving certificate (serverTLSBootstrap) before serving", {
    port: opts.port,
  });
  const started = opts.requestedCert!.ready(stop.signal).then(async (source) => {
    listener = await listen(source);
    logger.info("Serving certificate issued: secure port serving", { port: listener.port });
  }).catch((err) => {
    if (!stop.signal.aborted) logger.error("Secure server not started", err, { port: opts.port });
  });
  return {
    port: opts.port,
    shutdown: async () => {
      stop.abort(new Error("server shutting down"));
      await started;
      await listener?.close();
    },
  };
}
