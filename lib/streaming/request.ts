/**
 * What a streaming request asks for, read from its path, query and headers as
 * the kubelet reads them (pkg/kubelet/server/server.go, the remotecommand
 * and portforward option parsers). Pure functions: no I/O.
 *
 * @module
 */

/** The kinds of streaming endpoints the kubelet serves. */
export type StreamKind = "exec" | "attach" | "portForward" | "run";

/** A request path resolved to its endpoint and the pod/container it names. */
export interface StreamTarget {
  kind: StreamKind;
  namespace: string;
  pod: string;
  /** The pod UID when the path carries one (`/exec/{ns}/{pod}/{uid}/{container}`). */
  uid?: string;
  /** Empty for portForward, which targets the pod's sandbox. */
  container: string;
}

/**
 * Resolves a request path to a streaming endpoint, or undefined when it is
 * none of them. The shapes are upstream's routes: `/exec|/attach|/run`
 * `/{podNamespace}/{podID}/{containerName}` and
 * `/{podNamespace}/{podID}/{uid}/{containerName}`; `/portForward/{podNamespace}/{podID}`
 * and `/portForward/{podNamespace}/{podID}/{uid}`.
 * @param pathname the URL path, still percent-encoded
 * @returns the target, or undefined for another path or a wrong segment count
 */
export function parseStreamPath(pathname: string): StreamTarget | undefined {
  const parts = pathname.split("/");
  if (parts[0] !== "") return undefined;
  const kind = parts[1];
  let segments: string[];
  try {
    segments = parts.slice(2).map(decodeURIComponent);
  } catch {
    return undefined;
  }
  if (segments.some((s) => s === "")) return undefined;
  const [namespace, pod] = segments;
  if (namespace === undefined || pod === undefined) return undefined;
  if (kind === "portForward") {
    if (segments.length === 2) return { kind, namespace, pod, container: "" };
    if (segments.length === 3) return { kind, namespace, pod, uid: segments[2]!, container: "" };
    return undefined;
  }
  if (kind !== "exec" && kind !== "attach" && kind !== "run") return undefined;
  if (segments.length === 3) return { kind, namespace, pod, container: segments[2]! };
  if (segments.length === 4) {
    return { kind, namespace, pod, uid: segments[2]!, container: segments[3]! };
  }
  return undefined;
}

/**
 * The first path segment of every streaming endpoint, so a server can tell
 * whether a request is ours before the full path is checked.
 */
export const STREAM_PATH_PREFIXES: readonly string[] = [
  "/exec/",
  "/attach/",
  "/portForward/",
  "/run/",
];

/** Which streams an exec or attach opens (upstream's remotecommand Options). */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * The query parameters the kubelet reads (pkg/apis/core ExecStdinParam and
 * friends). The apiserver turns PodExecOptions' `stdin=true` into `input=1`
 * when it proxies to the kubelet, so these, not the PodExecOptions names, are
 * what reaches us.
 */
export const StreamParams = {
  stdin: "input",
  stdout: "output",
  stderr: "error",
  tty: "tty",
  command: "command",
  port: "port",
} as const;

/**
 * Reads the stream options of an exec or attach. A stream is on only when its
 * parameter is exactly `1`, as upstream; a tty has no separate stderr, so
 * stderr is dropped when tty is on.
 * @param query the request's query
 * @returns the options
 * @throws Error with upstream's message when no stream at all is asked for
 */
export function parseStreamOptions(query: URLSearchParams): StreamOptions {
  const on = (name: string) => query.get(name) === "1";
  const tty = on(StreamParams.tty);
  const stdin = on(StreamParams.stdin);
  const stdout = on(StreamParams.stdout);
  const stderr = on(StreamParams.stderr) && !tty;
  if (!stdin && !stdout && !stderr) {
    throw new Error("you must specify at least 1 of stdin, stdout, stderr");
  }
  return { stdin, stdout, stderr, tty };
}

/**
 * The command of an exec: every `command` parameter, in order.
 * @param query the request's query
 */
export function parseCommand(query: URLSearchParams): string[] {
  return query.getAll(StreamParams.command);
}

/**
 * The command of a `/run`: its single `cmd` parameter split on spaces, the
 * legacy form upstream keeps for this endpoint (so arguments cannot contain
 * spaces).
 * @param query the request's query
 */
export function parseRunCommand(query: URLSearchParams): string[] {
  return (query.get("cmd") ?? "").split(" ");
}

/**
 * The ports of a port forward (upstream's portforward.NewV4Options). Only a
 * WebSocket request names its ports in the query; an SPDY client opens one
 * stream per port later and names the port in the stream's headers, so for
 * it the list is empty.
 * @param query the request's query
 * @param websocket whether the request is a WebSocket upgrade
 * @returns the ports, each 1-65535
 * @throws Error with upstream's message for a missing, empty or bad `port`
 */
export function parsePortForwardPorts(query: URLSearchParams, websocket: boolean): number[] {
  if (!websocket) return [];
  const values = query.getAll(StreamParams.port);
  if (values.length === 0) {
    throw new Error(`query parameter "${StreamParams.port}" is required`);
  }
  const ports: number[] = [];
  for (const value of values) {
    if (value === "") throw new Error(`query parameter "${StreamParams.port}" cannot be empty`);
    for (const part of value.split(",")) {
      const port = /^[0-9]+$/.test(part) ? Number(part) : NaN;
      if (!Number.isInteger(port) || port > 65535) {
        throw new Error(`unable to parse "${value}" as a port`);
      }
      if (port < 1) throw new Error(`port "${value}" must be > 0`);
      ports.push(port);
    }
  }
  return ports;
}

/** Headers as a lookup of lower-case name to the values sent under it. */
export type HeaderLookup = (name: string) => string | undefined;

/**
 * Whether a request asks to switch protocols at all (upstream's
 * httpstream.IsUpgradeRequest: a `Connection` header mentioning `upgrade`).
 * @param header the request's header lookup
 */
export function isUpgradeRequest(header: HeaderLookup): boolean {
  return (header("connection") ?? "").toLowerCase().includes("upgrade");
}

/**
 * Whether a request is a WebSocket upgrade (upstream's wsstream.IsWebSocketRequest):
 * `Upgrade: websocket` and an `upgrade` token in `Connection`.
 * @param header the request's header lookup
 */
export function isWebSocketRequest(header: HeaderLookup): boolean {
  if ((header("upgrade") ?? "").toLowerCase() !== "websocket") return false;
  return /(^|.*,\s*)upgrade($|\s*,)/.test((header("connection") ?? "").toLowerCase());
}
