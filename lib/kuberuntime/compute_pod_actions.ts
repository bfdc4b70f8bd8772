/**
 * The pure planner: what one sync of one pod must do, from the pod spec, what
 * the runtime holds, probe results and backoff state. Upstream's
 * `computePodActions` (pkg/kubelet/kuberuntime/kuberuntime_manager.go), with
 * its backoff check (`doBackOff`) moved in so the executor only carries out a
 * plan.
 *
 * ```
 *   sandbox changed? ──yes──► kill pod + create sandbox
 *         │                   (start init[0], or the app containers to run;
 *         no                   Never/OnFailure pods that are done: kill only)
 *         ▼
 *   init containers done? ──no──► next init container (or kill pod if one
 *         │                       failed and restartPolicy is Never)
 *         yes
 *         ▼
 *   per app container: start / kill+restart (spec changed, liveness,
 *   startup) / keep; kill runtime containers the spec no longer names;
 *   nothing kept and nothing to start ──► kill pod
 * ```
 *
 * Every start is gated by CrashLoopBackOff: a container with an exited
 * instance whose backoff entry is still running goes to `inBackoff` instead.
 *
 * Sidecars (init containers with `restartPolicy: Always`) are treated as
 * ordinary init containers for now; {@link planInitContainers} is the one
 * place their rules will go.
 *
 * @module
 */

import type { Container, Pod } from "../api/types.ts";
import { formatGoDuration, isInBackoff } from "./backoff.ts";
import {
  currentInstance,
  isInitContainerFailed,
  latestExitedInstance,
  podDescription,
  podIdentity,
  podSandboxChanged,
  restartPolicyOf,
  shouldContainerBeRestarted,
} from "./container_status.ts";
import { hashContainer } from "./hash.ts";
import {
  backoffKey,
  type BackoffState,
  type ContainerInBackoff,
  type PodActions,
  type RuntimeContainer,
  type RuntimePodStatus,
} from "./types.ts";

/** A liveness or startup probe result, by container id. */
export type ProbeResult = "success" | "failure";

/** Everything {@link computePodActions} decides from. */
export interface ComputePodActionsInput {
  pod: Pod;
  status: RuntimePodStatus;
  /** Read only; the executor updates it after starting containers. */
  backoff: BackoffState;
  /** Epoch ms. */
  now: number;
  /** Liveness results by container id; a missing id means no verdict yet. */
  liveness?: ReadonlyMap<string, ProbeResult> | undefined;
  /** Startup results by container id. */
  startup?: ReadonlyMap<string, ProbeResult> | undefined;
}

/** Kill reasons, as upstream's `containerKillReason` plus ours. */
export const KillReason = {
  /** The running container's hash differs from its spec's. */
  specChanged: "SpecChanged",
  livenessProbe: "LivenessProbe",
  startupProbe: "StartupProbe",
  /** The runtime could not say whether it runs; kill before restarting. */
  unknown: "Unknown",
  /** The runtime has a running container the spec does not name. */
  notInSpec: "NotInSpec",
} as const;

/** Reason reported for a container held back by restart backoff. */
export const CRASH_LOOP_BACK_OFF = "CrashLoopBackOff";

/**
 * Computes the plan for one sync of one pod. Pure: same input, same plan.
 *
 * Deletion is not decided here: the pod worker kills a pod being deleted
 * through its own path. After starting a container that has an exited
 * instance, the executor must record the restart in its backoff store
 * (upstream `backOff.Next(key, finishedAt)`), keyed by {@link backoffKey}
 * with `hashContainer(spec)`.
 * @param input spec, runtime state, probe results, backoff state and time
 * @returns the plan; arrays are fresh and owned by the caller
 */
export function computePodActions(input: ComputePodActionsInput): PodActions {
  const sandbox = podSandboxChanged(input.pod, input.status);
  const actions: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: [],
    inBackoff: [],
  };
  const plan = new Planner(input, actions);
  if (sandbox.changed) {
    planSandboxRecreation(plan);
    return actions;
  }
  const initialized = planInitContainers(plan);
  if (actions.killPod || !initialized) return actions;
  planAppContainers(plan);
  return actions;
}

/** The input plus the plan being built, and the backoff-gated start helpers. */
class Planner {
  readonly pod: Pod;
  readonly status: RuntimePodStatus;
  readonly initContainers: readonly Container[];
  readonly containers: readonly Container[];

  constructor(readonly input: ComputePodActionsInput, readonly actions: PodActions) {
    this.pod = input.pod;
    this.status = input.status;
    this.initContainers = input.pod.spec.initContainers ?? [];
    this.containers = input.pod.spec.containers;
  }

  /** Plans starting `spec.initContainers[idx]`, unless it is backing off. */
  startInit(idx: number): void {
    const spec = this.initContainers[idx];
    if (spec === undefined) return;
    const held = this.backoffFor(spec);
    if (held) this.actions.inBackoff.push(held);
    else this.actions.initContainersToStart.push(idx);
  }

  /** Plans starting `spec.containers[idx]`, unless it is backing off. */
  startApp(idx: number): void {
    const spec = this.containers[idx];
    if (spec === undefined) return;
    const held = this.backoffFor(spec);
    if (held) this.actions.inBackoff.push(held);
    else this.actions.containersToStart.push(idx);
  }

  kill(container: RuntimeContainer, reason: string, message: string): void {
    this.actions.containersToKill.push({
      containerId: container.id,
      name: container.name,
      reason,
      message,
    });
  }

  /**
   * Upstream `doBackOff`: the latest exited instance's finish time is the
   * event; the container waits while the entry's delay has not passed.
   */
  backoffFor(spec: Container): ContainerInBackoff | undefined {
    const exited = latestExitedInstance(this.status, spec.name);
    if (exited === undefined) return undefined;
    const key = backoffKey(podIdentity(this.pod), spec.name, hashContainer(spec));
    const entry = this.input.backoff.get(key);
    if (entry === undefined || !isInBackoff(entry, exited.finishedAt, this.input.now)) {
      return undefined;
    }
    return {
      name: spec.name,
      reason: CRASH_LOOP_BACK_OFF,
      message: `back-off ${
        formatGoDuration(entry.delayMs)
      } restarting failed container=${spec.name} pod=${podDescription(this.pod)}`,
      until: exited.finishedAt + entry.delayMs,
    };
  }
}

/**
 * The sandbox must be (re)created: everything restarts from the first init
 * container, except that a pod which will not restart its finished
 * containers gets no new sandbox at all (upstream: "don't create a new
 * sandbox when all containers have been started and restartPolicy Never").
 */
function planSandboxRecreation(plan: Planner): void {
  const { actions, pod, status } = plan;
  const policy = restartPolicyOf(pod);
  // attempt 0 means no sandbox ever existed; with no containers either, the
  // previous sandbox never got far enough to run anything: retry it.
  if (policy === "Never" && actions.attempt !== 0 && status.containers.length > 0) {
    actions.createSandbox = false;
    return;
  }
  const appToStart = plan.containers
    .map((_, idx) => idx)
    .filter((idx) => {
      const spec = plan.containers[idx];
      return !(policy === "OnFailure" && spec !== undefined && containerSucceeded(spec, status));
    });
  if (appToStart.length === 0 && findNextInitContainer(plan).done) {
    // Initialization is done and nothing is left to run: the pod is finished.
    actions.createSandbox = false;
    return;
  }
  if (plan.initContainers.length > 0) {
    plan.startInit(0);
    return;
  }
  for (const idx of appToStart) plan.startApp(idx);
}

/** Upstream `containerSucceeded`: the current instance exited with code 0. */
function containerSucceeded(spec: Container, status: RuntimePodStatus): boolean {
  const current = currentInstance(status, spec.name);
  return current !== undefined && current.state === "exited" && current.exitCode === 0;
}

/** Where initialization stands (upstream `findNextInitContainerToRun`). */
interface InitProgress {
  /** The failed init container's current instance, when one failed. */
  failed?: RuntimeContainer;
  /** Index of the init container to start next. */
  next?: number;
  /** True when every init container has succeeded. */
  done: boolean;
}

function findNextInitContainer(plan: Planner): InitProgress {
  const { status } = plan;
  const inits = plan.initContainers;
  if (inits.length === 0) return { done: true };
  // A running app container proves initialization finished, even if the
  // init containers' records have since been garbage collected.
  if (plan.containers.some((c) => currentInstance(status, c.name)?.state === "running")) {
    return { done: true };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const current = currentInstance(status, inits[i]?.name ?? "");
    if (current !== undefined && isInitContainerFailed(current)) {
      return { failed: current, next: i, done: false };
    }
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const current = currentInstance(status, inits[i]?.name ?? "");
    if (current === undefined) continue;
    if (current.state === "running") return { done: false };
    if (current.state === "exited") {
      return i === inits.length - 1 ? { done: true } : { next: i + 1, done: false };
    }
  }
  return { next: 0, done: false };
}

/**
 * Runs init containers one at a time, in order.
 * @returns true when initialization is complete and app containers may run
 */
function planInitContainers(plan: Planner): boolean {
  const progress = findNextInitContainer(plan);
  if (progress.done) return true;
  if (progress.next === undefined) return false; // one is still running
  if (progress.failed !== undefined && restartPolicyOf(plan.pod) === "Never") {
    // A failed init container with restartPolicy Never fails the pod.
    plan.actions.killPod = true;
    return false;
  }
  if (progress.failed?.state === "unknown") {
    plan.kill(
      progress.failed,
      KillReason.unknown,
      `Init container is in "unknown" state, try killing it before restart`,
    );
  }
  plan.startInit(progress.next);
  return false;
}

function planAppContainers(plan: Planner): void {
  const { pod, status, actions } = plan;
  const liveness = plan.input.liveness;
  const startup = plan.input.startup;
  let keepCount = 0;
  plan.containers.forEach((spec, idx) => {
    const current = currentInstance(status, spec.name);
    if (current === undefined || current.state !== "running") {
      if (!shouldContainerBeRestarted(pod, spec, status)) return;
      plan.startApp(idx);
      if (current?.state === "unknown") {
        // It may still run; kill it so two instances never run together.
        plan.kill(
          current,
          KillReason.unknown,
          `Container is in "unknown" state, try killing it before restart`,
        );
      }
      return;
    }
    let restart = restartPolicyOf(pod) !== "Never";
    let reason: string;
    let message: string;
    if (current.hash !== hashContainer(spec)) {
      reason = KillReason.specChanged;
      message = `Container ${spec.name} definition changed`;
      restart = true; // a new spec always runs, whatever the restart policy
    } else if (liveness?.get(current.id) === "failure") {
      reason = KillReason.livenessProbe;
      message = `Container ${spec.name} failed liveness probe`;
    } else if (startup?.get(current.id) === "failure") {
      reason = KillReason.startupProbe;
      message = `Container ${spec.name} failed startup probe`;
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      plan.startApp(idx);
    }
    plan.kill(current, reason, message);
  });
  killContainersNotInSpec(plan);
  // Nothing runs and nothing will: the pod is finished (or cannot continue),
  // so upstream stops it. A container merely backing off keeps the pod alive.
  if (
    keepCount === 0 && actions.containersToStart.length === 0 && actions.inBackoff.length === 0
  ) {
    actions.killPod = true;
  }
}

/** Kills running (or possibly running) containers whose name left the spec. */
function killContainersNotInSpec(plan: Planner): void {
  const names = new Set([...plan.initContainers, ...plan.containers].map((c) => c.name));
  const seen = new Set<string>();
  for (const c of plan.status.containers) {
    if (seen.has(c.name)) continue;
    seen.add(c.name);
    if (names.has(c.name) || (c.state !== "running" && c.state !== "unknown")) continue;
    plan.kill(c, KillReason.notInSpec, `Container ${c.name} is not in the pod spec`);
  }
}
