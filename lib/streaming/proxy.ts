/**
 * The upgrade proxy: hands a client's upgraded connection (WebSocket or SPDY)
 * to the runtime's streaming server and copies bytes both ways, as the
 * kubelet's proxyStream (an UpgradeAwareHandler with upgrade required) does.
 *
 * The client's request is re-sent to the runtime byte-for-byte apart from the
 * request target (the runtime's URL path) and `Host`, so the runtime answers
 * the handshake itself: the `101` or its refusal reaches the client unchanged,
 * and the agent never parses WebSocket or SPDY frames.
 *
 * @module
 */

import type { IncomingMessage } from "node:http";
import { createConnection, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { writeHttpError } from "./_http.ts";

/**
 * The kubelet's default `streamingConnectionIdleTimeout`: 4 hours.
 */
export const DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS = 4 * 60 * 60 * 1000;

/**
 * How long a closing side may take to flush what it was sent before it is
 * destroyed: a peer that stopped reading must not keep a socket open.
 */
export const CLOSE_GRACE_MS = 5_000;

/** Counts the proxied connections that are open right now. */
export class StreamTracker {
  #open = 0;
  readonly #closers = new Set<() => void>();

  /** Proxied connections whose sockets are not both closed yet. */
  get open(): number {
    return this.#open;
  }

  /** @internal registers a connection; the returned function unregisters it. */
  add(closer: () => void): () => void {
    this.#open++;
    this.#closers.add(closer);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#open--;
      this.#closers.delete(closer);
    };
  }

  /** Closes every open proxied connection (agent shutdown). */
  closeAll(): void {
    for (const close of [...this.#closers]) close();
  }
}

/** Options for {@link proxyUpgrade}. */
export interface ProxyOptions {
  /** Closes the connection when no byte has moved either way for this long. */
  idleTimeoutMs: number;
  clock: Clock;
  logger: Logger;
  tracker: StreamTracker;
  /** Names the stream in logs, e.g. `exec default/web/app`. */
  what: string;
}

/**
 * Request headers the proxy sets itself: `Host` names the runtime, and
 * `X-Forwarded-For` gains the client's address as upstream appends it.
 */
const REPLACED_HEADERS = new Set(["host", "x-forwarded-for"]);

/**
 * The request the runtime receives: the client's method, the runtime URL's
 * path and query, and the client's headers in their order and spelling.
 */
export function backendRequestHead(req: IncomingMessage, location: URL): string {
  const lines = [`${req.method ?? "GET"} ${location.pathname}${location.search} HTTP/1.1`];
  lines.push(`Host: ${location.host}`);
  const raw = req.rawHeaders;
  let forwarded = "";
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    if (name.toLowerCase() === "x-forwarded-for") {
      forwarded = forwarded === "" ? value : `${forwarded}, ${value}`;
      continue;
    }
    if (REPLACED_HEADERS.has(name.toLowerCase())) continue;
    // A header value cannot carry a line break through node's parser; refuse
    // to forward one anyway rather than let it split the request.
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) continue;
    lines.push(`${name}: ${value}`);
  }
  const client = req.socket?.remoteAddress;
  if (client) forwarded = forwarded === "" ? client : `${forwarded}, ${client}`;
  if (forwarded !== "") lines.push(`X-Forwarded-For: ${forwarded}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

/**
 * Proxies an upgraded client connection to `location` on the runtime's
 * streaming server until either side closes or the connection idles out.
 *
 * A failure to reach the runtime is answered on the client socket with `500`
 * and upstream's "error dialing backend" message. Once bytes flow, the end of
 * either side ends the other (after flushing what it was already sent), so a
 * dropped client closes the runtime's stream and the runtime's close reaches
 * the client. Never rejects.
 * @param req the client's request (its method, headers and socket)
 * @param client the client's socket, handed over by the server's `upgrade` event
 * @param head bytes the client sent after its request head
 * @param location the URL CRI Exec/Attach/PortForward returned
 * @param opts idle timeout, clock, logger and the open-connection tracker
 * @returns a promise that settles when both sockets are closed
 */
export function proxyUpgrade(
  req: IncomingMessage,
  client: Duplex,
  head: Uint8Array,
  location: URL,
  opts: ProxyOptions,
): Promise<void> {
  const log = opts.logger.with({ stream: opts.what });
  if (client.destroyed || client.readableEnded) {
    log.v(4).info("Client closed before the stream was proxied");
    client.destroy();
    return Promise.resolve();
  }
  const port = Number(location.port || (location.protocol === "https:" ? 443 : 80));
  // The runtime's streaming server speaks TLS only when configured so; the
  // kubelet dials the URL it is given, and containerd's default is plain HTTP.
  if (location.protocol !== "http:") {
    writeHttpError(client, 500, `unsupported streaming URL scheme ${location.protocol}\n`);
    return Promise.resolve();
  }
  const backend: Socket = createConnection({ host: location.hostname, port });
  return new Promise<void>((resolve) => {
    let closing = false;
    let clientClosed = false;
    let backendClosed = false;
    let connected = false;
    let lastActivity = opts.clock.now();
    let idleTimer: Timer | undefined;
    let graceTimer: Timer | undefined;
    const untrack = opts.tracker.add(() => destroyBoth("agent shutdown"));

    const touch = () => {
      lastActivity = opts.clock.now();
    };
    // One timer per connection, re-armed for the remainder when it fires
    // early, instead of a new timer for every chunk.
    const armIdle = (ms: number) => {
      idleTimer = opts.clock.setTimeout(() => {
        const idle = opts.clock.now() - lastActivity;
        if (idle >= opts.idleTimeoutMs) {
          log.info("Closing idle stream", { idleMs: idle });
          destroyBoth("idle timeout");
        } else {
          armIdle(opts.idleTimeoutMs - idle);
        }
      }, ms);
    };

    const settle = () => {
      if (!clientClosed || !backendClosed) return;
      idleTimer?.cancel();
      graceTimer?.cancel();
      untrack();
      resolve();
    };

    function destroyBoth(reason: string) {
      log.v(4).info("Stream closed", { reason });
      closing = true;
      idleTimer?.cancel();
      client.destroy();
      backend.destroy();
    }

    // Ends both sides gracefully: what one side already sent still reaches
    // the other before the FIN, then each socket is destroyed once flushed.
    const shutdown = (reason: string) => {
      if (closing) return;
      closing = true;
      idleTimer?.cancel();
      log.v(4).info("Stream ending", { reason });
      for (const socket of [client, backend]) {
        if (socket.destroyed) continue;
        socket.end(() => socket.destroy());
      }
      graceTimer = opts.clock.setTimeout(() => destroyBoth("close grace expired"), CLOSE_GRACE_MS);
    };

    client.on("close", () => {
      clientClosed = true;
      if (!backendClosed) {
        if (!connected) backend.destroy();
        else shutdown("client closed");
      }
      settle();
    });
    backend.on("close", () => {
      backendClosed = true;
      if (!clientClosed) shutdown("runtime closed");
      settle();
    });
    client.on("end", () => shutdown("client ended"));
    backend.on("end", () => shutdown("runtime ended"));
    client.on("error", (err) => {
      log.v(4).info("Client stream error", { err: String(err) });
      destroyBoth("client error");
    });
    backend.on("error", (err) => {
      if (!connected) {
        log.error("Error dialing the runtime's streaming server", err, {
          url: location.origin,
        });
        writeHttpError(client, 500, `error dialing backend: ${err.message}\n`, () => {
          client.destroy();
        });
        backend.destroy();
        return;
      }
      log.v(4).info("Runtime stream error", { err: String(err) });
      destroyBoth("runtime error");
    });

    backend.on("connect", () => {
      connected = true;
      if (closing || client.destroyed) {
        backend.destroy();
        return;
      }
      backend.setNoDelay(true);
      backend.write(backendRequestHead(req, location));
      if (head.length > 0) backend.write(head);
      client.on("data", (chunk: Uint8Array) => {
        touch();
        if (!backend.write(chunk)) client.pause();
      });
      backend.on("drain", () => client.resume());
      backend.on("data", (chunk: Uint8Array) => {
        touch();
        if (!client.write(chunk)) backend.pause();
      });
      client.on("drain", () => backend.resume());
      client.resume();
      armIdle(opts.idleTimeoutMs);
    });
  });
}
