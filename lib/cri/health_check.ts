/**
 * The standard gRPC health protocol (`grpc.health.v1.Health/Check`), as the
 * kubelet's gRPC probe speaks it: a fresh insecure connection per check, the
 * `kube-probe/<major>.<minor>` user agent, one deadline for dial and call.
 *
 * It lives under lib/cri/ beside the CRI client because both speak gRPC
 * (`_grpc.ts`); the prober (lib/prober) is its user. `_health_server.ts` is a
 * tiny health server for tests and tools.
 *
 * @module
 */

import net from "node:net";
import { realClock } from "../util/clock.ts";
import { joinHostPort } from "../util/net.ts";
import { descriptorCodecs } from "./codec.ts";
import { GrpcCode } from "./errors.ts";
import { GrpcChannel, GrpcStatusError } from "./_grpc.ts";

/**
 * grpc/health/v1/health.proto, only the two messages Check uses:
 * HealthCheckRequest{string service = 1} and HealthCheckResponse{ServingStatus status = 1}.
 */
const codecs = descriptorCodecs({
  nested: {
    grpc: {
      nested: {
        health: {
          nested: {
            v1: {
              nested: {
                HealthCheckRequest: { fields: { service: { type: "string", id: 1 } } },
                HealthCheckResponse: {
                  fields: { status: { type: "ServingStatus", id: 1 } },
                  nested: {
                    ServingStatus: {
                      values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
});
/** `HealthCheckRequest`'s codec. */
export const healthCheckRequest = codecs<{ service: string }>("grpc.health.v1.HealthCheckRequest");
/** `HealthCheckResponse`'s codec (the status as its number). */
export const healthCheckResponse = codecs<{ status: number }>(
  "grpc.health.v1.HealthCheckResponse",
);

/** The Check method's full path. */
export const HEALTH_CHECK_METHOD = "/grpc.health.v1.Health/Check";

/** `HealthCheckResponse.ServingStatus`, by name. */
export type ServingStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

export const STATUS_NAMES: readonly ServingStatus[] = [
  "UNKNOWN",
  "SERVING",
  "NOT_SERVING",
  "SERVICE_UNKNOWN",
];

/** Options for {@link checkHealth}. */
export interface HealthCheckOptions {
  /** Host or IP (IPv6 without brackets). */
  host: string;
  port: number;
  /** `HealthCheckRequest.service`; "" asks about the server as a whole. */
  service?: string;
  /** One deadline for connecting and the call, in ms. */
  timeoutMs: number;
  /** Sent as the primary user agent, e.g. `kube-probe/1.34`. */
  userAgent?: string;
  /** Cancels the check. */
  signal?: AbortSignal;
}

/**
 * The outcome of one check, with the facts the kubelet's messages are made of:
 * - `connect`: no connection within the deadline (`timedOut`) or refused;
 * - `call`: the RPC failed with a gRPC status (Unimplemented when the server
 *   does not speak the health protocol, DeadlineExceeded on timeout);
 * - `status`: the server answered.
 */
export type HealthCheckOutcome =
  | { kind: "connect"; timedOut: boolean; message: string }
  | { kind: "call"; code: number; message: string }
  | { kind: "status"; status: ServingStatus };

/**
 * grpc-go's dial backoff while a blocking dial waits for its deadline (the probe
 * dials with `WithBlock`): 1 s base, growing 1.6 times a failure.
 */
const DIAL_BACKOFF = { initialMs: 1000, maxMs: 120_000 };

/** grpc-go's default largest message received. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * Asks a server `Health/Check` over a new insecure connection, then closes it.
 * A refused connection is dialled again, after a backoff, until the deadline,
 * as upstream's blocking dial does. Never throws: every failure is an outcome.
 * @param opts where, which service, deadline, user agent, cancellation
 * @returns what happened
 */
export async function checkHealth(opts: HealthCheckOptions): Promise<HealthCheckOutcome> {
  const { host, port, signal } = opts;
  const address = joinHostPort(host, port);
  const deadline = performance.now() + opts.timeoutMs;
  const call = { deadline, signal };
  const channel = new GrpcChannel({
    dial: () => net.connect({ host, port }),
    address,
    authority: address,
    // grpc-go puts its own name after the application's user agent.
    userAgent: opts.userAgent ? `${opts.userAgent} denolet-grpc` : "denolet-grpc",
    maxMessageBytes: MAX_MESSAGE_BYTES,
    backoff: DIAL_BACKOFF,
  });
  try {
    const connected = await dialUntilDeadline(channel, deadline, signal);
    if (connected !== undefined) return connected;
    const body = healthCheckRequest.encode({ service: opts.service ?? "" });
    const { status } = await channel.unary(
      HEALTH_CHECK_METHOD,
      body,
      call,
      (message) => healthCheckResponse.decode(message),
    );
    return { kind: "status", status: STATUS_NAMES[status] ?? "UNKNOWN" };
  } catch (err) {
    if (err instanceof GrpcStatusError) {
      return { kind: "call", code: err.code, message: err.details };
    }
    return { kind: "call", code: GrpcCode.INTERNAL, message: String(err) };
  } finally {
    channel.close();
  }
}

/**
 * Dials until connected, the deadline passes or the signal aborts.
 * @returns undefined once connected, else the connect or cancel outcome
 */
async function dialUntilDeadline(
  channel: GrpcChannel,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<HealthCheckOutcome | undefined> {
  const cancelled: HealthCheckOutcome = {
    kind: "call",
    code: GrpcCode.CANCELLED,
    message: "cancelled",
  };
  let lastError = "";
  for (;;) {
    if (performance.now() >= deadline) {
      const message = "context deadline exceeded" +
        (lastError ? ` (last error: ${lastError})` : "");
      return { kind: "connect", timedOut: true, message };
    }
    try {
      await channel.connect({ deadline, signal });
      return undefined;
    } catch (err) {
      if (!(err instanceof GrpcStatusError)) {
        return { kind: "connect", timedOut: false, message: String(err) };
      }
      if (err.code === GrpcCode.CANCELLED) return cancelled;
      if (err.code === GrpcCode.UNAVAILABLE) lastError = err.details;
    }
    // The dial failed: wait out its backoff (or the deadline), then dial again.
    try {
      await realClock.sleep(
        Math.max(0, Math.min(channel.retryAt, deadline) - performance.now()),
        signal,
      );
    } catch {
      return cancelled;
    }
  }
}
