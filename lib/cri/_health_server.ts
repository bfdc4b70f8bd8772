/**
 * A gRPC server that implements only `grpc.health.v1.Health/Check`, for tests
 * and tools: the counterpart of health_check.ts's client, on grpc-js's server so
 * that the client is tested against another implementation than its own.
 *
 * Test-only: nothing in the agent imports this file.
 *
 * @module
 */

import { type sendUnaryData, Server, ServerCredentials, type ServerUnaryCall } from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { joinHostPort } from "../util/net.ts";
import { GrpcCode } from "./errors.ts";
import {
  HEALTH_CHECK_METHOD,
  healthCheckRequest,
  healthCheckResponse,
  type ServingStatus,
  STATUS_NAMES,
} from "./health_check.ts";

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
      const { service } = healthCheckRequest.decode(call.request);
      const status = statuses.get(service);
      if (status === undefined) {
        callback({ code: GrpcCode.NOT_FOUND, details: "unknown service" });
        return;
      }
      const bytes = healthCheckResponse.encode({ status: STATUS_NAMES.indexOf(status) });
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
