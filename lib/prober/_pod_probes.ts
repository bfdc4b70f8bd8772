/**
 * One pod's probe state inside the manager (workers, the container instances
 * the runtime last showed, cached results) and the pure views derived from
 * it: `started`, `ready` and the planner's verdicts, with upstream's rules
 * (prober_manager.go UpdatePodStatus).
 *
 * @module
 */

import { isRestartableInitContainer } from "../api/pod.ts";
import type { Container, Pod } from "../api/types.ts";
import type { RuntimePodStatus } from "../kuberuntime/types.ts";
import type { ProbeResultKind, ProbeResultView, ProbeType, ProbeVerdict } from "./types.ts";
import type { ContainerView, ProbeWorker } from "./worker.ts";

/** A cached result and the container name it belongs to. */
export interface CachedResult {
  result: ProbeResultKind;
  container: string;
  /** The handler's output that produced the result. */
  output: string;
}

/** Everything the manager holds for one pod. */
export interface PodProbes {
  /** The latest pod object (deletion timestamp, restart policy, specs). */
  pod: Pod;
  /** By {@link workerKey}. */
  workers: Map<string, ProbeWorker>;
  /** Container name → its current instance, from the last runtime status. */
  views: Map<string, ContainerView>;
  /** Per probe type: container id → result. */
  results: Record<ProbeType, Map<string, CachedResult>>;
  /** The IP probes go to ("" until a sandbox was seen). */
  podIP: string;
}

/** Probe types in the order their workers are made. */
export const PROBE_TYPES: readonly ProbeType[] = ["Startup", "Liveness", "Readiness"];

/** The container field holding each probe. */
export const SPEC_FIELD = {
  Liveness: "livenessProbe",
  Readiness: "readinessProbe",
  Startup: "startupProbe",
} as const;

/**
 * A worker's key within its pod.
 * @param container container name
 * @param type probe type
 * @returns `name/Type`
 */
export function workerKey(container: string, type: ProbeType): string {
  return `${container}/${type}`;
}

/**
 * A container's spec by name, app containers first, then init containers.
 * @param pod the pod
 * @param name container name
 * @returns the spec, undefined when the pod has no such container
 */
export function containerSpec(pod: Pod, name: string): Container | undefined {
  return pod.spec.containers.find((c) => c.name === name) ??
    pod.spec.initContainers?.find((c) => c.name === name);
}

/**
 * The current instance of each container name.
 * @param runtime the pod's runtime status (containers newest first)
 * @returns name → view
 */
export function containerViews(runtime: RuntimePodStatus): Map<string, ContainerView> {
  const views = new Map<string, ContainerView>();
  for (const c of runtime.containers) {
    if (views.has(c.name)) continue;
    views.set(c.name, { id: c.id, state: c.state, startedAt: c.startedAt, exitCode: c.exitCode });
  }
  return views;
}

/**
 * Whether a container has started: its startup result is success, or it has
 * no startup worker (none in the spec, or stopped).
 * @param p the pod's state
 * @param name container name
 * @param containerId the instance
 * @returns true when started
 */
export function isStarted(p: PodProbes, name: string, containerId: string): boolean {
  const startup = p.results.Startup.get(containerId);
  if (startup) return startup.result === "success";
  return !p.workers.has(workerKey(name, "Startup"));
}

/**
 * Decided results of one probe type (unknown left out).
 * @param p the pod's state, undefined for an unknown pod
 * @param type Liveness or Startup
 * @returns container id → verdict
 */
export function verdicts(p: PodProbes | undefined, type: ProbeType): Map<string, ProbeVerdict> {
  const out = new Map<string, ProbeVerdict>();
  for (const [id, cached] of p?.results[type] ?? []) {
    if (cached.result !== "unknown") out.set(id, cached.result);
  }
  return out;
}

/**
 * `started` for every container instance the runtime last showed.
 * @param p the pod's state, undefined for an unknown pod
 * @returns container id → started
 */
export function startedView(p: PodProbes | undefined): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const [name, view] of p?.views ?? []) {
    out.set(view.id, view.state === "running" && isStarted(p!, name, view.id));
  }
  return out;
}

/**
 * `ready` for every container instance the runtime last showed: an app
 * container or sidecar when running, started and its readiness probe passed
 * (or it has none); a regular init container once it exited 0.
 * @param p the pod's state, undefined for an unknown pod
 * @returns container id → ready
 */
export function readyView(p: PodProbes | undefined): Map<string, boolean> {
  const out = new Map<string, boolean>();
  if (!p) return out;
  const regularInit = new Set(
    (p.pod.spec.initContainers ?? []).filter((c) => !isRestartableInitContainer(c)).map((c) =>
      c.name
    ),
  );
  for (const [name, view] of p.views) {
    if (regularInit.has(name)) {
      out.set(view.id, view.state === "exited" && view.exitCode === 0);
      continue;
    }
    out.set(
      view.id,
      view.state === "running" && isStarted(p, name, view.id) &&
        (p.results.Readiness.get(view.id)?.result === "success" ||
          !p.workers.has(workerKey(name, "Readiness"))),
    );
  }
  return out;
}

/**
 * Each worker's result for the current instance of its container.
 * @param p the pod's state, undefined for an unknown pod
 * @returns one view per worker, in the workers' order
 */
export function resultsView(p: PodProbes | undefined): ProbeResultView[] {
  const out: ProbeResultView[] = [];
  for (const [key, worker] of p?.workers ?? []) {
    const container = key.slice(0, key.lastIndexOf("/"));
    const id = p!.views.get(container)?.id;
    const cached = id === undefined ? undefined : p!.results[worker.type].get(id);
    out.push({
      container,
      probeType: worker.type,
      result: cached?.result ?? "unknown",
      output: cached?.output ?? "",
    });
  }
  return out;
}
