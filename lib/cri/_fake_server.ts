/**
 * A scripted CRI server for unit tests of the client: a grpc-js server on a
 * unix socket in a temporary directory, in the test's own process, that
 * answers with whatever the test's handlers return and records every request
 * with the deadline it arrived with.
 *
 * Test-only: nothing in the agent imports this file (the unit tests and
 * bench/_fake_containerd.ts do). It lives here because grpc-js may only be
 * imported under lib/cri/.
 *
 * @module
 */

import {
  type sendUnaryData,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { messageCodec } from "./codec.ts";

/** One request the fake server received. */
export interface FakeCall {
  /** The RPC name, e.g. `StopContainer`. */
  method: string;
  /** The decoded request. */
  request: Record<string, unknown>;
  /** Milliseconds the call had left when it arrived; undefined when it had no deadline. */
  deadlineMs: number | undefined;
}

/**
 * Answers one call: return the response object, or throw a {@link FakeRpcError}
 * to fail it with a gRPC status.
 */
// deno-lint-ignore no-explicit-any
export type FakeHandler = (request: any, call: FakeCall) => object | Promise<object>;

/** Thrown by a {@link FakeHandler} to fail the call with a gRPC status. */
export class FakeRpcError extends Error {
  /**
   * @param code the gRPC status code
   * @param details the status details the client sees
   */
  constructor(readonly code: number, readonly details: string) {
    super(details);
  }
}

/** A running fake server. */
export interface FakeCriServer {
  /** `unix:///…/cri.sock` for createRuntimeService. */
  endpoint: string;
  /** Every call received so far, in arrival order. */
  calls: FakeCall[];
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

const IMAGE_METHODS = new Set([
  "ListImages",
  "ImageStatus",
  "PullImage",
  "RemoveImage",
  "ImageFsInfo",
]);

/**
 * Starts a fake CRI server. Methods without a handler answer Unimplemented,
 * as a runtime that lacks them would.
 * @param handlers RPC name → handler
 * @returns the server, listening
 * @throws Error when the socket cannot be bound
 */
export async function startFakeCriServer(
  handlers: Record<string, FakeHandler>,
): Promise<FakeCriServer> {
  const dir = await Deno.makeTempDir({ prefix: "denolet-fake-cri-" });
  const socket = `${dir}/cri.sock`;
  const calls: FakeCall[] = [];
  const server = new Server();

  for (const [method, handler] of Object.entries(handlers)) {
    const service = IMAGE_METHODS.has(method) ? "ImageService" : "RuntimeService";
    const req = messageCodec<Record<string, unknown>>(`${method}Request`);
    const res = messageCodec<object>(`${method}Response`);
    const definition: ServiceDefinition = {
      [method]: {
        path: `/runtime.v1.${service}/${method}`,
        requestStream: false,
        responseStream: false,
        requestSerialize: (v: object) => Buffer.from(req.encode(v)),
        requestDeserialize: (b: Buffer) => req.decode(b),
        responseSerialize: (v: object) => Buffer.from(res.encode(v)),
        responseDeserialize: (b: Buffer) => res.decode(b),
      },
    };
    const implementation: UntypedServiceImplementation = {
      [method]: (
        call: ServerUnaryCall<Record<string, unknown>, object>,
        callback: sendUnaryData<object>,
      ) => {
        const deadline = Number(call.getDeadline());
        const record: FakeCall = {
          method,
          request: call.request,
          deadlineMs: Number.isFinite(deadline) ? deadline - Date.now() : undefined,
        };
        calls.push(record);
        Promise.resolve()
          .then(() => handler(call.request, record))
          .then(
            (response) => callback(null, response),
            (err: unknown) =>
              err instanceof FakeRpcError
                ? callback({ code: err.code, details: err.details })
                : callback({ code: 13, details: String(err) }),
          );
      },
    };
    server.addService(definition, implementation);
  }

  await new Promise<void>((resolve, reject) =>
    server.bindAsync(
      `unix://${socket}`,
      ServerCredentials.createInsecure(),
      (err) => err ? reject(err) : resolve(),
    )
  );
  return {
    endpoint: `unix://${socket}`,
    calls,
    async close() {
      server.forceShutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
