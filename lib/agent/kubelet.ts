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

import { podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { PodUpdate } from "../config/mod.ts";
import type { GenericPleg, PodLifecycleEvent } from "../pleg/mod.ts";
import {
  PodWorkers,
  type RuntimePodSyncContext,
  type SyncContext,
  type SyncResult,
  type UpdateType,
} from "../pod_workers/mod.ts";
import {
  isHookStep,
  type KubeRuntimeManager,
  type RuntimePodStatus,
  type SyncPodResult,
  type SyncStep,
} from "../kuberuntime/mod.ts";
import { generatePodStatus, podIsTerminal, type StatusManager } from "../status/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { KubeletMetrics } from "../metrics/mod.ts";
import type { ProbeManager, ProbeResultUpdate } from "../prober/mod.ts";
import { canAdmitPod, type PodAdmitHandler } from "../admission/mod.ts";
import { podQOSClass } from "../api/qos.ts";
import type { EventRecorder } from "../events/types.ts";
import { podReference } from "../events/recorder.ts";
import { PodManager } from "./pod_manager.ts";
import { SyncLoop } from "./sync_loop.ts";
import { PodStartTracker, runningCounts } from "./_observe.ts";

/** What the kubelet needs; built by main.ts. */
export interface KubeletDeps {
  runtime: KubeRuntimeManager;
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
  /** Checks a new pod must pass before it is started (lib/admission); none by default. */
  admitHandlers?: readonly PodAdmitHandler[];
  /** Where a refused pod's Warning event goes; dropped when unset. */
  events?: EventRecorder;
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

/** True when a sync's steps include a container start that succeeded. */
function startedContainers(steps: readonly SyncStep[]): boolean {
  return steps.some((s) => s.action === "StartContainer" && s.error === undefined);
}

/** A stand-in spec for a pod the runtime runs but no source wants (an orphan). */
function orphanPod(running: RuntimePodStatus): Pod {
  return {
    metadata: { name: running.name, namespace: running.namespace, uid: running.uid },
    spec: { containers: [] },
  };
}

/** The node agent's sync loop and pod lifecycle. */
export class Kubelet {
  readonly podManager = new PodManager();
  readonly statuses: StatusManager;
  readonly podWorkers: PodWorkers;
  #deps: KubeletDeps;
  #sources: KubeletSources | undefined;
  #log: Logger;
  #loop: SyncLoop;
  #podStarts = new PodStartTracker();
  /** Pods deleted through the API whose resources are gone (see canBeDeleted). */
  #reclaimed = new Set<string>();
  /** Pods refused at admission: known and Failed, never handed to a worker. */
  #rejected = new Set<string>();

  constructor(deps: KubeletDeps) {
    this.#deps = deps;
    this.#log = deps.logger;
    this.statuses = deps.statuses;
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
      syncPod: (ctx) => this.#timed(ctx, () => this.#syncPod(ctx)),
      syncTerminatingPod: (ctx) => this.#timed(ctx, () => this.#syncTerminatingPod(ctx)),
      syncTerminatedPod: (ctx) => this.#timed(ctx, () => this.#syncTerminatedPod(ctx)),
      syncTerminatingRuntimePod: (ctx) =>
        this.#timed(ctx, () => this.#syncTerminatingRuntimePod(ctx)),
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
    for (const pod of update.pods) {
      const uid = pod.metadata.uid!;
      this.#log.info(`SyncLoop ${update.op}`, {
        source: update.source,
        pod: podKey(pod),
        podUID: uid,
      });
      if (update.op !== "REMOVE" && this.#rejected.has(uid)) {
        // Nothing of a refused pod ever ran: deleting it through the API only
        // needs its final status, after which the API object may go.
        this.podManager.set(pod);
        if (update.op === "DELETE") this.statuses.terminatePod(pod);
        continue;
      }
      switch (update.op) {
        case "ADD": {
          this.podManager.set(pod);
          const verdict = canAdmitPod(this.#deps.admitHandlers ?? [], pod);
          if (!verdict.admit) {
            this.#rejectPod(pod, verdict.reason, verdict.message);
            break;
          }
          this.#deps.probes?.addPod(pod);
          this.#podStarts.seen(uid, this.#deps.clock.now());
          this.podWorkers.updatePod({ type: "create", pod, startTime: this.#deps.clock.now() });
          break;
        }
        case "UPDATE":
        case "RECONCILE":
          this.podManager.set(pod);
          this.#deps.probes?.addPod(pod);
          this.podWorkers.updatePod({ type: "update", pod });
          break;
        case "DELETE":
          // Graceful deletion (upstream treats DELETE as UPDATE): the pod stays
          // known until its API object goes; its deletionTimestamp makes the
          // worker terminate it within deletionGracePeriodSeconds.
          this.podManager.set(pod);
          this.podWorkers.updatePod({ type: "update", pod });
          break;
        case "REMOVE":
          this.#rejected.delete(uid);
          this.podManager.delete(uid);
          this.#deps.probes?.removePod(uid);
          this.#podStarts.forget(uid);
          this.podWorkers.updatePod({ type: "kill", pod });
          break;
      }
    }
  }

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
    });
  }

  /** PLEG output: wake the pod's worker (upstream ignores ContainerRemoved). */
  handlePlegEvent(event: PodLifecycleEvent): void {
    if (event.type === "ContainerRemoved") return;
    const pod = this.podManager.get(event.podUID);
    if (pod) this.podWorkers.updatePod({ type: "sync", pod });
  }

  /** Every second: resync pods whose resync (or retry after an error) is due. */
  handleSyncTick(): void {
    for (const uid of this.podWorkers.podsDueForSync()) {
      const pod = this.podManager.get(uid);
      if (pod) this.podWorkers.updatePod({ type: "sync", pod });
    }
  }

  /**
   * A changed probe result wakes the pod's worker (upstream's liveness,
   * readiness and startup channels).
   */
  handleProbeResult(update: ProbeResultUpdate): void {
    const pod = this.podManager.get(update.podUID);
    if (pod) this.podWorkers.updatePod({ type: "sync", pod });
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
      this.podWorkers.syncKnownPods(desired);
      this.#deps.probes?.cleanupPods(desired);
      // Forget CrashLoopBackOff entries nobody has used for 2× the max delay (upstream's GC).
      this.#deps.runtime.backoff.gc(this.#deps.clock.now());
      for (const running of this.#deps.pleg.runningPods()) {
        if (desired.has(running.uid)) continue;
        if (this.podWorkers.podState(running.uid) !== undefined) continue;
        this.#log.info("Cleaning up orphaned pod", {
          pod: podKey(running),
          podUID: running.uid,
        });
        this.podWorkers.updatePod({ type: "kill", pod: orphanPod(running), runningPod: running });
      }
    } catch (err) {
      this.#log.error("Housekeeping failed", err);
    }
  }

  /** Pods with their latest status, for `/pods`. */
  podsWithStatus(): Pod[] {
    return this.podManager.pods().map((pod) => {
      const status = this.statuses.getPodStatus(pod.metadata.uid!);
      return status ? { ...pod, status } : pod;
    });
  }

  /** Times a worker's sync for `kubelet_pod_worker_duration_seconds`. */
  async #timed<T>(ctx: { updateType: UpdateType }, fn: () => Promise<T>): Promise<T> {
    const start = this.#deps.clock.now();
    try {
      return await fn();
    } finally {
      this.#deps.metrics?.observePodWorker(ctx.updateType, this.#deps.clock.now() - start);
    }
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
    const { pod, signal } = ctx;
    const now = this.#deps.clock.now();
    // The workers hand us a runtime status observed after our previous sync ended.
    const runtime = ctx.podStatus ?? emptyRuntimeStatus(pod);
    const uid = pod.metadata.uid!;
    const probes = this.#deps.probes;
    const generate = (observed: RuntimePodStatus, at: number, result?: SyncPodResult) =>
      generatePodStatus({
        pod,
        runtime: observed,
        readiness: probes?.readiness(uid),
        startup: probes?.startup(uid),
        inBackoff: result?.actions.inBackoff ?? [],
        lastErrors: result?.lastErrors,
        previous: this.statuses.getPodStatus(uid),
        hostIP: this.#deps.hostIP,
        now: at,
      });
    // As upstream, a new pod's status (Pending, ContainerCreating) is set before
    // the runtime works on it: users see the pod being created, not nothing.
    if (this.statuses.versionedStatus(uid) === undefined) {
      this.statuses.setPodStatus(pod, generate(runtime, now));
    }
    const result = await this.#deps.runtime.syncPod(
      pod,
      runtime,
      signal,
      probes ? { liveness: probes.liveness(uid), startup: probes.startup(uid) } : undefined,
    );
    // A sync that started containers inspects the pod again at once, so their
    // Running state is reported now rather than after the next PLEG relist
    // (what upstream's evented PLEG gets from the runtime's container events).
    const observed = startedContainers(result.steps)
      ? await this.#deps.runtime.getPodStatus(uid, signal).catch(() => runtime)
      : runtime;
    probes?.updateContainers(pod, observed);
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
    const { pod, signal } = ctx;
    // A pod being stopped must not be restarted by a failing liveness or startup probe.
    this.#deps.probes?.stopLivenessAndStartup(pod.metadata.uid!);
    const running = await this.#deps.runtime.getPodStatus(pod.metadata.uid!, signal);
    await this.#deps.runtime.killPod(pod, running, ctx.gracePeriodSeconds, signal);
  }

  /**
   * An orphan: a pod the runtime runs that no source wants (upstream
   * SyncTerminatingRuntimePod). With no spec, it is stopped by what the
   * runtime holds, and removed at once: it has no terminated phase.
   */
  async #syncTerminatingRuntimePod(ctx: RuntimePodSyncContext): Promise<void> {
    const { runningPod, signal } = ctx;
    await this.#deps.runtime.killPod(undefined, runningPod, ctx.gracePeriodSeconds, signal);
    await this.#deps.runtime.removePod(
      await this.#deps.runtime.getPodStatus(runningPod.uid, signal),
      signal,
    );
    this.#log.info("Orphaned pod removed", {
      pod: `${runningPod.namespace}/${runningPod.name}`,
      podUID: runningPod.uid,
    });
  }

  /**
   * A stopped pod: a pod no source wants any more is removed from the runtime
   * with its dirs; a finished pod that is still desired keeps its exited
   * containers (they are its record, as upstream keeps them until GC).
   */
  async #syncTerminatedPod(ctx: SyncContext): Promise<void> {
    const { pod, signal } = ctx;
    const uid = pod.metadata.uid!;
    const desired = this.podManager.get(uid);
    // A finished pod nobody deletes keeps its exited containers as its record.
    if (desired && !desired.metadata.deletionTimestamp) return;
    const running = await this.#deps.runtime.getPodStatus(uid, signal);
    const steps = await this.#deps.runtime.removePod(running, signal);
    const failed = steps.find((s) => s.error);
    if (failed) {
      throw new Error(
        `removing pod "${podKey(pod)}" failed at ${failed.action} ${failed.target}: ${
          failed.error!.message
        }`,
      );
    }
    if (desired) {
      // Deleted through the API: its resources are reclaimed, so the status
      // manager may now delete the API object; the watch's DELETED removes it.
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
    this.#log.info("Pod terminated and removed", { pod: podKey(pod), podUID: uid });
  }

  /**
   * True once a pod deleted through the API has stopped and its containers,
   * sandboxes and directories are gone (upstream's podResourcesAreReclaimed):
   * only then may its API object be deleted. A pod refused at admission never
   * had any.
   * @param uid the pod UID
   */
  canBeDeleted(uid: string): boolean {
    if (this.#rejected.has(uid)) return true;
    return this.#reclaimed.has(uid) && this.podWorkers.podState(uid) === "terminated";
  }
}
