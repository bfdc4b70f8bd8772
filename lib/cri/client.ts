/**
 * The gRPC implementation of {@link RuntimeService}: CRI v1 over a unix socket
 * with our own gRPC client (`_grpc.ts`, unary calls here) and the precompiled protobuf codec.
 *
 * The client owns every call's deadline, as the kubelet's remote runtime
 * client does, so `--runtime-request-timeout` (2 min by default) reaches
 * every call: mutating calls and Exec/Attach/PortForward (which only prepare a
 * stream and return its URL) get the runtime request timeout, RunPodSandbox
 * twice that, StopContainer and ExecSync that plus their own timeout (ExecSync
 * none when its timeout is 0), and PullImage none (a pull of a large image may
 * legitimately take longer; the caller cancels it through `signal`). Unlike
 * the kubelet, read-only calls (version, status, lists, stats) get a short
 * deadline, see {@link DEFAULT_SHORT_TIMEOUT_MS}, never longer than the
 * request timeout. A caller's `CallOptions.timeoutMs` works like a Go
 * context's deadline: it can shorten a call's deadline, never lengthen it.
 *
 * @module
 */

import { silentLogger } from "../util/log.ts";
import type { Logger } from "../util/log.ts";
import { CriError, GrpcCode } from "./errors.ts";
import { createTransport, type Transport } from "./_transport.ts";
import type {
  AuthConfig,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatusResponse,
  ExecSyncResponse,
  Image,
  ImageFsInfoResponse,
  ImageSpec,
  PodSandbox,
  PodSandboxFilter,
  PodSandboxStatusResponse,
  RuntimeService,
  StatusResponse,
  VersionResponse,
} from "./types.ts";

/** The kubelet's default `--runtime-request-timeout`: 2 minutes. */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = 120_000;

/**
 * Default deadline of read-only calls: Version, Status, List*, *Status, stats,
 * ImageFsInfo. containerd answers them from memory in milliseconds, and their
 * callers run on short periods: PLEG relists every second and a stats scrape
 * should answer within Prometheus' default 10 s scrape timeout. With the 2 min
 * request timeout a hung runtime would stall each relist for 2 minutes before
 * anyone noticed; 10 s still leaves ample room on a loaded node.
 */
export const DEFAULT_SHORT_TIMEOUT_MS = 10_000;

/** The API version the kubelet sends in VersionRequest. */
const KUBE_RUNTIME_API_VERSION = "0.1.0";

/** CRI timeouts are int64 seconds; round a fraction up so no grace period shrinks. */
function wholeSeconds(seconds: number): number {
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : 0;
}

/** Options for {@link createRuntimeService}. */
export interface RuntimeServiceOptions {
  /** The runtime's CRI socket, e.g. `unix:///run/containerd/containerd.sock`. */
  endpoint: string;
  /** The image service socket; defaults to `endpoint` (same channel). */
  imageEndpoint?: string;
  /** Deadline of mutating calls (`--runtime-request-timeout`); default 120000. */
  timeoutMs?: number;
  /**
   * Deadline of read-only calls; default {@link DEFAULT_SHORT_TIMEOUT_MS},
   * capped at `timeoutMs`.
   */
  shortTimeoutMs?: number;
  /** Per-call traces go to `logger.v(4)`. */
  logger?: Logger;
}

/** The agent options the CRI client is built from (`AgentOptions` has them). */
export interface RuntimeFlags {
  /** `--container-runtime-endpoint`. */
  containerRuntimeEndpoint: string;
  /** `--image-service-endpoint`; the runtime's endpoint when empty. */
  imageServiceEndpoint: string;
  /** `--runtime-request-timeout`, ms. */
  runtimeRequestTimeoutMs: number;
}

/**
 * The client options the agent's flags describe: the one place the flags
 * meet the client, so a test can follow `--runtime-request-timeout` from the
 * command line to each call's deadline.
 * @param flags the endpoints and the runtime request timeout
 * @param logger where per-call traces go
 * @returns options for {@link createRuntimeService}
 */
export function runtimeServiceOptions(flags: RuntimeFlags, logger?: Logger): RuntimeServiceOptions {
  return {
    endpoint: flags.containerRuntimeEndpoint,
    ...(flags.imageServiceEndpoint ? { imageEndpoint: flags.imageServiceEndpoint } : {}),
    timeoutMs: flags.runtimeRequestTimeoutMs,
    ...(logger ? { logger } : {}),
  };
}

/**
 * Creates a CRI client. No connection is made until the first call, and
 * the client reconnects by itself when the runtime restarts.
 * @param opts endpoints, timeouts and logger
 * @returns the runtime and image service
 * @throws Error when an endpoint is not a unix socket
 */
export function createRuntimeService(opts: RuntimeServiceOptions): RuntimeService {
  const logger = (opts.logger ?? silentLogger).with({ component: "cri" });
  const long = opts.timeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
  const short = Math.min(opts.shortTimeoutMs ?? DEFAULT_SHORT_TIMEOUT_MS, long);
  const runtime = createTransport({ endpoint: opts.endpoint, logger });
  const image: Transport = opts.imageEndpoint === undefined || opts.imageEndpoint === opts.endpoint
    ? runtime
    : createTransport({ endpoint: opts.imageEndpoint, logger });

  /** A call's deadline: the client's (`own`, undefined for none), or the caller's when shorter. */
  const deadline = (own: number | undefined, o: CallOptions | undefined) => {
    const caller = o?.timeoutMs;
    if (caller === undefined) return own;
    return own === undefined ? caller : Math.min(own, caller);
  };

  function rt<T>(
    method: string,
    request: object,
    o: CallOptions | undefined,
    own: number | undefined,
    object?: string,
  ): Promise<T> {
    return runtime.unary<T>("RuntimeService", method, request, {
      timeoutMs: deadline(own, o),
      signal: o?.signal,
      object,
    });
  }

  function img<T>(
    method: string,
    request: object,
    o: CallOptions | undefined,
    own: number | undefined,
    object?: string,
  ): Promise<T> {
    return image.unary<T>("ImageService", method, request, {
      timeoutMs: deadline(own, o),
      signal: o?.signal,
      object,
    });
  }

  /** CRI promises these fields; a runtime that omits them is broken, say so. */
  function required<T>(value: T | undefined, call: string, object: string, what: string): T {
    if (value === undefined || value === "") {
      throw new CriError({
        call,
        object,
        code: GrpcCode.UNKNOWN,
        details: `the runtime returned no ${what}`,
      });
    }
    return value;
  }

  return {
    version: (o) => rt<VersionResponse>("Version", { version: KUBE_RUNTIME_API_VERSION }, o, short),

    status: async (o) => {
      const r = await rt<Partial<StatusResponse>>(
        "Status",
        { verbose: o?.verbose ?? false },
        o,
        short,
      );
      return { status: { conditions: r.status?.conditions ?? [] }, info: r.info ?? {} };
    },

    async runPodSandbox(config, runtimeHandler, o) {
      const name = `${config.metadata.namespace}/${config.metadata.name}`;
      const r = await rt<{ podSandboxId: string }>(
        "RunPodSandbox",
        { config, runtimeHandler: runtimeHandler ?? "" },
        o,
        2 * long,
        name,
      );
      return required(r.podSandboxId, "RunPodSandbox", name, "pod sandbox id");
    },

    async stopPodSandbox(podSandboxId, o) {
      await rt("StopPodSandbox", { podSandboxId }, o, long, podSandboxId);
    },

    async removePodSandbox(podSandboxId, o) {
      await rt("RemovePodSandbox", { podSandboxId }, o, long, podSandboxId);
    },

    async podSandboxStatus(podSandboxId, o) {
      const r = await rt<Partial<PodSandboxStatusResponse>>(
        "PodSandboxStatus",
        { podSandboxId },
        o,
        short,
        podSandboxId,
      );
      const status = required(r.status, "PodSandboxStatus", podSandboxId, "status");
      return { status, info: r.info ?? {} };
    },

    async listPodSandbox(filter?: PodSandboxFilter, o?: CallOptions) {
      const r = await rt<{ items: PodSandbox[] }>("ListPodSandbox", { filter }, o, short);
      return r.items;
    },

    async createContainer(podSandboxId, config: ContainerConfig, sandboxConfig, o) {
      const name = `${podSandboxId}/${config.metadata.name}`;
      const r = await rt<{ containerId: string }>(
        "CreateContainer",
        { podSandboxId, config, sandboxConfig },
        o,
        long,
        name,
      );
      return required(r.containerId, "CreateContainer", name, "container id");
    },

    async startContainer(containerId, o) {
      await rt("StartContainer", { containerId }, o, long, containerId);
    },

    async stopContainer(containerId, timeoutSeconds, o) {
      // Leave the runtime the grace period plus time to SIGKILL and reply.
      const timeout = wholeSeconds(timeoutSeconds);
      const ms = long + timeout * 1000;
      await rt("StopContainer", { containerId, timeout }, o, ms, containerId);
    },

    async removeContainer(containerId, o) {
      await rt("RemoveContainer", { containerId }, o, long, containerId);
    },

    async listContainers(filter?: ContainerFilter, o?: CallOptions) {
      const r = await rt<{ containers: Container[] }>("ListContainers", { filter }, o, short);
      return r.containers;
    },

    async containerStatus(containerId, o) {
      const r = await rt<Partial<ContainerStatusResponse>>(
        "ContainerStatus",
        { containerId },
        o,
        short,
        containerId,
      );
      const status = required(r.status, "ContainerStatus", containerId, "status");
      return { status, info: r.info ?? {} };
    },

    execSync(containerId, cmd, timeoutSeconds, o) {
      // As in the kubelet: 0 means no timeout, else the command's timeout plus
      // the request timeout, so the runtime reports the timeout, not us.
      const timeout = wholeSeconds(timeoutSeconds);
      const ms = timeout > 0 ? long + timeout * 1000 : undefined;
      return rt<ExecSyncResponse>(
        "ExecSync",
        { containerId, cmd, timeout },
        o,
        ms,
        containerId,
      );
    },

    async exec(containerId, request, o) {
      const r = await rt<{ url: string }>(
        "Exec",
        { containerId, ...request },
        o,
        long,
        containerId,
      );
      return required(r.url, "Exec", containerId, "streaming url");
    },

    async attach(containerId, request, o) {
      const r = await rt<{ url: string }>(
        "Attach",
        { containerId, ...request },
        o,
        long,
        containerId,
      );
      return required(r.url, "Attach", containerId, "streaming url");
    },

    async portForward(podSandboxId, ports, o) {
      const r = await rt<{ url: string }>(
        "PortForward",
        { podSandboxId, port: ports },
        o,
        long,
        podSandboxId,
      );
      return required(r.url, "PortForward", podSandboxId, "streaming url");
    },

    async containerStats(containerId, o) {
      const r = await rt<{ stats?: ContainerStats }>(
        "ContainerStats",
        { containerId },
        o,
        short,
        containerId,
      );
      return required(r.stats, "ContainerStats", containerId, "stats");
    },

    async listContainerStats(filter, o) {
      const r = await rt<{ stats: ContainerStats[] }>("ListContainerStats", { filter }, o, short);
      return r.stats;
    },

    async reopenContainerLog(containerId, o) {
      await rt("ReopenContainerLog", { containerId }, o, long, containerId);
    },

    async updateContainerResources(containerId, linux, o) {
      await rt("UpdateContainerResources", { containerId, linux }, o, long, containerId);
    },

    async listImages(filter, o) {
      const r = await img<{ images: Image[] }>("ListImages", { filter }, o, short);
      return r.images;
    },

    async imageStatus(spec: ImageSpec, o) {
      const r = await img<{ image?: Image }>("ImageStatus", { image: spec }, o, short, spec.image);
      // CRI answers "not present" with an absent (or empty) image, not NotFound.
      return r.image === undefined || r.image.id === "" ? undefined : r.image;
    },

    async pullImage(spec: ImageSpec, auth?: AuthConfig, sandboxConfig?, o?) {
      const r = await img<{ imageRef: string }>(
        "PullImage",
        { image: spec, auth, sandboxConfig },
        o,
        undefined,
        spec.image,
      );
      return required(r.imageRef, "PullImage", spec.image, "image reference");
    },

    async removeImage(spec, o) {
      await img("RemoveImage", { image: spec }, o, long, spec.image);
    },

    imageFsInfo: (o) => img<ImageFsInfoResponse>("ImageFsInfo", {}, o, short),

    close() {
      runtime.close();
      if (image !== runtime) image.close();
    },
  };
}
