/**
 * The kubelet's secure listener: a node:https server (Deno.serve can neither
 * ask for client certificates nor hand over upgraded sockets) with the
 * serving certificate, client certificates requested but not required, the
 * TLS minimum version, and every request — plain or upgrade — passed through
 * the {@link RequestFilter} with its peer chain before a route sees it.
 * A rotated serving certificate is swapped in with `setSecureContext`, which
 * Deno 2.9.6 honours for new connections.
 *
 * @module
 */

import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import type { ServingCertSource } from "../certs/mod.ts";
import type { Logger } from "../util/log.ts";
import type { FilterResult, RequestFilter } from "./filter.ts";
import type { ResolvedTls } from "./tls_options.ts";
import type { UserInfo } from "./types.ts";
import { TEXT_ERROR_HEADERS, writeRawResponse } from "../util/raw_http.ts";

const encoder = new TextEncoder();

/** What the server mounts behind the gate. */
export interface SecureRoutes {
  /** A plain request that passed authentication and authorization. */
  onRequest(req: IncomingMessage, res: ServerResponse, identity: UserInfo): void | Promise<void>;
  /** An upgrade request (exec, attach, port-forward) that passed the gate. */
  onUpgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Uint8Array,
    identity: UserInfo,
  ): void | Promise<void>;
}

/** Options for {@link startSecureListener}. */
export interface SecureListenerOptions {
  /** `address`; "0.0.0.0" listens on every IPv4 address, "::" on all. */
  address: string;
  /** `port`; 0 picks a free one (tests). */
  port: number;
  servingCert: ServingCertSource;
  /** From resolveTlsOptions. */
  tls: ResolvedTls;
  filter: RequestFilter;
  routes: SecureRoutes;
  logger?: Logger;
}

/** A started listener. */
export interface SecureListener {
  readonly address: string;
  readonly port: number;
  /** The node:https server, e.g. for connection counts in tests. */
  readonly server: https.Server;
  /** Stops accepting, ends idle connections, resolves when closed. */
  close(): Promise<void>;
}

interface PeerCert {
  raw?: Uint8Array;
  fingerprint256?: string;
  issuerCertificate?: PeerCert;
}

/** The client's chain (DER, leaf first) as the TLS socket reports it. */
export function peerCertificates(socket: TLSSocket): Uint8Array[] {
  const out: Uint8Array[] = [];
  const seen = new Set<string>();
  let cert = socket.getPeerCertificate(true) as PeerCert | null;
  while (cert?.raw && out.length < 10) {
    const id = cert.fingerprint256 ?? String(out.length);
    // A self-signed certificate lists itself as its issuer.
    if (seen.has(id)) break;
    seen.add(id);
    out.push(new Uint8Array(cert.raw));
    cert = cert.issuerCertificate ?? null;
  }
  return out;
}

function requestPath(url: string | undefined): string | undefined {
  try {
    return decodeURIComponent(new URL(url ?? "/", "https://kubelet").pathname);
  } catch {
    return undefined;
  }
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  res.writeHead(response.status, {
    ...Object.fromEntries(response.headers),
    "content-length": String(body.length),
  });
  res.end(body);
}

async function rejectUpgrade(socket: Duplex, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  writeRawResponse(socket, response.status, body, Object.fromEntries(response.headers));
}

const badPath = (): FilterResult => ({ response: new Response("Bad Request", { status: 400 }) });

/**
 * Starts the listener.
 * @throws Error naming the address and port when it cannot listen
 */
export async function startSecureListener(opts: SecureListenerOptions): Promise<SecureListener> {
  const log = opts.logger;
  const { cert, key } = opts.servingCert.current();
  const server = https.createServer({
    cert,
    key,
    minVersion: opts.tls.minVersion,
    // Ask for a client certificate but let the filter judge it: Deno does not
    // verify against `ca`, and a request without one may still carry a token.
    requestCert: true,
    rejectUnauthorized: false,
  });

  const gate = (req: IncomingMessage): Promise<FilterResult> => {
    const path = requestPath(req.url);
    if (path === undefined) return Promise.resolve(badPath());
    return opts.filter({
      method: req.method ?? "GET",
      path,
      headers: req.headers,
      peerCertificates: peerCertificates(req.socket as TLSSocket),
    });
  };

  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    (async () => {
      const verdict = await gate(req);
      if (verdict.response) return await writeResponse(res, verdict.response);
      await opts.routes.onRequest(req, res, verdict.identity);
    })().catch((err) => {
      log?.error("Request failed", err, { path: req.url, method: req.method });
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end("Internal Server Error");
      } else res.destroy();
    });
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Uint8Array) => {
    (async () => {
      const verdict = await gate(req);
      if (verdict.response) return await rejectUpgrade(socket, verdict.response);
      await opts.routes.onUpgrade(req, socket, head, verdict.identity);
    })().catch((err) => {
      log?.error("Upgrade request failed", err, { path: req.url, method: req.method });
      socket.destroy();
    });
  });

  // Go's http.Server has no CONNECT tunnel: a CONNECT is one more request, gated as any
  // and refused by the kubelet's routes. node:http closes the connection unanswered.
  server.on("connect", (req: IncomingMessage, socket: Duplex) => {
    (async () => {
      const verdict = await gate(req);
      if (verdict.response) return await rejectUpgrade(socket, verdict.response);
      writeRawResponse(socket, 405, encoder.encode("Method Not Allowed"), TEXT_ERROR_HEADERS);
    })().catch((err) => {
      log?.error("CONNECT request failed", err, { path: req.url });
      socket.destroy();
    });
  });

  // A request that does not parse gets Go's answer (431 past the header limit, else 400),
  // flushed before the close: node's default writes it and destroys the socket at once,
  // which over TLS can drop it unsent.
  server.on("clientError", (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === "ECONNRESET" || err.code === "EPIPE") return socket.destroy();
    const status = err.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
    writeRawResponse(
      socket,
      status,
      encoder.encode(`${status} ${STATUS_CODES[status]}`),
      { "Content-Type": "text/plain; charset=utf-8" },
    );
  });

  server.on(
    "tlsClientError",
    (err: Error) => log?.v(4).info("TLS handshake failed", { err: err.message }),
  );

  const unsubscribe = opts.servingCert.onChange((pair) => {
    server.setSecureContext({ cert: pair.cert, key: pair.key, minVersion: opts.tls.minVersion });
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => {
      unsubscribe();
      reject(
        new Error(`cannot listen on ${opts.address}:${opts.port}: ${err.message}`, { cause: err }),
      );
    };
    server.once("error", onError);
    server.listen(opts.port, opts.address, () => {
      server.off("error", onError);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  log?.info("Starting to listen", { address: addr.address, port: addr.port });
  return {
    address: addr.address,
    port: addr.port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        unsubscribe();
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}
