/**
 * The kubelet's streaming endpoints: `/exec`, `/attach` and `/portForward`
 * (upgraded connections proxied to the runtime's streaming server) and `/run`
 * (a one-shot command through CRI ExecSync), with upstream's checks, status
 * codes and messages (pkg/kubelet/server/server.go getExec, getAttach,
 * getPortForward, getRun).
 *
 * @module
 */

import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Pod } from "../api/types.ts";
import { CriError, GrpcCode } from "../cri/errors.ts";
import type { RuntimeService } from "../cri/types.ts";
import { getPodStatus as readPodStatus } from "../kuberuntime/runtime_status.ts";
import type { RuntimePodStatus } from "../kuberuntime/types.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { writeHttpError } from "./_http.ts";
import {
  DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS,
  proxyUpgrade,
  StreamTracker,
} from "./proxy.ts";
import {
  type HeaderLookup,
  isUpgradeRequest,
  isWebSocketRequest,
  parseCommand,
  parsePortForwardPorts,
  parseRunCommand,
  parseStreamOptions,
  parseStreamPath,
  type StreamTarget,
} from "./request.ts";

export type { Handler, UpgradeHandler } from "../server/mod.ts";
import { type Handler, textResponse, type UpgradeHandler } from "../server/mod.ts";

/** What the streaming endpoints need from the agent. */
export interface StreamingOptions {
  /** The CRI client: Exec, Attach, PortForward and ExecSync. */
  runtime: Pick<RuntimeService, "exec" | "attach" | "portForward" | "execSync">;
  /** The pod this node runs under that name (the pod manager's view), if any. */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /**
   * The runtime's view of a pod: its sandboxes and containers, newest first.
   * Defaults to asking `runtime` (lib/kuberuntime getPodStatus), which needs
   * the full RuntimeService; the agent passes its runtime manager's.
   */
  getPodStatus?(uid: string): Promise<RuntimePodStatus>;
  /**
   * Maps a mirror pod's UID to its static pod's (upstream's
   * TranslatePodUID); identity by default.
   */
  translatePodUid?(uid: string): string;
  /** `streamingConnectionIdleTimeout`; default 4 hours. */
  streamingConnectionIdleTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/** The streaming endpoints, ready for the kubelet server to mount. */
export interface StreamingHandlers {
  /**
   * Serves an upgrade request to `/exec`, `/attach` or `/portForward`: checks
   * it, asks the runtime for a stream and proxies the connection there. Any
   * other path is answered 404 on the socket.
   */
  upgrade: UpgradeHandler;
  /**
   * Serves a plain (non-upgrade) request: `/run`, and upstream's refusal of a
   * non-upgrade `/exec`, `/attach` or `/portForward`.
   */
  handle: Handler;
  /** Whether a path belongs to these endpoints. */
  matches(pathname: string): boolean;
  /** Proxied connections open right now. */
  openStreams(): number;
  /** Closes every proxied connection (agent shutdown). */
  closeAll(): void;
}

/** A refusal: the status and body upstream answers with. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * How long a client should wait after the runtime refused a stream because
 * too many are pending: the streaming request cache's TTL, as upstream's
 * streaming.WriteError says.
 */
const RETRY_AFTER_SECONDS = "60";

/** upstream's streaming.WriteError: the runtime's gRPC code decides the status. */
function runtimeError(err: unknown): HttpError {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof CriError) {
    if (err.code === GrpcCode.NOT_FOUND) return new HttpError(404, message);
    if (err.code === GrpcCode.RESOURCE_EXHAUSTED) {
      return new HttpError(429, message, { "Retry-After": RETRY_AFTER_SECONDS });
    }
  }
  return new HttpError(500, message);
}

const METHODS = new Set(["GET", "POST"]);

/**
 * go-restful's answers for a path under a streaming prefix that no route
 * matches, and for a method no route takes (no trailing newline).
 */
const NOT_FOUND = "404: Page Not Found";
const METHOD_NOT_ALLOWED = "405: Method Not Allowed";

/**
 * Creates the streaming endpoints.
 * @param opts the runtime, the pod lookups, the idle timeout, clock and logger
 * @returns the handlers and the open-connection count
 */
export function createStreamingHandlers(opts: StreamingOptions): StreamingHandlers {
  const clock = opts.clock ?? realClock;
  const logger = (opts.logger ?? silentLogger).with({ component: "streaming" });
  const idleTimeoutMs = opts.streamingConnectionIdleTimeoutMs ??
    DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS;
  const tracker = new StreamTracker();
  const runtime = opts.runtime;
  // Streams look at container ids and states only: no termination message is read from logs.
  const noLogs = () => Promise.reject(new Error("logs are not read for streaming"));
  const podStatus = opts.getPodStatus ??
    ((uid: string) => readPodStatus(opts.runtime as RuntimeService, uid, noLogs));
  const translate = opts.translatePodUid ?? ((uid: string) => uid);

  function lookupPod(target: StreamTarget): Pod {
    const pod = opts.getPodByName(target.namespace, target.pod);
    if (!pod) throw new HttpError(404, "pod does not exist");
    return pod;
  }

  /** upstream's findContainer: a running container of that name in the runtime's pod. */
  async function findContainerId(pod: Pod, target: StreamTarget): Promise<string> {
    const uid = translate(target.uid ?? pod.metadata.uid ?? "");
    const status = uid === "" ? undefined : await podStatus(uid);
    const container = status?.containers.find((c) =>
      c.name === target.container && c.state === "running"
    );
    if (!container) throw new HttpError(500, `container not found ("${target.container}")`);
    return container.id;
  }

  /** upstream's GetPortForward: the pod must be running in the runtime with a ready sandbox. */
  async function findSandboxId(pod: Pod, target: StreamTarget): Promise<string> {
    if (target.uid !== undefined && target.uid !== pod.metadata.uid) {
      throw new HttpError(404, "pod not found");
    }
    const uid = translate(pod.metadata.uid ?? "");
    const status = uid === "" ? undefined : await podStatus(uid);
    const sandbox = status?.sandboxes.find((s) => s.state === "ready");
    if (!sandbox) {
      throw new HttpError(500, `pod not found ("${pod.metadata.name}_${pod.metadata.namespace}")`);
    }
    return sandbox.id;
  }

  /** Everything before the proxy: checks, lookups and the CRI call returning the URL. */
  async function prepare(
    target: StreamTarget,
    url: URL,
    header: HeaderLookup,
  ): Promise<string> {
    if (target.kind === "portForward") {
      const ports = portForwardPorts(url, header);
      const pod = lookupPod(target);
      const sandboxId = await findSandboxId(pod, target);
      try {
        return await runtime.portForward(sandboxId, ports);
      } catch (err) {
        throw runtimeError(err);
      }
    }
    const streams = streamOptions(url);
    const pod = lookupPod(target);
    const containerId = await findContainerId(pod, target);
    try {
      if (target.kind === "exec") {
        return await runtime.exec(containerId, { cmd: parseCommand(url.searchParams), ...streams });
      }
      return await runtime.attach(containerId, streams);
    } catch (err) {
      throw runtimeError(err);
    }
  }

  const upgrade: UpgradeHandler = async (req, socket, head) => {
    // The client may go away while the runtime is asked for a stream: hold
    // its bytes (paused), and listen so neither that nor a socket error
    // (which would throw with no listener) goes unnoticed.
    socket.pause();
    let dropped = false;
    const onDrop = () => {
      dropped = true;
    };
    socket.on("close", onDrop);
    socket.on("end", onDrop);
    socket.on("error", onDrop);
    try {
      await serveUpgrade(req, socket, head, () => dropped);
    } finally {
      socket.off("close", onDrop);
      socket.off("end", onDrop);
      socket.off("error", onDrop);
    }
  };

  async function serveUpgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Uint8Array,
    dropped: () => boolean,
  ): Promise<void> {
    const url = new URL(req.url ?? "/", "http://kubelet.invalid");
    const target = parseStreamPath(url.pathname);
    const header: HeaderLookup = (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(", ") : value;
    };
    if (!target || target.kind === "run") {
      writeHttpError(socket, 404, NOT_FOUND);
      return;
    }
    if (!METHODS.has(req.method ?? "")) {
      writeHttpError(socket, 405, METHOD_NOT_ALLOWED, undefined, { Allow: "GET, POST" });
      return;
    }
    const what = `${target.kind} ${target.namespace}/${target.pod}` +
      (target.container ? `/${target.container}` : "");
    let location: URL;
    try {
      location = new URL(await prepare(target, url, header));
    } catch (err) {
      const e = err instanceof HttpError ? err : runtimeError(err);
      logger.v(2).info("Refused stream", { stream: what, status: e.status, err: e.message });
      writeHttpError(socket, e.status, e.message, undefined, e.headers);
      return;
    }
    if (dropped() || socket.destroyed || socket.readableEnded) {
      logger.v(4).info("Client left before the stream was proxied", { stream: what });
      socket.destroy();
      return;
    }
    await proxyUpgrade(req, socket, head, location, {
      idleTimeoutMs,
      clock,
      logger,
      tracker,
      what,
    });
  }

  async function run(target: StreamTarget, url: URL): Promise<Response> {
    const pod = lookupPod(target);
    const containerId = await findContainerId(pod, target);
    const cmd = parseRunCommand(url.searchParams);
    let res;
    try {
      res = await runtime.execSync(containerId, cmd, 0);
    } catch (err) {
      throw new HttpError(500, err instanceof Error ? err.message : String(err));
    }
    if (res.exitCode !== 0) {
      const stderr = new TextDecoder().decode(res.stderr);
      throw new HttpError(
        500,
        `command '${cmd.join(" ")}' exited with ${res.exitCode}: ${stderr}`,
      );
    }
    const body = new Uint8Array(res.stdout.length + res.stderr.length);
    body.set(res.stdout);
    body.set(res.stderr, res.stdout.length);
    // upstream writes the output raw under a JSON content type (writeJSONResponse).
    return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
  }

  const handle: Handler = async (req, url) => {
    const target = parseStreamPath(url.pathname);
    if (!target) return textResponse(404, NOT_FOUND);
    const allow = target.kind === "run" ? "POST" : "GET, POST";
    if (!allow.split(", ").includes(req.method)) {
      return textResponse(405, METHOD_NOT_ALLOWED, { allow });
    }
    try {
      if (target.kind === "run") return await run(target, url);
      // A plain request cannot be proxied: upstream checks it as usual, then
      // its UpgradeAwareHandler refuses it. The runtime is not asked for a
      // stream nobody would use.
      const header: HeaderLookup = (name) => req.headers.get(name) ?? undefined;
      if (target.kind === "portForward") {
        portForwardPorts(url, header);
        await findSandboxId(lookupPod(target), target);
      } else {
        streamOptions(url);
        await findContainerId(lookupPod(target), target);
      }
      // upstream's UpgradeAwareHandler refuses through the kubelet's responder (http.Error).
      if (!isUpgradeRequest(header)) return textResponse(500, "Upgrade request required\n");
      return textResponse(500, "the server did not hand over the upgraded connection\n");
    } catch (err) {
      const e = err instanceof HttpError ? err : runtimeError(err);
      return textResponse(e.status, e.message, e.headers);
    }
  };

  return {
    upgrade,
    handle,
    matches: (pathname) => parseStreamPath(pathname) !== undefined,
    openStreams: () => tracker.open,
    closeAll: () => tracker.closeAll(),
  };
}

/** The exec/attach stream options; a bad request is the client's fault (400). */
function streamOptions(url: URL) {
  try {
    return parseStreamOptions(url.searchParams);
  } catch (err) {
    throw new HttpError(400, (err as Error).message);
  }
}

/** The port-forward ports; a bad request is the client's fault (400). */
function portForwardPorts(url: URL, header: HeaderLookup): number[] {
  try {
    return parsePortForwardPorts(url.searchParams, isWebSocketRequest(header));
  } catch (err) {
    throw new HttpError(400, (err as Error).message);
  }
}
