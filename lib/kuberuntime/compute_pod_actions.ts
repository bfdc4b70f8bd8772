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
 *   ephemeral containers with no instance yet ──► start (whatever the init
 *         │                                        containers are doing)
 *         ▼
 *   init containers done? ──no──► next init container, restart exited or
 *         │                       unhealthy sidecars (or kill pod if a
 *         │                       regular one failed and restartPolicy is Never)
 *         yes
 *         ▼
 *   per app container: start / kill+restart (spec changed, liveness,
 *   startup, a resize whose policy is RestartContainer) / update its
 *   resources in place (resize) / keep; kill runtime containers the spec no
 *   longer names; nothing kept and nothing to start ──► kill pod
 * ```
 *
 * In-place resize (resize_action.ts) compares each running container's
 * allocated resources with what the runtime actuated; running init
 * containers and sidecars are resized the same way.
 *
 * Every start is gated by CrashLoopBackOff: a container with an exited
 * instance whose backoff entry is still running goes to `inBackoff` instead.
 *
 * Ephemeral containers (`kubectl debug`) are started once, as upstream: any
 * runtime instance of one, running or exited, means it was started, so it is
 * never restarted, never killed for a spec change and never keeps the pod
 * alive. Unlike upstream, a plan that kills the pod starts none (upstream
 * would try them in the sandbox it just stopped).
 *
 * Sidecars (init containers with `restartPolicy: Always`) follow upstream's
 * `computeInitContainerActions`: the next init container starts once a
 * sidecar is started (startup probe passed, if any); sidecars are restarted
 * on exit whatever the pod's restart policy, and never keep a finished pod
 * alive.
 *
 * @module
 */

import { formatPod, isRestartableInitContainer, restartPolicyOf } from "../api/pod.ts";
import type { Container, Pod, ResourceRequirements } from "../api/types.ts";
import { type BackoffState, isInBackoff } from "../util/backoff.ts";
import { formatDuration } from "../util/duration.ts";
import {
  currentInstance,
  hasAnyRegularContainerCreated,
  isInitContainerFailed,
  latestExitedInstance,
  podIdentity,
  podSandboxChanged,
  shouldContainerBeRestarted,
} from "./container_status.ts";
import { hashContainer } from "./hash.ts";
import { addContainerUpdates, computeContainerResize } from "./resize_action.ts";
import {
  backoffKey,
  type ContainerInBackoff,
  type ContainerToKill,
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
  /**
   * In-place resize: what the runtime last accepted for each container, by
   * name (lib/allocation `ResourceState`); `pod` is then the *allocated*
   * pod. A running container whose allocated cpu or memory differs is
   * updated in place, or restarted where its `resizePolicy` says
   * RestartContainer. Without it no resize is planned.
   */
  actuated?: ReadonlyMap<string, ResourceRequirements> | undefined;
}

/** Kill reasons, as upstream's `containerKillReason` plus ours. */
export const KillReason = {
  /** The running container's hash differs from its spec's. */
  specChanged: "SpecChanged",
  livenessProbe: "LivenessProbe",
  startupProbe: "StartupProbe",
  /** The runtime could not say whether it runs; kill before restarting. */
  unknown: "Unknown",
  /** An in-place resize whose resizePolicy says RestartContainer. */
  resizeRestart: "ResizeRestart",
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
    ephemeralContainersToStart: [],
    containersToKill: [],
    inBackoff: [],
  };
  const plan = new Planner(input, actions);
  if (sandbox.changed) {
    planSandboxRecreation(plan);
    return actions;
  }
  planEphemeralContainers(plan);
  const initialized = planInitContainers(plan);
  if (actions.killPod || !initialized) return actions;
  planAppContainers(plan);
  return actions;
}

/**
 * Upstream's ephemeral container rule: one the runtime has never seen is
 * started, even before initialization is done (a debugger for a stuck init
 * container). Its backoff needs no check: it has no exited instance.
 */
function planEphemeralContainers(plan: Planner): void {
  (plan.pod.spec.ephemeralContainers ?? []).forEach((spec, idx) => {
    if (currentInstance(plan.status, spec.name) === undefined) {
      plan.actions.ephemeralContainersToStart.push(idx);
    }
  });
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

  /**
   * Upstream `computePodResizeAction` for a running container: plans its
   * in-place updates, or says it must restart (the caller kills and starts it).
   * @returns the restart message, or undefined when the container is kept
   */
  resize(spec: Container, current: RuntimeContainer, isInit: boolean): string | undefined {
    const actuated = this.input.actuated;
    if (actuated === undefined) return undefined;
    const decision = computeContainerResize(spec, current.id, isInit, actuated.get(spec.name));
    if (decision.action === "restart") return decision.message;
    if (decision.action === "update") {
      this.actions.containersToUpdate ??= { memory: [], cpu: [] };
      addContainerUpdates(this.actions.containersToUpdate, decision);
    }
    return undefined;
  }

  kill(container: RuntimeContainer, reason: string, message: string): void {
    const kill: ContainerToKill = {
      containerId: container.id,
      name: container.name,
      reason,
      message,
    };
    const grace = this.probeGracePeriod(container.name, reason);
    if (grace !== undefined) kill.gracePeriodSeconds = grace;
    this.actions.containersToKill.push(kill);
  }

  /** A failed probe's own terminationGracePeriodSeconds overrides the pod's, as upstream. */
  probeGracePeriod(name: string, reason: string): number | undefined {
    const spec = [...this.containers, ...this.initContainers].find((c) => c.name === name);
    if (reason === KillReason.livenessProbe) {
      return spec?.livenessProbe?.terminationGracePeriodSeconds;
    }
    if (reason === KillReason.startupProbe) {
      return spec?.startupProbe?.terminationGracePeriodSeconds;
    }
    return undefined;
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
        formatDuration(entry.delayMs)
      } restarting failed container=${spec.name} pod=${formatPod(this.pod)}`,
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
  // An app container that was ever created proves initialization finished
  // (a killed sidecar's non-zero exit must not count as a failed init).
  if (appToStart.length === 0 && hasAnyRegularContainerCreated(pod, status)) {
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

/**
 * Upstream `computeInitContainerActions`: regular init containers run one at
 * a time, each to success; a sidecar (`restartPolicy: Always`) counts as done
 * once it is *started* (running, and its startup probe succeeded if it has
 * one), and from then on is kept running: restarted when it exits, fails a
 * probe or changes spec, whatever the pod's restart policy.
 *
 * Walks the init containers backwards, because completed ones may have been
 * removed from the runtime: the last one with a record tells how far
 * initialization got, and everything before it has run.
 * @returns true when initialization is complete and app containers may run
 */
function planInitContainers(plan: Planner): boolean {
  const { pod, status, initContainers: inits } = plan;
  if (inits.length === 0) return true;
  // A created or running app container proves initialization finished, even
  // if the init containers' records have since been garbage collected.
  // (Exited ones prove nothing: they may belong to a previous sandbox.)
  let initialized = plan.containers.some((c) => {
    const state = currentInstance(status, c.name)?.state;
    return state === "created" || state === "running";
  });
  if (!initialized && appContainersFinished(plan)) {
    // Deliberately stricter than upstream, which restarts an exited last
    // sidecar first and only kills the pod once it runs again: a sidecar
    // that crashes quickly could then keep a completed Job-like pod alive.
    return stopPod(plan);
  }
  let reached = initialized; // an init container at or after this index has run
  const restartOnFailure = restartPolicyOf(pod) !== "Never";
  const toStart: number[] = [];
  for (let i = inits.length - 1; i >= 0; i--) {
    const spec = inits[i]!;
    const sidecar = isRestartableInitContainer(spec);
    const current = currentInstance(status, spec.name);
    if (current === undefined) {
      // Its record is gone but later ones ran: only a sidecar must come back.
      if (reached && sidecar) toStart.push(i);
      continue;
    }
    if (reached && !sidecar) continue; // a regular init container never runs twice
    const last = i === inits.length - 1;
    switch (current.state) {
      case "created":
        // Start failed half-way last time; start it again rather than wait forever.
        toStart.push(i);
        break;
      case "running": {
        // A regular one is resized in place (validation forbids its restart policy).
        if (!sidecar) {
          plan.resize(spec, current, true);
          break; // wait for it to finish
        }
        const verdict = planRunningSidecar(plan, spec, current);
        if (verdict === "waiting") break;
        if (verdict === "restart") {
          toStart.push(i);
          break;
        }
        if (last) initialized = true;
        else if (!reached) toStart.push(i + 1); // started for the first time: next one
        if (verdict === "started+restart") toStart.push(i);
        break;
      }
      case "exited":
        if (sidecar) toStart.push(i);
        else if (isInitContainerFailed(current)) {
          if (!restartOnFailure) return stopPod(plan);
          toStart.push(i);
        } else if (last) initialized = true;
        else toStart.push(i + 1);
        break;
      default: // unknown: it may still run, so kill it before starting it again
        if (!sidecar && !restartOnFailure) return stopPod(plan);
        plan.kill(
          current,
          KillReason.unknown,
          `Init container is in "unknown" state, try killing it before restart`,
        );
        toStart.push(i);
    }
    reached = true;
  }
  if (!reached) toStart.push(0);
  // Collected backwards; start in spec order.
  for (const idx of [...new Set(toStart)].sort((a, b) => a - b)) plan.startInit(idx);
  return initialized;
}

/**
 * Stops the whole pod and starts nothing: a regular init container failed
 * with restartPolicy Never, or the app containers are done for good.
 */
function stopPod(plan: Planner): false {
  plan.actions.killPod = true;
  plan.actions.initContainersToStart = [];
  plan.actions.ephemeralContainersToStart = [];
  plan.actions.inBackoff = [];
  delete plan.actions.containersToUpdate;
  return false;
}

/** Every app container ran and exited, and the restart policy restarts none of them. */
function appContainersFinished(plan: Planner): boolean {
  return plan.containers.every((c) =>
    currentInstance(plan.status, c.name)?.state === "exited" &&
    !shouldContainerBeRestarted(plan.pod, c, plan.status)
  );
}

/**
 * What to do with a running sidecar: still "waiting" for its startup probe;
 * "restart" it (failed startup probe); "started" and fine; or
 * "started+restart" (started before, but its spec changed or its liveness
 * probe failed). Kills are planned here.
 */
function planRunningSidecar(
  plan: Planner,
  spec: Container,
  current: RuntimeContainer,
): "waiting" | "restart" | "started" | "started+restart" {
  if (spec.startupProbe) {
    const startup = plan.input.startup?.get(current.id);
    if (startup === undefined) return "waiting";
    if (startup === "failure") {
      plan.kill(
        current,
        KillReason.startupProbe,
        `Init container ${spec.name} failed startup probe`,
      );
      return "restart";
    }
  }
  if (current.hash !== hashContainer(spec)) {
    plan.kill(current, KillReason.specChanged, `Init container ${spec.name} definition changed`);
    return "started+restart";
  }
  if (spec.livenessProbe && plan.input.liveness?.get(current.id) === "failure") {
    plan.kill(
      current,
      KillReason.livenessProbe,
      `Init container ${spec.name} failed liveness probe`,
    );
    return "started+restart";
  }
  const resizeRestart = plan.resize(spec, current, true);
  if (resizeRestart !== undefined) {
    plan.kill(current, KillReason.resizeRestart, resizeRestart);
    return "started+restart";
  }
  return "started";
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
      const resizeRestart = plan.resize(spec, current, false);
      if (resizeRestart === undefined) {
        keepCount++;
        return;
      }
      // Upstream restarts it whatever the pod's restart policy, and does not
      // count it as kept: it is in containersToStart.
      plan.startApp(idx);
      plan.kill(current, KillReason.resizeRestart, resizeRestart);
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
  // so upstream stops it. An app container merely backing off keeps the pod
  // alive; sidecars never do (a Job-like pod completes with its sidecars).
  const appNames = new Set(plan.containers.map((c) => c.name));
  if (
    keepCount === 0 && actions.containersToStart.length === 0 &&
    !actions.inBackoff.some((b) => appNames.has(b.name))
  ) {
    actions.killPod = true;
    actions.initContainersToStart = [];
    actions.ephemeralContainersToStart = [];
    actions.inBackoff = [];
    delete actions.containersToUpdate;
  }
}

/** Kills running (or possibly running) containers whose name left the spec. */
function killContainersNotInSpec(plan: Planner): void {
  const names = new Set(
    [...plan.initContainers, ...plan.containers, ...(plan.pod.spec.ephemeralContainers ?? [])]
      .map((c) => c.name),
  );
  const seen = new Set<string>();
  for (const c of plan.status.containers) {
    if (seen.has(c.name)) continue;
    seen.add(c.name);
    if (names.has(c.name) || (c.state !== "running" && c.state !== "unknown")) continue;
    plan.kill(c, KillReason.notInSpec, `Container ${c.name} is not in the pod spec`);
  }
}
