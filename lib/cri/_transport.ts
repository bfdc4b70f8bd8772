/**
 * Unary gRPC calls to a CRI endpoint over a unix socket: encoding, deadlines,
 * cancellation and the mapping of gRPC failures to {@link CriError}.
 *
 * One grpc-js `Client` (one HTTP/2 channel) per endpoint. grpc-js reconnects
 * by itself when the runtime restarts: a dropped connection goes idle and the
 * next call dials again; a failed dial backs off before retrying. Calls are
 * fail-fast (no wait-for-ready), as in the kubelet, so a runtime that is down
 * shows up at once as Unavailable instead of as a hang until the deadline.
 *
 * @module
 */

import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import type { Logger } from "../util/log.ts";
import { messageCodec } from "./codec.ts";
import { CriError, GrpcCode } from "./errors.ts";

/**
 * The kubelet's CRI message size limit (maxMsgSize, 16 MiB): ListContainers
 * on a busy node can exceed grpc's 4 MiB default.
 */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Reconnect backoff: the kubelet's CRI dialer uses a 100 ms base and a 3 s cap,
 * so a restarted containerd is reachable again within a few seconds; grpc-js'
 * default cap is 120 s.
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
 * Turns a kubelet-style endpoint into a grpc-js target.
 *
 * Accepts `unix:///path` and, like the kubelet (with a deprecation warning
 * there), a bare absolute socket path.
 * @param endpoint e.g. `unix:///run/containerd/containerd.sock`
 * @returns the grpc-js target `unix:///…`
 * @throws Error when the endpoint is not a unix socket
 */
export function endpointTarget(endpoint: string): string {
  if (endpoint.startsWith("/")) return `unix://${endpoint}`;
  if (endpoint.startsWith("unix:///")) return endpoint;
  throw new Error(
    `CRI endpoint ${JSON.stringify(endpoint)}: only unix sockets are supported ` +
      `(unix:///path/to/socket)`,
  );
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "number";
}

/**
 * Opens a channel to a CRI endpoint. The channel connects lazily, on the
 * first call, so creating a transport never fails because the runtime is down.
 * @param opts the endpoint and a logger for per-call traces (verbosity 4)
 * @returns the transport
 * @throws Error when the endpoint is not a unix socket
 */
export function createTransport(opts: { endpoint: string; logger: Logger }): Transport {
  const client = new Client(endpointTarget(opts.endpoint), credentials.createInsecure(), {
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
    "grpc.initial_reconnect_backoff_ms": INITIAL_BACKOFF_MS,
    "grpc.max_reconnect_backoff_ms": MAX_BACKOFF_MS,
    // channelz keeps per-call bookkeeping we never read.
    "grpc.enable_channelz": 0,
  });
  const trace = opts.logger.v(4);
  let closed = false;

  function unary<T>(service: string, method: string, request: object, o: UnaryOptions): Promise<T> {
    const error = (code: number, details: string, cause: unknown): CriError =>
      new CriError({
        call: method,
        code,
        details,
        ...(o.object === undefined ? {} : { object: o.object }),
        ...(cause == null ? {} : { cause }),
      });
    const fail = (code: number, details: string, cause?: unknown): Promise<T> =>
      Promise.reject(error(code, details, cause));
    if (closed) return fail(GrpcCode.CANCELLED, "the CRI client is closed");
    if (o.signal?.aborted) return fail(GrpcCode.CANCELLED, "call aborted", o.signal.reason);

    let body: Buffer;
    try {
      const bytes = messageCodec(`${method}Request`).encode(request);
      body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (err) {
      return fail(GrpcCode.INVALID_ARGUMENT, `cannot encode ${method}Request`, err);
    }
    const responseCodec = messageCodec<T>(`${method}Response`);
    const started = performance.now();

    return new Promise<T>((resolve, reject) => {
      const onAbort = () => call.cancel();
      const callOptions = o.timeoutMs === undefined ? {} : { deadline: Date.now() + o.timeoutMs };
      const call = client.makeUnaryRequest<Buffer, T>(
        `/runtime.v1.${service}/${method}`,
        (b) => b,
        (b) => responseCodec.decode(b),
        body,
        new Metadata(),
        callOptions,
        (err, value) => {
          o.signal?.removeEventListener("abort", onAbort);
          const ms = Math.round(performance.now() - started);
          if (err || value === undefined) {
            const code = isServiceError(err) ? err.code : GrpcCode.UNKNOWN;
            const details = isServiceError(err) ? err.details : "no response";
            trace.info("CRI call failed", { call: method, object: o.object, ms, code });
            const cause = code === GrpcCode.CANCELLED && o.signal?.aborted ? o.signal.reason : err;
            reject(error(code, details, cause));
            return;
          }
          trace.info("CRI call", { call: method, object: o.object, ms });
          resolve(value);
        },
      );
      o.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  return {
    unary,
    close() {
      closed = true;
      client.close();
    },
  };
}
