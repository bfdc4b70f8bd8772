/**
 * The standard gRPC health protocol (`grpc.health.v1.Health/Check`), as the
 * kubelet's gRPC probe speaks it: a fresh insecure connection per check, the
 * `kube-probe/<major>.<minor>` user agent, one deadline for dial and call.
 *
 * It lives under lib/cri/ only because grpc-js may be imported nowhere else;
 * the prober (lib/prober) is its user. {@link startHealthServer} is a tiny
 * health server for tests and tools.
 *
 * @module
 */

import {
  Client,
  credentials,
  Metadata,
  type sendUnaryData,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceError,
} from "@grpc/grpc-js";
import protobuf from "protobufjs/light";
import { Buffer } from "node:buffer";
import { joinHostPort } from "../util/net.ts";
import { GrpcCode } from "./errors.ts";

/**
 * grpc/health/v1/health.proto, only the two messages Check uses:
 * HealthCheckRequest{string service = 1} and HealthCheckResponse{ServingStatus status = 1}.
 */
const root = protobuf.Root.fromJSON({
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
const RequestType = root.lookupType("grpc.health.v1.HealthCheckRequest");
const ResponseType = root.lookupType("grpc.health.v1.HealthCheckResponse");

/** The Check method's full path. */
export const HEALTH_CHECK_METHOD = "/grpc.health.v1.Health/Check";

/** `HealthCheckResponse.ServingStatus`, by name. */
export type ServingStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";

const STATUS_NAMES: readonly ServingStatus[] = [
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
 * Asks a server `Health/Check` over a new insecure connection, then closes it.
 * Never throws: every failure is an outcome.
 * @param opts where, which service, deadline, user agent, cancellation
 * @returns what happened
 */
export function checkHealth(opts: HealthCheckOptions): Promise<HealthCheckOutcome> {
  const target = joinHostPort(opts.host, opts.port);
  const deadline = Date.now() + opts.timeoutMs;
  let client: Client;
  try {
    client = new Client(target, credentials.createInsecure(), {
      ...(opts.userAgent ? { "grpc.primary_user_agent": opts.userAgent } : {}),
      // A fresh connection per probe, as upstream dials one: a pooled
      // subchannel still backing off from an earlier failure would fail a
      // probe of a server that is up again.
      "grpc.use_local_subchannel_pool": 1,
      "grpc.enable_channelz": 0,
      "grpc.enable_retries": 0,
      // Probes go straight to the pod, never through a proxy from the environment.
      "grpc.enable_http_proxy": 0,
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return Promise.resolve({ kind: "connect", timedOut: false, message });
  }
  return new Promise<HealthCheckOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: HealthCheckOutcome) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener("abort", onAbort);
      client.close();
      resolve(outcome);
    };
    const onAbort = () => finish({ kind: "call", code: GrpcCode.CANCELLED, message: "cancelled" });
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });

    client.waitForReady(deadline, (err) => {
      if (settled) return;
      if (err) {
        const timedOut = Date.now() >= deadline;
        return finish({ kind: "connect", timedOut, message: err.message });
      }
      const body = RequestType.encode({ service: opts.service ?? "" }).finish();
      const call = client.makeUnaryRequest<Buffer, ServingStatus>(
        HEALTH_CHECK_METHOD,
        (b) => b,
        (b) => {
          const decoded = ResponseType.toObject(ResponseType.decode(b), { enums: Number });
          const n = typeof decoded.status === "number" ? decoded.status : 0;
          return STATUS_NAMES[n] ?? "UNKNOWN";
        },
        Buffer.from(body.buffer, body.byteOffset, body.byteLength),
        new Metadata(),
        { deadline },
        (callErr: ServiceError | null, value?: ServingStatus) => {
          if (callErr) {
            return finish({ kind: "call", code: callErr.code, message: callErr.details });
          }
          finish({ kind: "status", status: value ?? "UNKNOWN" });
        },
      );
      opts.signal?.addEventListener("abort", () => call.cancel(), { once: true });
    });
  });
}

/** A running health server from {@link startHealthServer}. */
export interface HealthServer {
  /** The TCP port it listens on. */
  port: number;
  /**
   * Sets what Check answers for a service ("" is the whole server); a
   * service never set answers NOT_FOUND, as the reference server does.
   */
  setStatus(service: string, status: ServingStatus): void;
  /** The user agents of the calls received so far. */
  userAgents: string[];
  /** Stops the server at once. */
  close(): Promise<void>;
}

/**
 * Starts a gRPC server that implements only `grpc.health.v1.Health/Check`,
 * for tests and tools. Check answers from a table set by the caller.
 * @param opts the address to bind (default 127.0.0.1, port 0 picks one)
 * @returns the server, listening
 * @throws Error when the port cannot be bound
 */
export async function startHealthServer(
  opts: { host?: string; port?: number } = {},
): Promise<HealthServer> {
  const statuses = new Map<string, ServingStatus>();
  const userAgents: string[] = [];
  const server = new Server({ "grpc.enable_channelz": 0 });
  server.addService({
    Check: {
      path: HEALTH_CHECK_METHOD,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
    },
  }, {
    Check(call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) {
      const ua = call.metadata.get("user-agent")[0];
      userAgents.push(typeof ua === "string" ? ua : "");
      const req = RequestType.toObject(RequestType.decode(call.request));
      const service = typeof req.service === "string" ? req.service : "";
      const status = statuses.get(service);
      if (status === undefined) {
        callback({ code: GrpcCode.NOT_FOUND, details: "unknown service" });
        return;
      }
      const bytes = ResponseType.encode({ status: STATUS_NAMES.indexOf(status) }).finish();
      callback(null, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    },
  });
  const host = opts.host ?? "127.0.0.1";
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      joinHostPort(host, opts.port ?? 0),
      ServerCredentials.createInsecure(),
      (
        err,
        bound,
      ) => (err ? reject(new Error(`cannot bind health server`, { cause: err })) : resolve(bound)),
    );
  });
  return {
    port,
    setStatus: (service, status) => void statuses.set(service, status),
    userAgents,
    close: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}
