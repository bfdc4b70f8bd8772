/**
 * The CRI v1 client: how denolet talks to the container runtime (containerd)
 * over gRPC on a unix socket.
 *
 * ```ts
 * import { createRuntimeService, isNotFound } from "./lib/cri/mod.ts";
 * const cri = createRuntimeService({ endpoint: "unix:///run/containerd/containerd.sock" });
 * const { runtimeName, runtimeVersion } = await cri.version();
 * try {
 *   await cri.removeContainer(id);
 * } catch (err) {
 *   if (!isNotFound(err)) throw err;
 * }
 * ```
 *
 * Beside CRI, `task_exits.ts` streams containerd's own task exit events from the
 * same socket, which only wake the PLEG's relist.
 *
 * The agent loads no gRPC or protobuf library: `_grpc.ts` speaks gRPC over
 * node:http2 and `codec.ts` reads and writes the wire format. protobufjs (the
 * descriptor generator, `_descriptor_gen.ts`) and grpc-js (the test servers
 * `_fake_server.ts` and `_health_server.ts`) are imported only under this folder.
 *
 * @module
 */

export * from "./types.ts";
export {
  createRuntimeService,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  DEFAULT_SHORT_TIMEOUT_MS,
  type RuntimeFlags,
  type RuntimeServiceOptions,
  runtimeServiceOptions,
} from "./client.ts";
export {
  CriError,
  type CriErrorInit,
  GrpcCode,
  grpcCodeName,
  isDeadlineExceeded,
  isNotFound,
  isUnavailable,
} from "./errors.ts";
export { type TaskExit, watchTaskExits, type WatchTaskExitsOptions } from "./task_exits.ts";
