/**
 * The kubelet's core: the sync loop's handlers, which turn pod updates, PLEG
 * events, probe results and periodic ticks into work for the pod workers,
 * and the sync functions the workers call (sync, terminating, terminated,
 * terminating runtime pod). Which input reaches which handler is in
 * lib/agent/sync_loop.ts.
 *
 * ```
 *  config mux ──handlePodUpdate────┐
 *  PLEG ───────handlePlegEvent─────┤
 *  probes ─────handleProbeResult───┼──► pod workers ──► syncPod / syncTerminatingPod / syncTerminatedPod
 *  every 1s ───handleSyncTick──────┤                      │
 *  every 2s ───handleHousekeeping──┘                      ▼
 *                                       runtime manager (CRI) + status manager
 * ```
 *
 * @module
 */

import { podKey, type PodName } from "../api/pod.ts";
import { podQOSClass } from "../api/qos.ts";
import type { Pod, PodStatus } from "../api/types.ts";
import { EventMessage, EventReason, type EventRecorder, podReference } from "../events/mod.ts";
import type { PodUpdate } from "../config/mod.ts";
import type { PodCgroupManager } from "../cm/mod.ts";
import type { GenericPleg, PodLifecycleEvent } from "../pleg/mod.ts";
import { type SyncKind, type SyncTracer, tracedPod, type TriggerSource } from "../trace/mod.ts";
import {
  NETWORK_NOT_READY,
  PodWorkers,
  type RuntimePodSyncContext,
  type SyncContext,
  type SyncResult,
  type UpdateType,
} from "../pod_workers/mod.ts";
import {
  isHookStep,
  type KubeRuntimeManager,
  RESIZE_ACTION,
  type RuntimePodStatus,
  type SyncPodResult,
  type SyncStep,
} from "../kuberuntime/mod.ts";
import {
  generatePodStatus,
  isTerminalPhase,
  podIsTerminal,
  type StatusManager,
} from "../status/mod.ts";
import type { Clock } from "../util/clock.ts";
import { errorText, type Logger } from "../util/log.ts";
import type { KubeletMetrics } from "../metrics/mod.ts";
import type { ProbeManager, ProbeResultUpdate } from "../prober/mod.ts";
import { canAdmitPod, type PodAdmitHandler } from "../admission/mod.ts";
import { AllocationManager, type PendingResizeHooks, ResourceState } from "../allocation/mod.ts";
import { reportResize } from "./resize.ts";
import { PodManager } from "./pod_manager.ts";
import { SyncLoop } from "./sync_loop.ts";
import { cleanupOrphanedPodDirs } from "../volumes/mod.ts";
import { PodStartTracker, runningCounts } from "./_observe.ts";
import { DEADLINE_EXCEEDED, pastActiveDeadline } from "./active_deadline.ts";

/** What the kubelet needs; built by main.ts. */
export interface KubeletDeps {
  runtime: KubeRuntimeManager;
  /** The sync trace (lib/trace): why each sync ran and what it did; off when absent. */
  trace?: SyncTracer;
  pleg: GenericPleg;
  clock: Clock;
  logger: Logger;
  nodeName: string;
  /** The node IP reported as hostIP ("" when unknown). */
  hostIP: string;
  /**
   * The pods' statuses: set after every sync, read back as the previous
   * status of the next one, served by `/pods` and written to the apiserver
   * by its sinks.
   */
  statuses: StatusManager;
  /** Resync period of a pod that synced fine (syncFrequency, default 1m). */
  syncFrequencyMs: number;
  /** Liveness, readiness and startup probes; optional in tests. */
  probes?: ProbeManager;
  /** The agent's own metrics (`/metrics`); optional in tests. */
  metrics?: KubeletMetrics;
  /** Told which pods run which containers after each housekeeping pass (stats). */
  onPodsObserved?: (pods: { pod: Pod; runtime: RuntimePodStatus }[]) => void;
  /** Aligns the sync and housekeeping ticks to this grid (lib/util/tick.ts); 0 disables. */
  tickGridMs?: number;
  /** Pod events the kubelet itself records (admission, NetworkNotReady, DeadlineExceeded); dropped when unset. */
  events?: EventRecorder;
  /**
   * Why the runtime's network is not ready ("container runtime network not
   * ready: NetworkReady=false …"); undefined when it is. Pods on the pod
   * network wait while it is set; host-network pods run.
   */
  networkProblem?: () => string | undefined;
  /**
   * Checks a new pod must pass before it is started, in upstream's order
   * (lib/admission); none by default.
   */
  admitHandlers?: readonly PodAdmitHandler[];
  /**
   * The QoS and pod cgroups (lib/cm): a pod's cgroup is made before its
   * sandbox and removed once it is terminated; none when unset.
   */
  podCgroups?: PodCgroupManager;
  /**
   * The allocation checkpoint (in-place resize; `denolet_allocated_pods_state` under
   * the root dir); in memory when unset.
   */
  allocationState?: ResourceState;
  /** `--root-dir`: housekeeping removes the dirs of pods nobody knows under it; none when unset. */
  rootDir?: string;
}

/** What {@link Kubelet.start} runs on: the pod sources' output. */
export interface KubeletSources {
  /** The config mux's updates, read until {@link Kubelet.stop}. */
  updates: AsyncIterable<PodUpdate>;
  /** True once every pod source has delivered its first set; orphans are cleaned only then. */
  seenAllSources: () => boolean;
  /** Called every housekeeping pass with the desired pods (apiserver mode: mirror pods). */
  onHousekeeping?: (pods: Pod[]) => void;
}

function emptyRuntimeStatus(pod: Pod): RuntimePodStatus {
  return {
    uid: pod.metadata.uid!,
    name: pod.metadata.name ?? "",
    namespace: pod.metadata.namespace ?? "default",
    sandboxes: [],
    containers: [],
  };
}

/** Oldest first by creationTimestamp (upstream PodsByCreationTime); RFC 3339 sorts as text. */
function byCreationTime(a: Pod, b: Pod): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/**
 * True when a sync's steps changed what the runtime reports: a container
 * start, or an in-place resize (upstream asks for a reinspection after one),
 * that succeeded.
 */
function changedContainers(steps: readonly SyncStep[]): boolean {
  return steps.some((s) =>
    (s.action === "StartContainer" || s.action === RESIZE_ACTION) && s.error === undefined
  );
}

/**
 * Whether a pod has a running container or a ready sandbox: what upstream's
 * runtime cache lists as running pods.
 */
function hasRunning(pod: RuntimePodStatus): boolean {
  return pod.containers.some((c) => c.state === "running") ||
    pod.sandboxes.some((s) => s.state === "ready");
}

/**
 * Upstream's guard after a kill (SyncTerminatingPod): a runtime that reports a
 * container still running after a successful stop is violating CRI, and the
 * sync fails rather than let the pod count as stopped.
 * @param pod the pod, for the message
 * @param status what the runtime reports after the kill
 * @throws {Error} naming the running containers
 */
function throwIfStillRunning(pod: Pod | PodName, status: RuntimePodStatus): void {
  const running = status.containers.filter((c) => c.state === "running");
  if (running.length === 0) return;
  throw new Error(
    `detected running containers of pod "${
      podKey(pod)
    }" after a successful KillPod, CRI violation: ${
      running.map((c) => `${c.name} (${c.id.slice(0, 13)})`).join(", ")
    }`,
  );
}

/** Upstream's periodicQOSCgroupUpdateInterval. */
const QOS_UPDATE_INTERVAL_MS = 60_000;

/** A stand-in spec for a pod the runtime runs but no source wants (an orphan). */
function orphanPod(running: RuntimePodStatus): Pod {
  return {
    metadata: { name: running.name, namespace: running.namespace, uid: running.uid },
    spec: { containers: [] },
  };
}

/**
 * What a pod's last sync leaves for the status set before its next one: the containers
 * in backoff and their errors (upstream's reasonCache).
 */
type LastSync = Pick<SyncPodResult, "actions" | "lastErrors">;

/** The node agent's sync loop and pod lifecycle. */
export class Kubelet {
  readonly podManager = new PodManager();
  readonly statuses: StatusManager;
  readonly podWorkers: PodWorkers;
  /** What each pod is allocated; resize requests and their conditions. */
  readonly allocation: AllocationManager;
  #deps: KubeletDeps;
  #sources: KubeletSources | undefined;
  #log: Logger;
  #loop: SyncLoop;
  #podStarts = new PodStartTracker();
  /** Pods deleted through the API whose resources are gone (see canBeDeleted). */
  #reclaimed = new Set<string>();
  /** Pods admission rejected: Failed before they started, never counted as active. */
  #rejected = new Set<string>();
  /** Each pod's {@link LastSync}. */
  #lastSync = new Map<string, LastSync>();
  /** When the QoS cgroups were last updated (clock ms). */
  #qosUpdatedAt = 0;
  /** The orphaned pod dirs pass in flight; one at a time. */
  #podDirsCleanup: Promise<void> | undefined;

  constructor(deps: KubeletDeps) {
    this.#deps = deps;
    this.#log = deps.logger;
    this.statuses = deps.statuses;
    this.allocation = new AllocationManager({
      state: deps.allocationState ?? new ResourceState(),
      clock: deps.clock,
      logger: deps.logger,
      admit: (pod, others) => canAdmitPod(deps.admitHandlers ?? [], pod, others),
      ...(deps.events ? { events: deps.events } : {}),
    });
    this.#loop = new SyncLoop({
      clock: deps.clock,
      logger: deps.logger,
      ...(deps.tickGridMs !== undefined ? { tickGridMs: deps.tickGridMs } : {}),
      handlers: {
        config: (update) => this.handlePodUpdate(update),
        pleg: (event) => this.handlePlegEvent(event),
        sync: () => this.handleSyncTick(),
        housekeeping: () => this.handleHousekeeping(),
        probe: (update) => this.handleProbeResult(update),
      },
    });
    this.podWorkers = new PodWorkers({
      syncPod: (ctx) => this.#timed(ctx, "sync", () => this.#syncPod(ctx)),
      syncTerminatingPod: (ctx) =>
        this.#timed(ctx, "terminating", () => this.#syncTerminatingPod(ctx)),
      syncTerminatedPod: (ctx) =>
        this.#timed(ctx, "terminated", () => this.#syncTerminatedPod(ctx)),
      syncTerminatingRuntimePod: (ctx) =>
        this.#timed(
          { ...ctx, pod: orphanPod(ctx.runningPod) },
          "runtime-kill",
          () => this.#syncTerminatingRuntimePod(ctx),
        ),
      clock: deps.clock,
      logger: deps.logger,
      resyncIntervalMs: deps.syncFrequencyMs,
      podStatus: (uid, minTime, signal) => deps.pleg.waitNewerThan(uid, minTime, signal),
    });
  }

  /**
   * Starts PLEG and the sync loop over the sources' updates, PLEG's events,
   * the probe results and the periodic ticks (see lib/agent/sync_loop.ts).
   * @param sources the pod sources' updates and readiness
   */
  start(sources: KubeletSources): void {
    this.#sources = sources;
    this.#deps.pleg.start();
    const probes = this.#deps.probes;
    this.#loop.start({
      updates: sources.updates,
      plegEvents: this.#deps.pleg.events(),
      ...(probes ? { probeResults: (listener) => probes.onResult(listener) } : {}),
    });
  }

  /** Stops the loop and waits for in-flight syncs; pods keep running. */
  async stop(): Promise<void> {
    this.#loop.stop();
    this.#deps.probes?.stop();
    await this.#deps.pleg.stop();
    this.podWorkers.stop();
    await this.podWorkers.stopped();
    await this.#podDirsCleanup;
  }

  /** Healthy while the loop has run within the last few ticks; undefined when fine. */
  syncLoopHealth(): string | undefined {
    return this.#loop.health();
  }

  /** True once the loop runs and every pod source has delivered its first set. */
  sourcesReady(): boolean {
    return this.#sources?.seenAllSources() ?? false;
  }

  /** Config mux output: ADD/UPDATE/REMOVE/RECONCILE/DELETE for pods of one source. */
  handlePodUpdate(update: PodUpdate): void {
    // As upstream, new pods are admitted oldest first, each against those admitted before it.
    const pods = update.op === "ADD" ? [...update.pods].sort(byCreationTime) : update.pods;
    for (const pod of pods) {
      const uid = pod.metadata.uid!;
      this.#log.info(`SyncLoop ${update.op}`, {
        source: update.source,
        pod: podKey(pod),
        podUID: uid,
      });
      this.#trigger(pod, "config", `${update.op} from source ${update.source}`);
      switch (update.op) {
        case "ADD": {
          this.podManager.set(pod);
          // A rejected pod gets no worker, as upstream: if the runtime runs it (admitted
          // before a restart), housekeeping stops it as it stops orphans.
          if (this.#rejectAtAdmission(pod)) break;
          this.#deps.probes?.addPod(pod);
          this.#podStarts.seen(uid, this.#deps.clock.now());
          this.podWorkers.updatePod({ type: "create", pod, startTime: this.#deps.clock.now() });
          break;
        }
        case "UPDATE":
        case "RECONCILE":
          this.podManager.set(pod);
          if (this.#rejected.has(uid)) break;
          this.#deps.probes?.addPod(pod);
          // A changed spec may be a resize request (the pods/resize subresource).
          this.allocation.podUpdated(pod, this.#resizeHooks);
          this.podWorkers.updatePod({ type: "update", pod });
          break;
        case "DELETE":
          // Graceful deletion (upstream treats DELETE as UPDATE): the pod stays
          // known until its API object goes; its deletionTimestamp makes the
          // worker terminate it within deletionGracePeriodSeconds.
          this.podManager.set(pod);
          if (this.#rejected.has(uid)) {
            // It has no worker: its API object may go once nothing of it runs.
            this.#reclaimed.add(uid);
            this.statuses.terminatePod(pod);
            break;
          }
          this.podWorkers.updatePod({ type: "update", pod });
          break;
        case "REMOVE":
          this.#rejected.delete(uid);
          this.#lastSync.delete(uid);
          this.podManager.delete(uid);
          this.#deps.probes?.removePod(uid);
          this.#podStarts.forget(uid);
          this.podWorkers.updatePod({ type: "kill", pod });
          // Its resources are free: a deferred resize may fit now.
          this.allocation.removePod(uid);
          this.allocation.retryPendingResizes(this.#resizeHooks);
          break;
      }
    }
  }

  /** What the allocation manager needs to retry pending resizes. */
  readonly #resizeHooks: PendingResizeHooks = {
    podByUid: (uid) => this.podManager.get(uid),
    activePods: () => this.podManager.pods().filter((p) => this.#isActive(p)),
    syncPod: (pod) => this.podWorkers.updatePod({ type: "update", pod }),
  };

  /**
   * A pod refused at admission, as upstream's rejectPod: a Warning event with
   * the handler's reason and message, and the status Failed with "Pod was
   * rejected: <message>". No worker ever starts it; other pods are untouched.
   */
  #rejectPod(pod: Pod, reason: string, message: string): void {
    const uid = pod.metadata.uid!;
    this.#rejected.add(uid);
    this.#log.warn("Pod admission refused", { pod: podKey(pod), podUID: uid, reason, message });
    this.#deps.events?.event(podReference(pod), "Warning", reason, message);
    this.statuses.setPodStatus(pod, {
      phase: "Failed",
      reason,
      message: `Pod was rejected: ${message}`,
      qosClass: podQOSClass(pod),
      // As every status upstream's status manager sets (PodObservedGenerationTracking).
      ...(pod.metadata.generation !== undefined
        ? { observedGeneration: pod.metadata.generation }
        : {}),
    });
  }

  /** PLEG output: wake the pod's worker (upstream ignores ContainerRemoved). */
  handlePlegEvent(event: PodLifecycleEvent): void {
    if (event.type === "ContainerRemoved" || this.#rejected.has(event.podUID)) return;
    const pod = this.podManager.get(event.podUID);
    if (!pod) return;
    this.#trigger(pod, "pleg", `${event.type} ${event.data.slice(0, 13)}`.trim());
    this.podWorkers.updatePod({ type: "sync", pod });
  }

  /**
   * Every second: resync pods whose resync (or retry after an error) is due,
   * and running pods past their active deadline (upstream getPodsToSync with
   * its PodSyncLoopHandlers).
   */
  handleSyncTick(): void {
    const due = new Set(this.podWorkers.podsDueForSync());
    const now = this.#deps.clock.now();
    for (const pod of this.podManager.pods()) {
      const uid = pod.metadata.uid!;
      if (due.has(uid) || this.podWorkers.podState(uid) !== "sync") continue;
      if (!pastActiveDeadline(pod, this.#statusOf(pod), now)) continue;
      this.#trigger(pod, "deadline", "past activeDeadlineSeconds");
      due.add(uid);
    }
    for (const uid of due) {
      const pod = this.podManager.get(uid);
      if (pod) this.podWorkers.updatePod({ type: "sync", pod });
    }
  }

  /**
   * The status manager's status of a pod, else the API object's (upstream's
   * podStatusProvider): not a copy, for reading only.
   */
  #statusOf(pod: Pod): Readonly<PodStatus> | undefined {
    return this.statuses.versionedStatus(pod.metadata.uid!)?.status ?? pod.status;
  }

  /**
   * A changed probe result wakes the pod's worker (upstream's liveness,
   * readiness and startup channels).
   */
  handleProbeResult(update: ProbeResultUpdate): void {
    const pod = this.podManager.get(update.podUID);
    if (!pod) return;
    this.#trigger(
      pod,
      "probe",
      `${update.probeType} probe of ${update.container}: ${
        update.previous ?? "none"
      } → ${update.result}`,
    );
    this.podWorkers.updatePod({ type: "sync", pod });
  }

  /**
   * Every 2s, once all sources have been seen: kill pods the runtime runs that
   * no source wants (manifest removed while we were down), and forget
   * workers of pods no longer desired.
   */
  handleHousekeeping(): void {
    try {
      this.#observe();
      if (!this.sourcesReady()) return;
      const desired = this.podManager.uids();
      this.statuses.removeOrphanedStatuses(desired);
      this.#sources?.onHousekeeping?.(this.podManager.pods());
      const workers = this.podWorkers.syncKnownPods(desired);
      this.#deps.probes?.cleanupPods(desired);
      this.allocation.removeOrphans(desired);
      this.#deps.runtime.removeOrphanedActuated(desired);
      this.#deps.trace?.retain((uid) => desired.has(uid) || workers.has(uid));
      this.allocation.retryIfDue(this.#resizeHooks);
      // Forget CrashLoopBackOff entries nobody has used for 2× the max delay (upstream's GC).
      this.#deps.runtime.backoff.gc(this.#deps.clock.now());
      for (const running of this.#deps.pleg.runningPods()) {
        // As upstream's runtime cache (GetPods without exited ones): a pod with nothing
        // running is no orphan to stop; its exited leftovers are the container GC's.
        if (!hasRunning(running)) continue;
        if (desired.has(running.uid) && !this.#rejected.has(running.uid)) continue;
        if (this.podWorkers.podState(running.uid) !== undefined) continue;
        this.#log.info("Cleaning up orphaned pod", {
          pod: podKey(running),
          podUID: running.uid,
        });
        this.#trigger(orphanPod(running), "kill", "orphaned pod: no source wants it");
        this.podWorkers.updatePod({ type: "kill", pod: orphanPod(running), runningPod: running });
      }
      this.#cleanupOrphanedPodCgroups(workers);
      this.#cleanupOrphanedPodDirs();
      if (this.#deps.clock.monotonic() - this.#qosUpdatedAt >= QOS_UPDATE_INTERVAL_MS) {
        this.#updateQOSCgroups();
      }
    } catch (err) {
      this.#log.error("Housekeeping failed", err);
    }
  }

  /**
   * Removes the cgroups of pods no worker runs or stops and the runtime does
   * not run (upstream cleanupOrphanedPodCgroups, from HandlePodCleanups).
   */
  #cleanupOrphanedPodCgroups(workers: ReadonlyMap<string, { state: string }>): void {
    const cgroups = this.#deps.podCgroups;
    if (!cgroups) return;
    const possiblyRunning = new Set<string>();
    for (const [uid, w] of workers) if (w.state !== "terminated") possiblyRunning.add(uid);
    for (const running of this.#deps.pleg.runningPods()) possiblyRunning.add(running.uid);
    cgroups.cleanupOrphans(possiblyRunning);
  }

  /**
   * Removes the dirs of pods that are not desired, not known to a worker and
   * not in the runtime (upstream cleanupOrphanedPodDirs, from HandlePodCleanups);
   * runs in the background, one pass at a time.
   */
  #cleanupOrphanedPodDirs(): void {
    const rootDir = this.#deps.rootDir;
    if (rootDir === undefined || this.#podDirsCleanup) return;
    const isKnown = (uid: string) =>
      this.podManager.get(uid) !== undefined || this.podWorkers.podState(uid) !== undefined ||
      this.#deps.pleg.runningPods().some((p) => p.uid === uid);
    this.#podDirsCleanup = cleanupOrphanedPodDirs({ rootDir, isKnown, logger: this.#log })
      .then(
        () => {},
        (err) => this.#log.error("Failed cleaning up orphaned pod directories", err),
      )
      .finally(() => this.#podDirsCleanup = undefined);
  }

  /**
   * The QoS cgroups' cpu shares from the active pods (upstream UpdateQOSCgroups:
   * after a kill, before a pod cgroup is made, and every minute).
   */
  #updateQOSCgroups(): void {
    const cgroups = this.#deps.podCgroups;
    if (!cgroups) return;
    this.#qosUpdatedAt = this.#deps.clock.monotonic();
    try {
      cgroups.updateQOSCgroups(this.#activePods());
    } catch (err) {
      this.#log.error("Failed to update QoS cgroups", err);
    }
  }

  /** The pods that count against the node (upstream GetActivePods). */
  #activePods(): Pod[] {
    return this.podManager.pods().filter((p) => this.#isActive(p));
  }

  /**
   * Admits a new pod (upstream HandlePodAdditions' canAdmitPod and
   * rejectPod): a pod already terminal or being terminated is not checked;
   * a pod that does not fit goes Failed with the reason, and a Warning event.
   * @param pod the new pod
   * @returns true when the pod was rejected
   */
  #rejectAtAdmission(pod: Pod): boolean {
    const uid = pod.metadata.uid!;
    if (isTerminalPhase(pod.status?.phase)) return false;
    const state = this.podWorkers.podState(uid);
    if (state === "terminating" || state === "terminated") return false;
    const others = this.podManager.pods().filter((p) =>
      p.metadata.uid !== uid && this.#isActive(p)
    );
    // Admission allocates the pod its resources (upstream's allocation manager AddPod).
    const verdict = this.allocation.addPod(pod, others);
    if (verdict.admit) return false;
    this.#rejectPod(pod, verdict.reason, verdict.message);
    return true;
  }

  /**
   * Whether a pod counts against the node (upstream filterOutInactivePods):
   * not rejected, not known terminated, and not terminal unless it is still
   * being terminated.
   */
  #isActive(pod: Pod): boolean {
    const uid = pod.metadata.uid!;
    if (this.#rejected.has(uid)) return false;
    const state = this.podWorkers.podState(uid);
    if (state === "terminated") return false;
    const phase = this.statuses.versionedStatus(uid)?.status.phase ?? pod.status?.phase;
    return !isTerminalPhase(phase) || state === "terminating";
  }

  /** Pods with their latest status, for `/pods`. */
  podsWithStatus(): Pod[] {
    return this.podManager.pods().map((pod) => {
      const status = this.statuses.getPodStatus(pod.metadata.uid!);
      return status ? { ...pod, status } : pod;
    });
  }

  /** Notes for the sync trace why a pod's worker is woken. */
  #trigger(pod: Pod, source: TriggerSource, detail: string): void {
    this.#deps.trace?.noteTrigger(tracedPod(pod), source, detail);
  }

  /**
   * Times a worker's sync for `kubelet_pod_worker_duration_seconds` and, with
   * the sync trace on, records it.
   */
  async #timed<T>(
    ctx: { updateType: UpdateType; pod: Pod; evicted?: boolean },
    kind: SyncKind,
    fn: () => Promise<T>,
  ): Promise<T> {
    const start = this.#deps.clock.now();
    const trace = this.#deps.trace;
    try {
      if (!trace) return await fn();
      if (ctx.evicted) this.#trigger(ctx.pod, "kill", "eviction");
      return await trace.run(tracedPod(ctx.pod), kind, fn);
    } finally {
      this.#deps.metrics?.observePodWorker(ctx.updateType, this.#deps.clock.now() - start);
    }
  }

  /**
   * Relists the runtime, then hands the stats provider what runs now rather than at
   * the last housekeeping: the eviction manager's fresh rounds measure a container
   * started a moment ago.
   */
  async observeNow(): Promise<void> {
    await this.#deps.pleg.relist();
    this.#observe();
  }

  /** Running pod/container gauges and the stats provider's view of what runs. */
  #observe(): void {
    const { pods, containersByState } = runningCounts(this.#deps.pleg.runningPods());
    this.#deps.metrics?.setRunning(pods, containersByState);
    if (this.#deps.onPodsObserved) {
      const observed: { pod: Pod; runtime: RuntimePodStatus }[] = [];
      for (const pod of this.podManager.pods()) {
        const runtime = this.#deps.pleg.getPodStatus(pod.metadata.uid!).status;
        if (runtime) observed.push({ pod, runtime });
      }
      this.#deps.onPodsObserved(observed);
    }
  }

  async #syncPod(ctx: SyncContext): Promise<SyncResult> {
    const { signal } = ctx;
    // Everything below works on the pod as allocated (in-place resize).
    const pod = this.allocation.allocatedPod(ctx.pod).pod;
    const now = this.#deps.clock.now();
    // The workers hand us a runtime status observed after our previous sync ended.
    const runtime = ctx.podStatus ?? emptyRuntimeStatus(pod);
    const uid = pod.metadata.uid!;
    const probes = this.#deps.probes;
    const evict = pastActiveDeadline(pod, this.#statusOf(pod), now) ? DEADLINE_EXCEEDED : undefined;
    const generate = (
      observed: RuntimePodStatus,
      at: number,
      result?: LastSync,
    ) =>
      generatePodStatus({
        evict,
        pod,
        runtime: observed,
        readiness: probes?.readiness(uid),
        startup: probes?.startup(uid),
        inBackoff: result?.actions.inBackoff ?? [],
        lastErrors: result?.lastErrors,
        previous: this.statuses.getPodStatus(uid),
        hostIP: this.#deps.hostIP,
        actuated: (name) => this.#deps.runtime.actuatedResources(uid, name),
        resizeConditions: this.allocation.conditions.list(uid),
        now: at,
      });
    // As upstream's SyncPod, the status of what the runtime showed (with the last sync's
    // backoffs and errors) is set before the runtime works on the pod: a new pod shows
    // Pending and ContainerCreating, a container that died shows it at once, not after
    // its restart.
    this.statuses.setPodStatus(pod, generate(runtime, now, this.#lastSync.get(uid)));
    if (evict) {
      // As upstream's SyncPod: a pod the status says is Failed is not synced
      // but handed back as terminal, and the pod worker stops its containers.
      this.#deps.events?.event(podReference(pod), "Normal", evict.reason, evict.message);
      this.statuses.setPodStatus(pod, generate(runtime, now));
      return { isTerminal: true };
    }
    // Until the runtime's network is ready only host-network pods start; the
    // workers retry this error after 1s, not the 10s of other failures.
    const network = this.#deps.networkProblem?.();
    if (network !== undefined && !pod.spec.hostNetwork) {
      const message = `${NETWORK_NOT_READY}: ${network}`;
      this.#deps.events?.event(podReference(pod), "Warning", EventReason.networkNotReady, message);
      throw new Error(message);
    }
    // As upstream, the pod's cgroup (with its limits) is made before its sandbox.
    try {
      this.#deps.podCgroups?.ensureExists(pod, () => this.#activePods());
    } catch (err) {
      this.#deps.events?.event(
        podReference(pod),
        "Warning",
        EventReason.failedCreatePodContainer,
        `unable to ensure pod container exists: ${errorText(err)}`,
      );
      throw new Error(
        `failed to ensure that the pod: ${uid} cgroups exist and are correctly applied: ${
          errorText(err)
        }`,
      );
    }
    const result = await this.#deps.runtime.syncPod(
      pod,
      runtime,
      signal,
      probes ? { liveness: probes.liveness(uid), startup: probes.startup(uid) } : undefined,
    );
    this.#lastSync.set(uid, { actions: result.actions, lastErrors: result.lastErrors });
    // A sync that started containers inspects the pod again at once, so their
    // Running state is reported now rather than after the next PLEG relist
    // (what upstream's evented PLEG gets from the runtime's container events);
    // so does one that resized them, so the status shows the new resources in
    // the same write that clears PodResizeInProgress.
    // As upstream's doPodResizeAction: PLEG fetches the pod again at its next
    // relist, or later syncs would read resources from before the resize.
    if (result.steps.some((s) => s.action === RESIZE_ACTION)) {
      this.#deps.pleg.requestReinspect(uid);
    }
    const observed = changedContainers(result.steps)
      ? await this.#deps.runtime.getPodStatus(uid, signal).catch(() => runtime)
      : runtime;
    probes?.updateContainers(pod, observed);
    reportResize(
      { allocation: this.allocation, runtime: this.#deps.runtime, events: this.#deps.events },
      pod,
      observed,
      result.steps,
    );
    const status = generate(observed, observed === runtime ? now : this.#deps.clock.now(), result);
    this.statuses.setPodStatus(pod, status);
    const startedMs = this.#podStarts.started(uid, status, this.#deps.clock.now());
    if (startedMs !== undefined) this.#deps.metrics?.observePodStart(startedMs);
    // A failed hook is reported (as upstream records an event), not a failed sync.
    const failed = result.steps.filter((s) => s.error && !isHookStep(s));
    if (failed.length > 0) {
      const first = failed[0]!;
      throw new Error(
        `sync of pod "${podKey(pod)}" failed at ${first.action} ${first.target}: ${
          first.error!.reason
        }: ${first.error!.message}`,
      );
    }
    return { isTerminal: podIsTerminal(status) };
  }

  async #syncTerminatingPod(ctx: SyncContext): Promise<void> {
    const { signal } = ctx;
    const pod = this.allocation.allocatedPod(ctx.pod).pod;
    const uid = pod.metadata.uid!;
    // A terminal pod has no resize to report (upstream determinePodResizeStatus).
    this.allocation.conditions.clearPending(uid);
    this.allocation.conditions.clearInProgress(uid);
    // A pod being stopped must not be restarted by a failing liveness or startup probe.
    this.#deps.probes?.stopLivenessAndStartup(uid);
    const terminalStatus = (runtime: RuntimePodStatus) => {
      const now = this.#deps.clock.now();
      const status = generatePodStatus({
        pod,
        runtime,
        inBackoff: [],
        previous: this.statuses.getPodStatus(uid),
        hostIP: this.#deps.hostIP,
        actuated: (name) => this.#deps.runtime.actuatedResources(uid, name),
        podIsTerminal: true,
        evict: pastActiveDeadline(pod, this.#statusOf(pod), now) ? DEADLINE_EXCEEDED : undefined,
        now,
      });
      // A kill's override (an eviction's Failed/Evicted), as upstream's podStatusFn.
      ctx.statusFn?.(status);
      return status;
    };
    const running = await this.#deps.runtime.getPodStatus(uid, signal);
    const steps = await this.#deps.runtime.killPod(pod, running, ctx.gracePeriodSeconds, signal);
    this.#updateQOSCgroups();
    // As upstream, a failed kill fails the sync (the worker retries it): the pod is not
    // terminated, so its API object stays, while anything of it may still run.
    const failed = steps.find((s) => s.error && !isHookStep(s));
    if (failed) {
      const err = `${failed.action} ${failed.target}: ${failed.error!.message}`;
      this.#deps.events?.event(
        podReference(pod),
        "Warning",
        EventReason.failedKillPod,
        EventMessage.failedKillPod(err),
      );
      throw new Error(`killing pod "${podKey(pod)}" failed at ${err}`);
    }
    // As upstream, the status is generated once the containers are stopped, while their end
    // states (exit codes, messages) can still be read. Upstream also sets an eviction's status
    // before the kill, but its status manager holds a terminal phase back while containers
    // could run; ours sets it here only.
    const stopped = await this.#deps.runtime.getPodStatus(uid, signal);
    throwIfStillRunning(pod, stopped);
    this.statuses.setPodStatus(pod, terminalStatus(stopped));
  }

  /**
   * The active pods as allocated (upstream getAllocatedPods), for the
   * eviction manager.
   */
  allocatedActivePods(): Pod[] {
    return this.#activePods().map((p) => this.allocation.allocatedPod(p).pod);
  }

  /**
   * An orphan: a pod the runtime runs that no source wants (upstream
   * SyncTerminatingRuntimePod). With no spec, it is stopped by what the
   * runtime holds, and removed at once: it has no terminated phase.
   */
  async #syncTerminatingRuntimePod(ctx: RuntimePodSyncContext): Promise<void> {
    const { runningPod, signal } = ctx;
    const killed = await this.#deps.runtime.killPod(
      undefined,
      runningPod,
      ctx.gracePeriodSeconds,
      signal,
    );
    const failed = killed.find((s) => s.error && !isHookStep(s));
    if (failed) {
      throw new Error(
        `killing orphaned pod "${
          podKey(runningPod)
        }" failed at ${failed.action} ${failed.target}: ${failed.error!.message}`,
      );
    }
    const stopped = await this.#deps.runtime.getPodStatus(runningPod.uid, signal);
    throwIfStillRunning(runningPod, stopped);
    // What cannot be removed now is the container GC's (the pod is unknown to every source).
    const removed = await this.#deps.runtime.removePod(stopped, signal);
    this.#warnLeftToGC(runningPod, removed);
    const fields = { pod: podKey(runningPod), podUID: runningPod.uid };
    if (removed.some((s) => s.error)) this.#log.info("Orphaned pod stopped", fields);
    else this.#log.info("Orphaned pod removed", fields);
  }

  /**
   * A stopped pod. A finished pod that is still desired keeps its exited
   * containers (they are its record, as upstream keeps them until GC) and its
   * pod dir, but its volumes are unmounted and removed, as upstream's
   * syncTerminatedPod waits for (an evicted pod's emptyDir frees its space).
   * A pod deleted or no longer desired also loses its volumes first, then its
   * containers, sandboxes, dirs and logs; what the runtime refuses to remove
   * is left to the container GC and housekeeping, as upstream leaves
   * containers to its GC (podResourcesAreReclaimed does not wait for them).
   */
  async #syncTerminatedPod(ctx: SyncContext): Promise<void> {
    const { pod, signal } = ctx;
    const uid = pod.metadata.uid!;
    const desired = this.podManager.get(uid);
    // A failure is retried by the worker, as upstream's WaitForUnmount fails the sync.
    await this.#deps.runtime.tearDownPodVolumes(uid);
    this.#log.v(3).info("Pod termination cleaned up volume paths", {
      pod: podKey(pod),
      podUID: uid,
    });
    this.#destroyPodCgroup(pod);
    // A finished pod nobody deletes keeps its exited containers as its record.
    if (desired && !desired.metadata.deletionTimestamp) return;
    const running = await this.#deps.runtime.getPodStatus(uid, signal);
    // Stopped by the terminating sync; nothing of it may run once its API object goes.
    throwIfStillRunning(pod, running);
    this.#warnLeftToGC(pod, await this.#deps.runtime.removePod(running, signal));
    if (desired) {
      // Deleted through the API: nothing of it runs and its volumes are gone, so the
      // status manager may now delete the API object; the watch's DELETED removes it.
      this.#reclaimed.add(uid);
      this.statuses.terminatePod(desired);
      this.#log.info("Pod terminated and its resources reclaimed", {
        pod: podKey(pod),
        podUID: uid,
      });
      return;
    }
    this.statuses.deletePodStatus(uid);
    this.#reclaimed.delete(uid);
    this.#lastSync.delete(uid);
    this.#log.info("Pod terminated and removed", { pod: podKey(pod), podUID: uid });
  }

  /**
   * Logs the removal steps the runtime or the filesystem refused: the container GC
   * (containers, sandboxes, logs) and housekeeping (pod dirs) take them up later.
   */
  #warnLeftToGC(pod: Pod | PodName, steps: readonly SyncStep[]): void {
    for (const s of steps) {
      if (!s.error) continue;
      this.#log.warn("Removal failed; left to garbage collection", {
        pod: podKey(pod),
        step: `${s.action} ${s.target}`,
        err: s.error.message,
      });
    }
  }

  /**
   * Removes a terminated pod's cgroup (upstream SyncTerminatedPod's pcm.Destroy);
   * one that cannot be removed yet is left to housekeeping's orphan cleanup.
   */
  #destroyPodCgroup(pod: Pod): void {
    try {
      this.#deps.podCgroups?.destroy(pod);
    } catch (err) {
      this.#log.error("Failed to remove the pod's cgroup", err, {
        pod: podKey(pod),
        podUID: pod.metadata.uid,
      });
    }
  }

  /**
   * True once a pod deleted through the API is terminated: nothing of it runs
   * and its volumes are gone (upstream's podResourcesAreReclaimed). Only then
   * may its API object be deleted; its exited containers and sandboxes need
   * not be removed yet (the container GC takes what removal left). A pod
   * refused at admission never had any.
   * @param uid the pod UID
   */
  canBeDeleted(uid: string): boolean {
    if (!this.#reclaimed.has(uid)) return false;
    if (this.#rejected.has(uid)) {
      // Nothing to reclaim unless it ran before a restart: then once housekeeping stopped it.
      return !this.#deps.pleg.runningPods().some((p) => p.uid === uid && hasRunning(p));
    }
    return this.podWorkers.podState(uid) === "terminated";
  }
}
