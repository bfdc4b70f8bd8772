/**
 * Unary gRPC calls to a CRI endpoint over a unix socket: encoding, deadlines,
 * cancellation and the mapping of gRPC failures to {@link CriError}.
 *
 * One {@link GrpcChannel} (one HTTP/2 connection) per endpoint. It reconnects by
 * itself when the runtime restarts: a dropped connection is dialled again on the
 * next call; a failed dial backs off before the next. Calls are fail-fast (no
 * wait-for-ready), as in the kubelet, so a runtime that is down shows up at once
 * as Unavailable instead of as a hang until the deadline.
 *
 * @module
 */

import net from "node:net";
import type { Logger } from "../util/log.ts";
import { VERSION } from "../util/version.ts";
import { messageCodec } from "./codec.ts";
import { CriError, GrpcCode } from "./errors.ts";
import { GrpcChannel, GrpcStatusError } from "./_grpc.ts";

/**
 * The kubelet's CRI message size limit (maxMsgSize, 16 MiB): ListContainers
 * on a busy node can exceed grpc's 4 MiB default.
 */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** The `user-agent` of every CRI call (grpc-go's clients send `grpc-go/<version>`). */
const USER_AGENT = `denolet/${VERSION}`;

/**
 * Reconnect backoff: the kubelet's CRI dialer uses a 100 ms base and a 3 s cap,
 * so a restarted containerd is reachable again within a few seconds (grpc's
 * default cap is 120 s).
 */
const INITIAL_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 3000;

/** Options for one call. */
export interface UnaryOptions {
  /** Deadline in ms from now; no deadline when undefined. */
  timeoutMs: number | undefined;
  /** Cancels the call. */
  signal: AbortSignal | undefined;
  /** The container/sandbox id or image the call is about, for errors and logs. */
  object: string | undefined;
}

/** A connection to one CRI service endpoint. */
export interface Transport {
  /**
   * Makes one unary call.
   * @param service `RuntimeService` or `ImageService`
   * @param method the RPC name; request/response types are `<method>Request`/`<method>Response`
   * @param request the request message as a plain object
   * @param opts deadline, signal and the object for error messages
   * @returns the decoded response
   * @throws CriError on any failure, including encoding and cancellation
   */
  unary<T>(service: string, method: string, request: object, opts: UnaryOptions): Promise<T>;
  /** Closes the channel; later calls fail with Cancelled. */
  close(): void;
}

/**
 * The socket path of a kubelet-style endpoint.
 *
 * Accepts `unix:///path` and, like the kubelet (with a deprecation warning
 * there), a bare absolute socket path.
 * @param endpoint e.g. `unix:///run/containerd/containerd.sock`
 * @returns the socket's path, e.g. `/run/containerd/containerd.sock`
 * @throws Error when the endpoint is not a unix socket
 */
export function endpointSocketPath(endpoint: string): string {
  if (endpoint.startsWith("/")) return endpoint;
  if (endpoint.startsWith("unix:///")) return endpoint.slice("unix://".length);
  throw new Error(
    `CRI endpoint ${JSON.stringify(endpoint)}: only unix sockets are supported ` +
      `(unix:///path/to/socket)`,
  );
}

/**
 * A gRPC channel to the runtime's socket as the kubelet dials it: its message size
 * limit, user agent and reconnect backoff. Connects on its first call.
 * @param endpoint e.g. `unix:///run/containerd/containerd.sock`
 * @returns the channel
 * @throws Error when the endpoint is not a unix socket
 */
export function runtimeChannel(endpoint: string): GrpcChannel {
  const path = endpointSocketPath(endpoint);
  return new GrpcChannel({
    dial: () => net.connect({ path }),
    address: path,
    authority: "localhost",
    userAgent: USER_AGENT,
    maxMessageBytes: MAX_MESSAGE_BYTES,
    backoff: { initialMs: INITIAL_BACKOFF_MS, maxMs: MAX_BACKOFF_MS },
  });
}

/**
 * Opens a channel to a CRI endpoint. The channel connects lazily, on the
 * first call, so creating a transport never fails because the runtime is down.
 * @param opts the endpoint and a logger for per-call traces (verbosity 4)
 * @returns the transport
 * @throws Error when the endpoint is not a unix socket
 */
export function createTransport(opts: { endpoint: string; logger: Logger }): Transport {
  const channel = runtimeChannel(opts.endpoint);
  const trace = opts.logger.v(4);
  let closed = false;

  async function unary<T>(
    service: string,
    method: string,
    request: object,
    o: UnaryOptions,
  ): Promise<T> {
    const error = (code: number, details: string, cause: unknown): CriError =>
      new CriError({
        call: method,
        code,
        details,
        ...(o.object === undefined ? {} : { object: o.object }),
        ...(cause == null ? {} : { cause }),
      });
    if (closed) throw error(GrpcCode.CANCELLED, "the CRI client is closed", undefined);
    if (o.signal?.aborted) throw error(GrpcCode.CANCELLED, "call aborted", o.signal.reason);

    let body: Uint8Array;
    try {
      body = messageCodec(`${method}Request`).encode(request);
    } catch (err) {
      throw error(GrpcCode.INVALID_ARGUMENT, `cannot encode ${method}Request`, err);
    }
    const responseCodec = messageCodec<T>(`${method}Response`);
    const started = performance.now();
    try {
      const value = await channel.unary(`/runtime.v1.${service}/${method}`, body, {
        deadline: o.timeoutMs === undefined ? undefined : started + o.timeoutMs,
        signal: o.signal,
      }, (message) => responseCodec.decode(message));
      trace.info("CRI call", {
        call: method,
        object: o.object,
        ms: Math.round(performance.now() - started),
      });
      return value;
    } catch (err) {
      const ms = Math.round(performance.now() - started);
      const code = err instanceof GrpcStatusError ? err.code : GrpcCode.UNKNOWN;
      trace.info("CRI call failed", { call: method, object: o.object, ms, code });
      const details = err instanceof GrpcStatusError ? err.details : String(err);
      const cause = code === GrpcCode.CANCELLED && o.signal?.aborted ? o.signal.reason : err;
      throw error(code, details, cause);
    }
  }

  return {
    unary,
    close() {
      closed = true;
      channel.close();
    },
  };
}
