/**
 * PodWorkers: one serialized worker per pod UID (upstream pod_workers.go).
 *
 * ```
 *            updatePod(kill) / deletionTimestamp / terminal phase /
 *            syncPod → isTerminal / syncKnownPods (orphan)
 *   ┌──────┐ ─────────────────────────────────► ┌─────────────┐ syncTerminatingPod ┌────────────┐
 *   │ sync │                                    │ terminating │ ─────── ok ──────► │ terminated │
 *   └──────┘ ◄── syncPod (again on resync)      └─────────────┘                    └────────────┘
 *                                               retried until ok    syncTerminatedPod once ok → finished
 * ```
 *
 * - Updates coalesce: one pending update per pod, the newest wins. Termination
 *   lives in the worker's state, not in the update, so a kill is never lost or
 *   downgraded by a later `update`/`sync`.
 * - A kill (or shorter grace period) aborts the running sync's signal.
 * - A terminated pod never syncs again under the same UID; `syncKnownPods`
 *   forgets it once it is no longer desired (or a `create` asked to restart it).
 * - After each sync the pod is queued for its next one (see {@link PodWorkers.podsDueForSync}):
 *   `resyncIntervalMs`·[1, 1.5) after success, `backoffMs`·[1, 1.5) after an error
 *   (1s base when the network is not ready), right away after a phase change.
 *   The syncLoop sends the due pods an update of type `sync`.
 *
 * @module
 */

import { isStaticPod, podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { effectiveGracePeriod } from "./grace_period.ts";
import { podFullName, StaticPodGate } from "./static_pods.ts";
import type {
  PodWorkersOptions,
  PodWorkerState,
  PodWorkerSync,
  SyncContext,
  UpdatePodOptions,
} from "./types.ts";
import {
  DEFAULT_BACKOFF_MS,
  DEFAULT_RESYNC_INTERVAL_MS,
  jitter,
  JITTER_FACTOR,
  NETWORK_NOT_READY,
  TRANSIENT_BACKOFF_MS,
  WorkQueue,
} from "./work_queue.ts";
import {
  admitUpdate,
  mergeLastUpdate,
  newSyncStatus,
  type PodSyncStatus,
  workState,
} from "./_sync_status.ts";

/** Serializes, coalesces and drives every pod's syncs. */
export class PodWorkers {
  #opts: PodWorkersOptions;
  #log: Logger;
  #statuses = new Map<string, PodSyncStatus>();
  #queue: WorkQueue;
  #static = new StaticPodGate();
  #loops = new Set<Promise<void>>();
  #stopping = false;
  /** syncKnownPods has run: pods no worker knows are no longer wanted. */
  #podsSynced = false;
  readonly #firstSync = Promise.withResolvers<void>();

  /** @param opts the sync functions, clock and pacing */
  constructor(opts: PodWorkersOptions) {
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
    this.#queue = new WorkQueue(opts.clock);
  }

  /**
   * Delivers a change to the pod's worker, starting one if needed. Never blocks.
   * @param update what changed; for orphans, `runningPod` with a `kill`
   */
  updatePod(update: UpdatePodOptions): void {
    if (this.#stopping) return;
    const isRuntimePod = update.runningPod !== undefined;
    const uid = update.runningPod?.uid ?? update.pod.metadata.uid ?? "";
    const fields = { pod: podKey(update.pod), podUID: uid, updateType: update.type };
    if (isRuntimePod && update.type !== "kill") {
      this.#log.info("Pod update is ignored, runtime pods can only be killed", fields);
      return;
    }
    if (uid === "") {
      this.#log.warn("Pod update is ignored, pod has no UID", fields);
      return;
    }
    const now = this.#opts.clock.now();
    let status = this.#statuses.get(uid);
    const firstTime = status === undefined;
    if (!status) {
      status = newSyncStatus(podFullName(update.pod), now);
      this.#statuses.set(uid, status);
      if (isStaticPod(update.pod) && !isRuntimePod) this.#static.enqueue(status.fullname, uid);
    }
    const admission = admitUpdate(status, update, firstTime, now);
    if (!admission.accepted) {
      this.#log.v(4).info(admission.reason, fields);
      return;
    }
    if (admission.becameTerminating) {
      this.#log.v(4).info("Pod is requested to terminate, begin teardown", fields);
    }
    status.pendingUpdate = admission.next;
    this.#ensureWorker(uid, status);
    if ((admission.becameTerminating || admission.shortened) && status.controller) {
      this.#log.v(3).info("Cancelling current pod sync", fields);
      status.controller.abort(new Error(`pod "${fields.pod}" (${uid}) is terminating`));
    }
  }

  /**
   * Reconciles the workers with the desired pods (upstream `SyncKnownPods`):
   * undesired pods that still run are moved to terminating, finished ones that
   * are undesired (or asked to restart) are forgotten.
   * @param desiredUIDs the UIDs the pod manager wants on the node
   * @returns the workers that remain, by UID
   */
  syncKnownPods(desiredUIDs: ReadonlySet<string>): Map<string, PodWorkerSync> {
    const workers = new Map<string, PodWorkerSync>();
    this.#podsSynced = true;
    this.#firstSync.resolve();
    for (const [uid, status] of [...this.#statuses]) {
      const orphan = !desiredUIDs.has(uid);
      if (
        (status.restartRequested || orphan) && this.#removeTerminatedWorker(uid, status, orphan)
      ) {
        continue;
      }
      const update = status.activeUpdate ?? status.pendingUpdate;
      const hasConfig = update !== undefined && update.runningPod === undefined;
      workers.set(uid, {
        state: workState(status),
        orphan,
        hasConfig,
        static: hasConfig && isStaticPod(update.pod),
      });
    }
    return workers;
  }

  /**
   * Takes the pods whose next sync is due (upstream `workQueue.GetWork`).
   * @returns their UIDs; the caller sends each an update of type `sync`
   */
  podsDueForSync(): string[] {
    return this.#queue.takeDue();
  }

  /**
   * Whether everything of the pod is reclaimed (upstream ShouldPodBeFinished):
   * its terminated sync succeeded, or no worker knows it.
   * @param uid the pod UID
   */
  podIsFinished(uid: string): boolean {
    return this.#statuses.get(uid)?.finished ?? true;
  }

  /** @returns the pod's state, or undefined when no worker knows it */
  podState(uid: string): PodWorkerState | undefined {
    const status = this.#statuses.get(uid);
    return status && workState(status);
  }

  /**
   * Whether the runtime's containers and sandboxes of a pod may go (upstream
   * `ShouldPodRuntimeBeRemoved`): once it is terminated; for a pod no worker
   * knows, once the workers have been reconciled with the desired pods.
   * @param uid the pod UID
   */
  shouldPodRuntimeBeRemoved(uid: string): boolean {
    const status = this.#statuses.get(uid);
    return status ? status.terminatedAt !== undefined : this.#podsSynced;
  }

  /**
   * Whether everything of a pod may go, its logs and dead containers
   * included (upstream `ShouldPodContentBeRemoved`): once it is evicted, or
   * deleted and terminated; for a pod no worker knows, once the workers have
   * been reconciled with the desired pods.
   * @param uid the pod UID
   */
  shouldPodContentBeRemoved(uid: string): boolean {
    const status = this.#statuses.get(uid);
    if (!status) return this.#podsSynced;
    return status.evicted || (status.deleted && status.terminatedAt !== undefined);
  }

  /**
   * Resolves when the workers are first reconciled with the desired pods,
   * from when on pods no worker knows may go (the two methods above).
   */
  firstSync(): Promise<void> {
    return this.#firstSync.promise;
  }

  /** Refuses new updates and aborts every running sync. */
  stop(): void {
    this.#stopping = true;
    for (const status of this.#statuses.values()) {
      status.controller?.abort(new Error("pod workers stopped"));
    }
  }

  /** Resolves once every worker loop has returned. */
  async stopped(): Promise<void> {
    while (this.#loops.size > 0) await Promise.allSettled([...this.#loops]);
  }

  #ensureWorker(uid: string, status: PodSyncStatus): void {
    if (status.looping) return;
    status.looping = true;
    const loop = this.#workerLoop(uid, status);
    this.#loops.add(loop);
    void loop.finally(() => this.#loops.delete(loop));
  }

  /** Re-runs the last update, e.g. to move on to the next phase without outside help. */
  #requeueLastUpdate(uid: string, status: PodSyncStatus): void {
    if (status.pendingUpdate || !status.activeUpdate) return;
    status.pendingUpdate = { ...status.activeUpdate };
    this.#ensureWorker(uid, status);
  }

  async #workerLoop(uid: string, status: PodSyncStatus): Promise<void> {
    // Let updatePod return first: updates sent in the same turn coalesce.
    await Promise.resolve();
    for (;;) {
      // Decide to exit and clear `looping` in one synchronous step, so an update
      // arriving right after always finds either this loop or none.
      if (this.#stopping || this.#statuses.get(uid) !== status || !status.pendingUpdate) {
        status.looping = false;
        return;
      }
      try {
        if (await this.#runOne(uid, status)) return;
      } catch (err) {
        this.#log.error("Pod worker failed unexpectedly", err, { podUID: uid });
        status.looping = false;
        return;
      }
    }
  }

  /** One pass of the loop; true (with `looping` cleared) when the worker exits. */
  async #runOne(uid: string, status: PodSyncStatus): Promise<boolean> {
    const update = status.pendingUpdate;
    if (!update) return this.#exit(status);
    const state = workState(status);
    status.pendingUpdate = undefined;
    if (!status.controller || status.controller.signal.aborted) {
      status.controller = new AbortController();
    }
    const signal = status.controller.signal;
    const fields = { pod: podKey(update.pod), podUID: uid, updateType: state };

    if (status.startedAt === undefined && !(update.runningPod && state === "terminating")) {
      const start = this.#allowStart(uid, status, update.pod);
      if (start === "never") {
        this.#log.v(4).info("Pod cannot start ever", fields);
        status.finished = true;
        status.terminatedAt = this.#opts.clock.now();
        for (const notify of status.notifyPostTerminating) notify();
        status.notifyPostTerminating = [];
        this.#queue.forget(uid);
        this.#static.release(status.fullname, uid);
        return this.#exit(status);
      }
      if (start === "later") {
        // Put it back; the queued resync will try again.
        status.pendingUpdate = update;
        this.#queue.enqueue(uid, this.#jitter(this.#backoff(status, undefined)));
        return this.#exit(status);
      }
      status.startedAt = this.#opts.clock.now();
    }
    mergeLastUpdate(status, update);

    let isTerminal = false;
    let error: unknown;
    try {
      isTerminal = await this.#callSync(uid, status, state, update, signal);
    } catch (err) {
      error = err ?? new Error(`sync of pod "${fields.pod}" failed`);
    }

    let phaseTransition = false;
    if (error !== undefined) {
      if (signal.aborted) this.#log.v(2).info("Sync exited with context cancellation", fields);
      else this.#log.error("Error syncing pod, skipping", error, fields);
    } else if (state === "terminated") {
      this.#log.v(4).info("Pod is complete and the worker can now stop", fields);
      status.finished = true;
      status.pendingUpdate = undefined;
      this.#queue.forget(uid);
      this.#static.release(status.fullname, uid);
      return this.#exit(status);
    } else if (state === "terminating") {
      status.terminatedAt = this.#opts.clock.now();
      for (const notify of status.notifyPostTerminating) notify();
      status.notifyPostTerminating = [];
      status.statusPostTerminating = [];
      if (update.runningPod) {
        // An orphan has no API object to finish: forget it entirely.
        this.#log.v(4).info("Pod terminated all orphaned containers", fields);
        status.finished = true;
        this.#statuses.delete(uid);
        this.#queue.forget(uid);
        this.#static.release(status.fullname, uid);
        return this.#exit(status);
      }
      phaseTransition = true;
      this.#requeueLastUpdate(uid, status);
    } else if (isTerminal) {
      this.#log.v(4).info("Pod is terminal, moving to terminating", fields);
      status.terminatingAt ??= this.#opts.clock.now();
      phaseTransition = true;
      this.#requeueLastUpdate(uid, status);
    }
    this.#completeWork(uid, status, phaseTransition, error);
    return false;
  }

  #exit(status: PodSyncStatus): true {
    status.looping = false;
    return true;
  }

  async #callSync(
    uid: string,
    status: PodSyncStatus,
    state: PodWorkerState,
    update: UpdatePodOptions,
    signal: AbortSignal,
  ): Promise<boolean> {
    const pod = status.activeUpdate?.pod ?? update.pod;
    const ctx: SyncContext = { pod, signal, updateType: update.type };
    if (!update.runningPod && this.#opts.podStatus) {
      const podStatus = await this.#opts.podStatus(uid, status.lastSyncTime, signal);
      if (podStatus) ctx.podStatus = podStatus;
    }
    try {
      switch (state) {
        case "terminated":
          await this.#opts.syncTerminatedPod(ctx);
          return false;
        case "terminating": {
          const grace = status.gracePeriod > 0
            ? status.gracePeriod
            : effectiveGracePeriod(0, pod).seconds;
          if (update.runningPod) {
            await this.#opts.syncTerminatingRuntimePod({
              runningPod: update.runningPod,
              signal,
              updateType: update.type,
              gracePeriodSeconds: grace,
            });
            return false;
          }
          ctx.gracePeriodSeconds = grace;
          if (status.evicted) ctx.evicted = true;
          const statusFn = status.statusPostTerminating.at(-1);
          if (statusFn) ctx.statusFn = statusFn;
          await this.#opts.syncTerminatingPod(ctx);
          return false;
        }
        case "sync":
          return (await this.#opts.syncPod(ctx)).isTerminal;
      }
    } finally {
      status.lastSyncTime = this.#opts.clock.monotonic();
    }
  }

  #completeWork(uid: string, status: PodSyncStatus, transition: boolean, error: unknown): void {
    if (transition) {
      status.failures = 0;
      this.#queue.enqueue(uid, 0);
    } else if (error === undefined) {
      status.failures = 0;
      this.#queue.enqueue(
        uid,
        this.#jitter(this.#opts.resyncIntervalMs ?? DEFAULT_RESYNC_INTERVAL_MS),
      );
    } else {
      status.failures++;
      this.#queue.enqueue(uid, this.#jitter(this.#backoff(status, error)));
    }
  }

  #backoff(status: PodSyncStatus, error: unknown): number {
    const text = error instanceof Error ? error.message : String(error ?? "");
    if (text.includes(NETWORK_NOT_READY)) return TRANSIENT_BACKOFF_MS;
    return this.#opts.backoffMs?.(Math.max(1, status.failures)) ?? DEFAULT_BACKOFF_MS;
  }

  #jitter(ms: number): number {
    return jitter(ms, JITTER_FACTOR, this.#opts.random ?? Math.random);
  }

  #allowStart(uid: string, status: PodSyncStatus, pod: Pod): "now" | "later" | "never" {
    if (!isStaticPod(pod)) return "now";
    if (status.terminatingAt !== undefined) return "never";
    const gone = (other: string) => {
      const s = this.#statuses.get(other);
      return !s || s.terminatingAt !== undefined;
    };
    return this.#static.tryStart(status.fullname, uid, gone) ? "now" : "later";
  }

  #removeTerminatedWorker(uid: string, status: PodSyncStatus, orphan: boolean): boolean {
    if (!status.finished) {
      if (!orphan) return false;
      // Every orphan counts as deleted, as upstream's.
      status.deleted = true;
      if (status.startedAt !== undefined || status.observedRuntime) {
        if (status.terminatingAt === undefined) {
          status.terminatingAt = this.#opts.clock.now();
          const active = status.activeUpdate;
          status.gracePeriod = active && !active.runningPod
            ? effectiveGracePeriod(status.gracePeriod, active.pod).seconds
            : 1;
          this.#log.v(4).info("Pod is orphaned and still running, began terminating", {
            podUID: uid,
          });
          status.controller?.abort(new Error(`pod ${uid} is no longer desired`));
        }
        this.#requeueLastUpdate(uid, status);
        return false;
      }
    }
    this.#statuses.delete(uid);
    this.#queue.forget(uid);
    this.#static.release(status.fullname, uid);
    return true;
  }
}
