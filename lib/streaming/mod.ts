/**
 * The kubelet's streaming endpoints: `/exec`, `/attach`, `/portForward` and
 * `/run`, served as upstream's kubelet serves them. Exec, attach and
 * port-forward ask the runtime (CRI Exec/Attach/PortForward) for a URL on its
 * streaming server and proxy the client's upgraded connection (WebSocket or
 * SPDY) there byte for byte; `/run` runs a command through CRI ExecSync.
 *
 * ```ts
 * import { createServer } from "node:http";
 * import { createStreamingHandlers } from "./lib/streaming/mod.ts";
 * const streaming = createStreamingHandlers({ runtime, getPodByName });
 * const server = createServer(plainRequestListener); // bridges streaming.handle for its paths
 * server.on("upgrade", (req, socket, head) => {
 *   const path = new URL(req.url ?? "/", "http://node").pathname;
 *   if (streaming.matches(path)) streaming.upgrade(req, socket, head);
 *   else socket.destroy();
 * });
 * ```
 *
 * @module
 */

export {
  createStreamingHandlers,
  type Handler,
  type StreamingHandlers,
  type StreamingOptions,
  type UpgradeHandler,
} from "./handlers.ts";
export {
  backendRequestHead,
  CLOSE_GRACE_MS,
  DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS,
  type ProxyOptions,
  proxyUpgrade,
  StreamTracker,
} from "./proxy.ts";
export {
  type HeaderLookup,
  isUpgradeRequest,
  isWebSocketRequest,
  parseCommand,
  parsePortForwardPorts,
  parseRunCommand,
  parseStreamOptions,
  parseStreamPath,
  STREAM_PATH_PREFIXES,
  type StreamKind,
  type StreamOptions,
  StreamParams,
  type StreamTarget,
} from "./request.ts";
