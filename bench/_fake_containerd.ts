/**
 * A stand-in for containerd's CRI, for measuring the agent's sync path without
 * containerd (bench/sync_trace.ts `--sim`): a grpc-js server on a unix socket
 * (lib/cri/_fake_server.ts) holding sandboxes and containers in memory, so the
 * agent's real CRI client, decoder and runtime manager do the work they do on
 * a node. Nothing runs: a started container is "running" until, for a pod
 * named `crash-*`, it "exits" with code 1 after `crashAfterMs`, which the
 * agent's PLEG sees as on a node (ContainerDied, a restart after the back-off).
 *
 * Run on its own (`deno run -A bench/_fake_containerd.ts [--crash-after-ms=20000]`), it
 * prints its endpoint and serves until SIGTERM, so what it allocates is not counted in
 * the process under measurement; whoever started it removes the socket's directory.
 *
 * ```
 *  RunPodSandbox ─► sandbox READY ── StopPodSandbox ─► NOTREADY ── RemovePodSandbox ─► gone
 *  CreateContainer ─► CREATED ── StartContainer ─► RUNNING ── StopContainer / crash ─► EXITED
 * ```
 *
 * @module
 */

import { type FakeCriServer, FakeRpcError, startFakeCriServer } from "../lib/cri/_fake_server.ts";
import { ContainerState, NamespaceMode, PodSandboxState } from "../lib/cri/mod.ts";

/** gRPC NOT_FOUND: what the agent treats as "already gone". */
const NOT_FOUND = 5;

// deno-lint-ignore no-explicit-any
type Req = any;

interface Sandbox {
  id: string;
  metadata: Record<string, unknown>;
  state: number;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  hostNetwork: boolean;
}

interface Box {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number };
  image: { image: string };
  state: number;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  logPath: string;
  crashes: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

/** Options for {@link startFakeContainerd}. */
export interface FakeContainerdOptions {
  /** How long a container of a `crash-*` pod runs before it exits with code 1. */
  crashAfterMs: number;
}

/** A running fake. */
export interface FakeContainerd {
  /** `unix:///…/cri.sock`. */
  endpoint: string;
  /** Stops the containers' timers and the server, and removes the socket's directory. */
  close(): Promise<void>;
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function nowNs(): number {
  return Date.now() * 1e6;
}

function matches(labels: Record<string, string>, selector: Record<string, string> | undefined) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

/**
 * Starts the fake runtime.
 * @param opts when `crash-*` containers exit
 * @returns the endpoint for createRuntimeService
 */
export async function startFakeContainerd(opts: FakeContainerdOptions): Promise<FakeContainerd> {
  const sandboxes = new Map<string, Sandbox>();
  const containers = new Map<string, Box>();
  const sandbox = (id: string) => {
    const s = sandboxes.get(id);
    if (!s) throw new FakeRpcError(NOT_FOUND, `an error occurred when try to find sandbox ${id}`);
    return s;
  };
  const container = (id: string) => {
    const c = containers.get(id);
    if (!c) throw new FakeRpcError(NOT_FOUND, `an error occurred when try to find container ${id}`);
    return c;
  };
  const exit = (c: Box, code: number, reason: string) => {
    clearTimeout(c.timer);
    if (c.state !== ContainerState.CONTAINER_RUNNING) return;
    Object.assign(c, {
      state: ContainerState.CONTAINER_EXITED,
      exitCode: code,
      reason,
      finishedAt: nowNs(),
    });
  };
  const listed = (c: Box) => ({
    id: c.id,
    podSandboxId: c.podSandboxId,
    metadata: c.metadata,
    image: c.image,
    imageRef: "sha256:fake",
    state: c.state,
    createdAt: c.createdAt,
    labels: c.labels,
    annotations: c.annotations,
  });
  const image = (name: string) => ({
    image: { id: "sha256:fake", repoTags: [name], repoDigests: [], size: 1_000_000 },
  });

  const server: FakeCriServer = await startFakeCriServer({
    Version: () => ({
      version: "0.1.0",
      runtimeName: "fake",
      runtimeVersion: "1.6.20",
      runtimeApiVersion: "v1",
    }),
    ImageStatus: (req: Req) => image(req.image.image),
    PullImage: () => ({ imageRef: "sha256:fake" }),
    RunPodSandbox: (req: Req) => {
      const id = newId();
      sandboxes.set(id, {
        id,
        metadata: req.config.metadata,
        state: PodSandboxState.SANDBOX_READY,
        createdAt: nowNs(),
        labels: req.config.labels ?? {},
        annotations: req.config.annotations ?? {},
        hostNetwork:
          req.config.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE,
      });
      return { podSandboxId: id };
    },
    StopPodSandbox: (req: Req) => {
      const s = sandboxes.get(req.podSandboxId);
      if (s) s.state = PodSandboxState.SANDBOX_NOTREADY;
      for (const c of containers.values()) {
        if (c.podSandboxId === req.podSandboxId) exit(c, 137, "Error");
      }
      return {};
    },
    RemovePodSandbox: (req: Req) => {
      sandboxes.delete(req.podSandboxId);
      for (const c of containers.values()) {
        if (c.podSandboxId === req.podSandboxId) containers.delete(c.id);
      }
      return {};
    },
    PodSandboxStatus: (req: Req) => {
      const s = sandbox(req.podSandboxId);
      return {
        status: {
          id: s.id,
          metadata: s.metadata,
          state: s.state,
          createdAt: s.createdAt,
          network: { ip: s.hostNetwork ? "" : "10.88.0.2", additionalIps: [] },
          linux: {
            namespaces: {
              options: { network: s.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD },
            },
          },
          labels: s.labels,
          annotations: s.annotations,
          runtimeHandler: "",
        },
        info: {},
      };
    },
    ListPodSandbox: (req: Req) => ({
      items: [...sandboxes.values()]
        .filter((s) =>
          (!req.filter?.id || s.id === req.filter.id) &&
          (req.filter?.state === undefined || s.state === req.filter.state.state) &&
          matches(s.labels, req.filter?.labelSelector)
        )
        .map((s) => ({
          id: s.id,
          metadata: s.metadata,
          state: s.state,
          createdAt: s.createdAt,
          labels: s.labels,
          annotations: s.annotations,
          runtimeHandler: "",
        })),
    }),
    CreateContainer: (req: Req) => {
      const s = sandbox(req.podSandboxId);
      const id = newId();
      containers.set(id, {
        id,
        podSandboxId: s.id,
        metadata: req.config.metadata,
        image: req.config.image,
        state: ContainerState.CONTAINER_CREATED,
        createdAt: nowNs(),
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        reason: "",
        labels: req.config.labels ?? {},
        annotations: req.config.annotations ?? {},
        logPath: `${req.sandboxConfig?.logDirectory ?? ""}/${req.config.logPath ?? ""}`,
        crashes: String(s.metadata.name ?? "").startsWith("crash-"),
      });
      return { containerId: id };
    },
    StartContainer: (req: Req) => {
      const c = container(req.containerId);
      c.state = ContainerState.CONTAINER_RUNNING;
      c.startedAt = nowNs();
      if (c.crashes) c.timer = setTimeout(() => exit(c, 1, "Error"), opts.crashAfterMs);
      return {};
    },
    StopContainer: (req: Req) => {
      exit(container(req.containerId), 137, "Error");
      return {};
    },
    RemoveContainer: (req: Req) => {
      const c = containers.get(req.containerId);
      if (c) clearTimeout(c.timer);
      containers.delete(req.containerId);
      return {};
    },
    ListContainers: (req: Req) => ({
      containers: [...containers.values()]
        .filter((c) =>
          (!req.filter?.id || c.id === req.filter.id) &&
          (!req.filter?.podSandboxId || c.podSandboxId === req.filter.podSandboxId) &&
          (req.filter?.state === undefined || c.state === req.filter.state.state) &&
          matches(c.labels, req.filter?.labelSelector)
        )
        .map(listed),
    }),
    ContainerStatus: (req: Req) => {
      const c = container(req.containerId);
      return {
        status: {
          ...listed(c),
          startedAt: c.startedAt,
          finishedAt: c.finishedAt,
          exitCode: c.exitCode,
          reason: c.reason,
          message: "",
          mounts: [],
          logPath: c.logPath,
        },
        info: {},
      };
    },
  });
  return {
    endpoint: server.endpoint,
    async close() {
      for (const c of containers.values()) clearTimeout(c.timer);
      await server.close();
    },
  };
}

if (import.meta.main) {
  const flag = Deno.args.find((a) => a.startsWith("--crash-after-ms="));
  const fake = await startFakeContainerd({ crashAfterMs: Number(flag?.split("=")[1] ?? 20_000) });
  // Not close(): grpc-js's forced shutdown can trip an nghttp2 assertion under
  // Deno while a client's session winds down, and the process ends anyway.
  Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
  console.log(fake.endpoint);
}
