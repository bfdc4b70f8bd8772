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
 * protobufjs and grpc-js (for the test servers `_fake_server.ts` and
 * `_health_server.ts`; the agent's client is `_grpc.ts`) are imported only under
 * this folder.
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
