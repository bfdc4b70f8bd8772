/**
 * The node page's data (`/ui/data`): a pure function of one snapshot of the
 * agent — the Node's status, the pods with their status, the probes' results
 * and the housekeeping samples of the last 2 minutes — turned into what the
 * page shows, sparklines drawn as path data. The page only patches its DOM
 * from it; every decision about what to show is made here, where it is
 * unit-tested.
 *
 * @module
 */

import type { NodeCondition, NodeStatus } from "../api/cluster_types.ts";
import { isRestartableInitContainer } from "../api/pod.ts";
import type { Container, ContainerStatus, Pod, Probe } from "../api/types.ts";
import type { ProbeResultView, ProbeType } from "../prober/mod.ts";
import type { Sample } from "../stats/mod.ts";
import {
  cpuSeries,
  memorySeries,
  SPARK_HEIGHT,
  SPARK_WIDTH,
  type Sparkline,
  sparkline,
} from "./sparkline.ts";

/** The window the sparklines show: housekeeping's storage duration. */
export const SPARK_WINDOW_MS = 120_000;

/** One pod as the agent holds it. */
export interface PodInput {
  /** The pod with its latest status (`/pods`). */
  pod: Pod;
  /** Its probes' results (ProbeManager.results). */
  probes: readonly ProbeResultView[];
  /** The pod cgroup's samples, oldest first. */
  samples: readonly Sample[];
  /** Each running container's samples, by CRI container ID (no `containerd://`). */
  containerSamples: ReadonlyMap<string, readonly Sample[]>;
}

/** Everything the page shows, at one moment. */
export interface NodePageInput {
  /** Epoch ms. */
  now: number;
  nodeName: string;
  /**
   * "apiserver": the registered Node's status; "local": what the agent computes
   * (standalone, or before registration).
   */
  nodeSource: "apiserver" | "local";
  nodeStatus: NodeStatus | undefined;
  /** The node's own samples (/proc), oldest first. */
  nodeSamples: readonly Sample[];
  pods: readonly PodInput[];
}

/** A condition as shown. */
export interface ConditionView {
  type: string;
  status: string;
  reason: string;
  message: string;
  /** lastTransitionTime. */
  since: string;
  /** Whether this status is the healthy one (Ready True, a pressure False). */
  ok: boolean;
}

/** The node as shown. */
export interface NodeView {
  name: string;
  source: "apiserver" | "local";
  conditions: ConditionView[];
  /** The pressure conditions that are True. */
  pressure: string[];
  /** Resource → quantity. */
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  /** kernel, OS image, runtime, kubelet version, architecture. */
  info: Record<string, string>;
  cpu: Sparkline;
  memory: Sparkline;
}

/** A probe as shown. */
export interface ProbeView {
  type: ProbeType;
  /** What it does: `exec cat /tmp/ok`, `GET http://:8080/healthz`, `tcp :6379`, `grpc :9000`. */
  handler: string;
  periodSeconds: number;
  /** The current instance's result; "unknown" also when no worker runs it. */
  result: "success" | "failure" | "unknown";
  output: string;
}

/** A container as shown. */
export interface ContainerView {
  name: string;
  kind: "init" | "sidecar" | "app" | "ephemeral";
  image: string;
  state: "running" | "waiting" | "terminated" | "unknown";
  /** The waiting or terminated reason (CrashLoopBackOff, Error, Completed…). */
  reason: string;
  /** Its message: for CrashLoopBackOff, upstream's "back-off 40s restarting failed container=…". */
  message: string;
  exitCode?: number;
  ready: boolean;
  started: boolean;
  restarts: number;
  /** The previous instance's end: "Error, exit 1, at <time>"; "" without one. */
  lastTermination: string;
  probes: ProbeView[];
  /** Present while the container runs and housekeeping tracks it. */
  cpu?: Sparkline;
  memory?: Sparkline;
}

/** A pod as shown. */
export interface PodView {
  namespace: string;
  name: string;
  uid: string;
  /** kubectl's STATUS column: the phase, or the reason that explains it. */
  status: string;
  phase: string;
  message: string;
  /** Ready app containers / app containers. */
  ready: string;
  restarts: number;
  qosClass: string;
  podIP: string;
  startTime: string;
  /** The pod's sync trace, relative to the page (so it also works behind the apiserver's node proxy). */
  trace: string;
  containers: ContainerView[];
  cpu: Sparkline;
  memory: Sparkline;
}

/** `/ui/data`. */
export interface NodePageData {
  /** RFC 3339. */
  generatedAt: string;
  windowMs: number;
  /** The sparklines' viewBox. */
  spark: { width: number; height: number };
  node: NodeView;
  pods: PodView[];
}

const PRESSURE = new Set(["MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"]);

function conditionView(c: NodeCondition): ConditionView {
  return {
    type: c.type,
    status: c.status,
    reason: c.reason ?? "",
    message: c.message ?? "",
    since: c.lastTransitionTime ?? "",
    ok: c.type === "Ready" ? c.status === "True" : c.status === "False",
  };
}

function quantities(r: Record<string, string | number> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(r ?? {}).map(([k, v]) => [k, String(v)]));
}

/**
 * A probe's handler in a few words.
 * @param probe the probe spec
 * @returns e.g. `GET http://:8080/healthz`
 */
export function probeHandler(probe: Probe): string {
  if (probe.exec) return `exec ${(probe.exec.command ?? []).join(" ")}`;
  if (probe.httpGet) {
    const g = probe.httpGet;
    return `GET ${(g.scheme ?? "HTTP").toLowerCase()}://${g.host ?? ""}:${g.port}${g.path ?? "/"}`;
  }
  if (probe.tcpSocket) return `tcp ${probe.tcpSocket.host ?? ""}:${probe.tcpSocket.port}`;
  if (probe.grpc) {
    return `grpc :${probe.grpc.port}${probe.grpc.service ? ` ${probe.grpc.service}` : ""}`;
  }
  return "no handler";
}

const PROBE_FIELDS: readonly [ProbeType, "startupProbe" | "livenessProbe" | "readinessProbe"][] = [
  ["Startup", "startupProbe"],
  ["Liveness", "livenessProbe"],
  ["Readiness", "readinessProbe"],
];

function probeViews(c: Container, results: readonly ProbeResultView[]): ProbeView[] {
  const out: ProbeView[] = [];
  for (const [type, field] of PROBE_FIELDS) {
    const probe = c[field];
    if (!probe) continue;
    const r = results.find((x) => x.container === c.name && x.probeType === type);
    out.push({
      type,
      handler: probeHandler(probe),
      periodSeconds: probe.periodSeconds ?? 10,
      result: r?.result ?? "unknown",
      output: r?.output ?? "",
    });
  }
  return out;
}

function lastTermination(s: ContainerStatus | undefined): string {
  const t = s?.lastState?.terminated;
  if (!t) return "";
  const parts = [t.reason ?? "Terminated", `exit ${t.exitCode}`];
  if (t.finishedAt) parts.push(`at ${t.finishedAt}`);
  return parts.join(", ");
}

interface SparkContext {
  fromMs: number;
  toMs: number;
}

function sparks(
  samples: readonly Sample[],
  ctx: SparkContext,
): { cpu: Sparkline; memory: Sparkline } {
  const box = { ...ctx, width: SPARK_WIDTH, height: SPARK_HEIGHT };
  return { cpu: sparkline(cpuSeries(samples), box), memory: sparkline(memorySeries(samples), box) };
}

function containerView(
  c: Container,
  kind: ContainerView["kind"],
  status: ContainerStatus | undefined,
  input: PodInput,
  ctx: SparkContext,
): ContainerView {
  const st = status?.state;
  const state: ContainerView["state"] = st?.running
    ? "running"
    : st?.waiting
    ? "waiting"
    : st?.terminated
    ? "terminated"
    : "unknown";
  const view: ContainerView = {
    name: c.name,
    kind,
    image: c.image ?? status?.image ?? "",
    state,
    reason: st?.waiting?.reason ?? st?.terminated?.reason ?? "",
    message: st?.waiting?.message ?? st?.terminated?.message ?? "",
    ready: status?.ready ?? false,
    started: status?.started ?? false,
    restarts: status?.restartCount ?? 0,
    lastTermination: lastTermination(status),
    probes: probeViews(c, input.probes),
  };
  if (st?.terminated) view.exitCode = st.terminated.exitCode;
  const id = status?.containerID?.replace(/^[a-z0-9]+:\/\//, "");
  const samples = state === "running" && id ? input.containerSamples.get(id) : undefined;
  if (samples && samples.length > 0) Object.assign(view, sparks(samples, ctx));
  return view;
}

/**
 * kubectl's STATUS column, simplified: the pod's reason, else the last app
 * container's waiting or terminated reason, else the phase; "Terminating" once
 * deleted.
 */
function podStatusText(pod: Pod): string {
  if (pod.metadata.deletionTimestamp) return "Terminating";
  let text = pod.status?.reason || pod.status?.phase || "Unknown";
  for (const s of pod.status?.initContainerStatuses ?? []) {
    const reason = s.state.waiting?.reason ??
      (s.state.terminated && s.state.terminated.exitCode !== 0
        ? s.state.terminated.reason
        : undefined);
    if (reason && reason !== "PodInitializing") return `Init:${reason}`;
  }
  for (const s of pod.status?.containerStatuses ?? []) {
    const reason = s.state.waiting?.reason ?? s.state.terminated?.reason;
    if (reason) text = reason;
  }
  return text;
}

function podView(input: PodInput, ctx: SparkContext): PodView {
  const { pod } = input;
  const status = pod.status ?? {};
  const byName = (list: ContainerStatus[] | undefined) =>
    new Map((list ?? []).map((s) => [s.name, s]));
  const init = byName(status.initContainerStatuses);
  const app = byName(status.containerStatuses);
  const eph = byName(status.ephemeralContainerStatuses);
  const containers: ContainerView[] = [
    ...(pod.spec.initContainers ?? []).map((c) =>
      containerView(
        c,
        isRestartableInitContainer(c) ? "sidecar" : "init",
        init.get(c.name),
        input,
        ctx,
      )
    ),
    ...pod.spec.containers.map((c) => containerView(c, "app", app.get(c.name), input, ctx)),
    ...(pod.spec.ephemeralContainers ?? []).map((c) =>
      containerView(c, "ephemeral", eph.get(c.name), input, ctx)
    ),
  ];
  const apps = containers.filter((c) => c.kind === "app");
  const namespace = pod.metadata.namespace ?? "default";
  const name = pod.metadata.name ?? "";
  return {
    namespace,
    name,
    uid: pod.metadata.uid ?? "",
    status: podStatusText(pod),
    phase: status.phase ?? "Unknown",
    message: status.message ?? "",
    ready: `${apps.filter((c) => c.ready).length}/${apps.length}`,
    restarts: containers.reduce((n, c) => n + c.restarts, 0),
    qosClass: status.qosClass ?? "",
    podIP: status.podIP ?? "",
    startTime: status.startTime ?? "",
    trace: `debug/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/syncs`,
    containers,
    ...sparks(input.samples, ctx),
  };
}

/**
 * Builds the page's data from one snapshot of the agent.
 * @param input the node, the pods, probes and samples at `now`
 * @returns what `/ui/data` serves; pods sorted by namespace and name
 */
export function buildNodePageData(input: NodePageInput): NodePageData {
  const ctx: SparkContext = { fromMs: input.now - SPARK_WINDOW_MS, toMs: input.now };
  const status = input.nodeStatus;
  const conditions = (status?.conditions ?? []).map(conditionView);
  const info = status?.nodeInfo;
  const node: NodeView = {
    name: input.nodeName,
    source: input.nodeSource,
    conditions,
    pressure: conditions.filter((c) => PRESSURE.has(c.type) && c.status === "True").map((c) =>
      c.type
    ),
    capacity: quantities(status?.capacity),
    allocatable: quantities(status?.allocatable),
    info: info
      ? {
        kernel: info.kernelVersion,
        os: info.osImage,
        runtime: info.containerRuntimeVersion,
        kubelet: info.kubeletVersion,
        arch: info.architecture,
      }
      : {},
    ...sparks(input.nodeSamples, ctx),
  };
  const pods = input.pods.map((p) => podView(p, ctx)).sort((a, b) =>
    a.namespace === b.namespace
      ? a.name.localeCompare(b.name)
      : a.namespace.localeCompare(b.namespace)
  );
  return {
    generatedAt: new Date(input.now).toISOString(),
    windowMs: SPARK_WINDOW_MS,
    spark: { width: SPARK_WIDTH, height: SPARK_HEIGHT },
    node,
    pods,
  };
}
