/**
 * The allocation manager: which resources the kubelet has granted each pod's
 * containers, as upstream's pkg/kubelet/allocation. A pod is allocated what
 * it asked for when it is admitted; a later change of its containers'
 * resources (the `pods/resize` subresource) is a resize request, admitted
 * against the node like a new pod (the pod's own allocation left out) and
 * then either allocated, or left pending with PodResizePending:
 *
 * ```
 *  spec resources ≠ allocation ──► resize admit rules ──► admit handlers
 *          │                        (Infeasible)          (OutOfcpu … → Deferred)
 *          │                               │ fits
 *          ▼                               ▼
 *  PodResizePending (retried:      allocation checkpointed, ResizeStarted,
 *  on updates, removals, 3 min)    PodResizeInProgress until the runtime
 *                                  actuates it (lib/kuberuntime)
 * ```
 *
 * Everything downstream (the pod workers, the runtime manager, status) works
 * on the *allocated* pod: the spec with each container's resources replaced
 * by its allocation ({@link AllocationManager.allocatedPod}).
 *
 * @module
 */

import { formatPod } from "../api/pod.ts";
import { resourcesEqual } from "../api/resources.ts";
import { podQOSClass } from "../api/qos.ts";
import { podRequests } from "../api/scheduling.ts";
import type { Container, Pod } from "../api/types.ts";
import { podReference } from "../events/recorder.ts";
import { EventReason } from "../events/reasons.ts";
import { discardEvents, type EventRecorder } from "../events/types.ts";
import type { Clock } from "../util/clock.ts";
import { goJson } from "../util/json.ts";
import type { Logger } from "../util/log.ts";
import { PodResizeConditions, REASON_DEFERRED, REASON_INFEASIBLE } from "./resize_conditions.ts";
import type { PodResourceInfo, ResourceState } from "./state.ts";

/** Upstream's `initialRetryDelay` and `retryDelay` of pending resizes. */
export const INITIAL_RETRY_DELAY_MS = 30_000;
export const RETRY_DELAY_MS = 3 * 60_000;

/** An admission verdict (lib/admission's `AdmitVerdict`). */
export type AdmitVerdict =
  | { admit: true }
  | { admit: false; reason: string; message: string };

/**
 * Runs the node's admit handlers on a pod against the other pods (lib/admission
 * `canAdmitPod` over the kubelet's handlers).
 */
export type AdmitFunc = (pod: Pod, otherPods: readonly Pod[]) => AdmitVerdict;

/** Options for {@link AllocationManager}. */
export interface AllocationManagerOptions {
  /** The allocation checkpoint (`denolet_allocated_pods_state` under the root dir). */
  state: ResourceState;
  clock: Clock;
  logger: Logger;
  /** The admit handlers a new pod and a resize must pass (lib/admission). */
  admit: AdmitFunc;
  /** ResizeStarted, ResizeDeferred, ResizeInfeasible. */
  events?: EventRecorder;
}

/** Every container whose resources can be resized: app and init containers (sidecars or not). */
function resizableContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}

/**
 * What a pod's containers are allocated, from its spec (upstream
 * `ResourceInfoForPod`).
 * @param pod the pod
 * @returns container name → resources
 */
export function resourceInfoForPod(pod: Pod): PodResourceInfo {
  const info: PodResourceInfo = { containers: {} };
  for (const c of resizableContainers(pod)) {
    info.containers[c.name] = structuredClone(c.resources ?? {});
  }
  if (pod.spec.resources) info.podLevel = structuredClone(pod.spec.resources);
  return info;
}

/**
 * The pod with each container's resources replaced by its allocation
 * (upstream `updatePodFromAllocation`); the pod itself when nothing differs.
 * @param pod the pod as its source has it
 * @param allocated the pod's allocation
 * @returns the allocated pod (a copy when changed) and whether it differs
 */
export function podFromAllocation(
  pod: Pod,
  allocated: PodResourceInfo | undefined,
): { pod: Pod; updated: boolean } {
  if (!allocated) return { pod, updated: false };
  const differs = (c: Container) => {
    const a = allocated.containers[c.name];
    return a !== undefined && !resourcesEqual(c.resources, a);
  };
  const podLevelDiffers = !resourcesEqual(pod.spec.resources, allocated.podLevel);
  if (!podLevelDiffers && !resizableContainers(pod).some(differs)) {
    return { pod, updated: false };
  }
  const copy = structuredClone(pod);
  for (const c of resizableContainers(copy)) {
    const a = allocated.containers[c.name];
    if (a !== undefined && !resourcesEqual(c.resources, a)) c.resources = structuredClone(a);
  }
  if (podLevelDiffers) {
    if (allocated.podLevel) copy.spec.resources = structuredClone(allocated.podLevel);
    else delete copy.spec.resources;
  }
  return { pod: copy, updated: true };
}

/**
 * The resize rules upstream's `podResizesAdmitHandler` adds in front of the
 * admit handlers. Of its checks only the pod-level one can apply here:
 * denolet does not resize pod-level resources (`spec.resources`), which
 * needs the pod cgroup, so such a resize is Infeasible with upstream's own
 * message for a node that cannot. (Swap, memory-backed volume sizes and the
 * static CPU and memory managers, its other checks, are not features of this
 * node.)
 */
function resizeAdmitRule(desired: Pod, allocated: Pod): AdmitVerdict {
  if (!resourcesEqual(desired.spec.resources, allocated.spec.resources)) {
    return {
      admit: false,
      reason: REASON_INFEASIBLE,
      message: "In-place pod-level resources resize is not supported on this node",
    };
  }
  return { admit: true };
}

/**
 * An event message as upstream's events/resize.go writes it: the prefix,
 * then the containers' resources from the spec and the generation as Go's
 * JSON (`Pod resize started: {"containers":[…],"generation":2}`).
 * @param prefix e.g. "Pod resize started"
 * @param pod the pod whose spec resources are summarised
 * @param generation the generation the event is about
 * @param error an error message, or ""
 * @returns the message
 */
export function resizeEventMessage(
  prefix: string,
  pod: Pod,
  generation: number,
  error = "",
): string {
  const summary = (cs: readonly Container[]) =>
    cs.map((c) => {
      const r: string[] = [];
      if (c.resources?.limits && Object.keys(c.resources.limits).length > 0) {
        r.push(`"limits":${goJson(sortedList(c.resources.limits))}`);
      }
      if (c.resources?.requests && Object.keys(c.resources.requests).length > 0) {
        r.push(`"requests":${goJson(sortedList(c.resources.requests))}`);
      }
      return `{"name":${goJson(c.name)},"resources":{${r.join(",")}}}`;
    }).join(",");
  const parts: string[] = [];
  const inits = pod.spec.initContainers ?? [];
  if (inits.length > 0) parts.push(`"initContainers":[${summary(inits)}]`);
  if (pod.spec.containers.length > 0) parts.push(`"containers":[${summary(pod.spec.containers)}]`);
  parts.push(`"generation":${generation}`);
  if (error) parts.push(`"error":${goJson(error)}`);
  return `${prefix}: {${parts.join(",")}}`;
}

function sortedList(list: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.keys(list).sort().map((k) => [k, String(list[k])]),
  );
}

/** The lookups the manager needs from the kubelet for retries. */
export interface PendingResizeHooks {
  /** The desired pod by UID, if still known. */
  podByUid(uid: string): Pod | undefined;
  /** The active pods (admitted, not terminated), as their sources have them. */
  activePods(): Pod[];
  /** Wakes the pod's worker: an allocation or a condition changed. */
  syncPod(pod: Pod): void;
}

/**
 * Tracks each pod's allocated resources and decides resize requests.
 *
 * Contract: callers are the sync loop's handlers (one at a time); every
 * method is synchronous and never throws for a pod that does not fit.
 */
export class AllocationManager {
  /** PodResizePending and PodResizeInProgress, per pod. */
  readonly conditions: PodResizeConditions;
  readonly #state: ResourceState;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #admit: AdmitFunc;
  readonly #events: EventRecorder;
  #pending: string[] = [];
  #nextRetry: number;

  /** @param opts checkpoint, clock, logger, admit handlers and events */
  constructor(opts: AllocationManagerOptions) {
    this.#state = opts.state;
    this.#clock = opts.clock;
    this.#log = opts.logger.with({ component: "allocation" });
    this.#admit = opts.admit;
    this.#events = opts.events ?? discardEvents;
    this.conditions = new PodResizeConditions(opts.clock);
    this.#nextRetry = opts.clock.now() + INITIAL_RETRY_DELAY_MS;
  }

  /**
   * The pod as allocated (upstream `UpdatePodFromAllocation`).
   * @param pod the pod as its source has it
   * @returns the allocated pod and whether it differs from `pod`
   */
  allocatedPod(pod: Pod): { pod: Pod; updated: boolean } {
    return podFromAllocation(pod, this.#state.getPod(pod.metadata.uid!));
  }

  /**
   * Whether the pod was ever allocated resources (it was admitted).
   * @param uid the pod UID
   */
  hasAllocation(uid: string): boolean {
    return this.#state.getPod(uid) !== undefined;
  }

  /**
   * Admits a new pod (upstream `AddPod`): after a restart its checkpointed
   * allocation, not its spec, is what is admitted; an admitted pod's
   * resources are checkpointed.
   * @param pod the pod as its source has it
   * @param activePods the other pods admitted and still active
   * @returns the verdict
   */
  addPod(pod: Pod, activePods: readonly Pod[]): AdmitVerdict {
    const allocated = this.allocatedPod(pod).pod;
    const verdict = this.#admit(allocated, this.#allocatedOthers(pod, activePods));
    if (verdict.admit) this.#state.setPod(pod.metadata.uid!, resourceInfoForPod(allocated));
    return verdict;
  }

  /**
   * Reacts to an updated pod (upstream HandlePodUpdates): a resize request
   * is queued and tried at once; a request reverted while pending clears its
   * condition.
   * @param pod the pod as its source now has it
   * @param hooks lookups for the retry
   */
  podUpdated(pod: Pod, hooks: PendingResizeHooks): void {
    const uid = pod.metadata.uid!;
    if (!this.hasAllocation(uid)) return;
    if (this.allocatedPod(pod).updated) {
      if (!this.#pending.includes(uid)) this.#pending.push(uid);
      this.#sortPending(hooks);
      this.retryPendingResizes(hooks);
      return;
    }
    // Reverted while it waited: nothing to resize any more.
    this.conditions.clearPending(uid);
  }

  /**
   * Tries every pending resize again (upstream `RetryPendingResizes`): after
   * an update, a pod's removal, and every {@link RETRY_DELAY_MS}. A resize
   * that is still Deferred stays queued; an Infeasible one leaves the queue.
   * @param hooks lookups and the sync trigger
   */
  retryPendingResizes(hooks: PendingResizeHooks): void {
    this.#nextRetry = this.#clock.now() + RETRY_DELAY_MS;
    const still: string[] = [];
    for (const uid of this.#pending) {
      const pod = hooks.podByUid(uid);
      if (!pod) continue;
      const before = JSON.stringify(this.conditions.list(uid).map((c) => [c.reason, c.type]));
      const allocated = this.#handleResize(pod, hooks.activePods());
      if (this.conditions.isPending(uid, REASON_DEFERRED)) still.push(uid);
      const after = JSON.stringify(this.conditions.list(uid).map((c) => [c.reason, c.type]));
      if (allocated || before !== after) hooks.syncPod(pod);
    }
    this.#pending = still;
  }

  /**
   * The periodic retry, for the housekeeping tick: retries when due.
   * @param hooks lookups and the sync trigger
   */
  retryIfDue(hooks: PendingResizeHooks): void {
    if (this.#pending.length === 0) return;
    if (this.#clock.now() >= this.#nextRetry) this.retryPendingResizes(hooks);
  }

  /** The UIDs of pods whose resize waits. */
  pendingResizes(): readonly string[] {
    return this.#pending;
  }

  /**
   * Forgets a pod that is gone (upstream `RemovePod`).
   * @param uid the pod UID
   */
  removePod(uid: string): void {
    this.#state.removePod(uid);
    this.conditions.remove(uid);
    this.#pending = this.#pending.filter((p) => p !== uid);
  }

  /**
   * Forgets every pod not in `keep` (upstream `RemoveOrphanedPods`).
   * @param keep the UIDs still known
   */
  removeOrphans(keep: ReadonlySet<string>): void {
    this.#state.removeOrphans(keep);
    for (const uid of this.#pending) if (!keep.has(uid)) this.conditions.remove(uid);
    this.#pending = this.#pending.filter((p) => keep.has(p));
  }

  /**
   * Upstream `handlePodResourcesResize`: allocates the desired resources if
   * they fit, else sets PodResizePending.
   * @returns true when a new allocation was checkpointed
   */
  #handleResize(pod: Pod, activePods: readonly Pod[]): boolean {
    const uid = pod.metadata.uid!;
    const { pod: allocated, updated } = this.allocatedPod(pod);
    if (!updated) {
      this.conditions.clearPending(uid);
      return false;
    }
    const generation = pod.metadata.generation ?? 0;
    let verdict = resizeAdmitRule(pod, allocated);
    if (verdict.admit) {
      verdict = this.#admit(pod, this.#allocatedOthers(pod, activePods));
    }
    if (verdict.admit) {
      this.#state.setPod(uid, resourceInfoForPod(pod));
      this.conditions.clearPending(uid);
      this.conditions.clearInProgress(uid);
      this.conditions.setInProgress(uid, "", "", generation);
      this.#log.info("Pod resize allocated", { pod: formatPod(pod), podUID: uid, generation });
      this.#events.event(
        podReference(pod),
        "Normal",
        EventReason.resizeStarted,
        resizeEventMessage("Pod resize started", pod, generation),
      );
      return true;
    }
    if (this.conditions.setPending(uid, verdict.reason, verdict.message, generation)) {
      const infeasible = this.conditions.isPending(uid, REASON_INFEASIBLE);
      const reason = infeasible ? REASON_INFEASIBLE : REASON_DEFERRED;
      this.#log.info("Pod resize pending", {
        pod: formatPod(pod),
        podUID: uid,
        reason,
        message: verdict.message,
      });
      this.#events.event(
        podReference(pod),
        "Warning",
        infeasible ? EventReason.resizeInfeasible : EventReason.resizeDeferred,
        resizeEventMessage(`Pod resize ${reason}`, pod, generation, verdict.message),
      );
    }
    return false;
  }

  /**
   * Orders the pending resizes as upstream's `sortPendingResizes`: resizes
   * that do not increase requests first, then by pod priority (highest
   * first), Guaranteed before other QoS classes, and the longest deferred
   * first; pods no longer known leave the queue.
   */
  #sortPending(hooks: PendingResizeHooks): void {
    const pods = this.#pending.map((uid) => hooks.podByUid(uid)).filter((p): p is Pod =>
      p !== undefined
    );
    const key = (pod: Pod) => {
      const uid = pod.metadata.uid!;
      const since = this.conditions.list(uid).find((c) => c.type === "PodResizePending")
        ?.lastTransitionTime;
      return {
        increasing: this.#increasesRequests(pod),
        priority: pod.spec.priority ?? 0,
        guaranteed: podQOSClass(pod) === "Guaranteed",
        since: since ? Date.parse(since) : Number.POSITIVE_INFINITY,
      };
    };
    const keys = new Map(pods.map((p) => [p.metadata.uid!, key(p)]));
    pods.sort((a, b) => {
      const x = keys.get(a.metadata.uid!)!;
      const y = keys.get(b.metadata.uid!)!;
      if (x.increasing !== y.increasing) return x.increasing ? 1 : -1;
      if (x.priority !== y.priority) return y.priority - x.priority;
      if (x.guaranteed !== y.guaranteed) return x.guaranteed ? -1 : 1;
      return x.since - y.since;
    });
    this.#pending = pods.map((p) => p.metadata.uid!);
  }

  /** Whether the resize raises the pod's cpu or memory requests (upstream `isResizeIncreasingRequests`). */
  #increasesRequests(pod: Pod): boolean {
    const { pod: allocated, updated } = this.allocatedPod(pod);
    if (!updated) return false;
    const before = podRequests(allocated);
    const after = podRequests(pod);
    return ["cpu", "memory"].some((r) => (after.get(r) ?? 0) > (before.get(r) ?? 0));
  }

  /** The other active pods that have an allocation, as allocated (upstream `getAllocatedPods`). */
  #allocatedOthers(pod: Pod, activePods: readonly Pod[]): Pod[] {
    const uid = pod.metadata.uid;
    return activePods
      .filter((p) => p.metadata.uid !== uid && this.hasAllocation(p.metadata.uid!))
      .map((p) => this.allocatedPod(p).pod);
  }
}
