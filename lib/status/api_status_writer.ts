/**
 * The apiserver half of the pod status manager (upstream
 * pkg/kubelet/status/status_manager.go): a {@link StatusSink} that writes
 * every new status version of the {@link StatusManager} to the pod's API
 * object, and deletes the object once the pod may go.
 *
 * ```
 * StatusManager ──statusChanged──┐
 *                                ▼
 *   every 10s (reconcile all) ──► syncBatch ──► GET (when no cached API pod)
 *   retry timer (1s…10s backoff) ┘      │       PATCH pods/NAME/status (strategic, uid precondition)
 *                                       │       DELETE pods/NAME (grace 0, uid) once deletable
 *                                       ▼
 *                          sent version per pod: nothing is written twice
 * ```
 *
 * An unreachable apiserver keeps every status in the cache and the loop
 * retries with backoff; the latest status is written when it returns.
 *
 * @module
 */

import { isMirrorPod, podKey } from "../api/pod.ts";
import type { Pod, PodStatus } from "../api/types.ts";
import { ApiError, isConflict, isNotFound, type KubeClient } from "../kubeapi/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { isTerminalPhase } from "./phase.ts";
import { metaTime } from "../util/time.ts";
import { podStatusPatch } from "./_status_patch.ts";
import { isPodStatusByKubeletEqual, mergePodStatus, normalizeStatus } from "./_status_rules.ts";
import type { StatusManager, StatusSink, VersionedStatus } from "./status_manager.ts";

/** The API object a pod's status goes to. */
export interface ApiPodRef {
  namespace: string;
  name: string;
  /** The API object's UID: the mirror pod's for a static pod. */
  uid: string;
  /**
   * The API object's status as the pod watch last saw it, if known. The
   * periodic reconcile compares against it; without it, reconcile GETs the pod.
   */
  status?: PodStatus;
}

/** What {@link ApiStatusWriter} needs. */
export interface ApiStatusWriterOptions {
  /** The cache it writes from; the writer registers itself as its sink. */
  statuses: StatusManager;
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /**
   * Maps a pod to the API object its status is written to: itself for an API
   * pod, its mirror pod for a static pod; undefined while there is none yet.
   */
  resolveApiPod: (pod: Pod) => ApiPodRef | undefined;
  /** True once the pod's containers are gone and its volumes cleaned (upstream podIsFinished). */
  canBeDeleted: (uid: string) => boolean;
  /** Full reconcile period (upstream syncPeriod, 10s). */
  syncPeriodMs?: number;
  /** First retry delay after a failed write; doubles up to `syncPeriodMs`. */
  retryInitialMs?: number;
}

interface Sent {
  apiUid: string;
  version: number;
}

type SyncOutcome = "ok" | "failed" | "unreachable";

/** Conflicts retried within one sync before waiting for the next pass. */
const MAX_CONFLICT_RETRIES = 3;

function podPath(ref: ApiPodRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/pods/${
    encodeURIComponent(ref.name)
  }`;
}

/** Keeps the apiserver's copies of the cached pod statuses up to date. */
export class ApiStatusWriter implements StatusSink {
  #o: ApiStatusWriterOptions;
  #log: Logger;
  #syncPeriodMs: number;
  #retryInitialMs: number;
  /** Last version written, by source pod UID. */
  #sent = new Map<string, Sent>();
  /** The API pod as the last GET/PATCH returned it, by source pod UID. */
  #apiPods = new Map<string, Pod>();
  #running: Promise<void> | undefined;
  #wanted = false;
  #wantAll = false;
  #started = false;
  #stopped = false;
  #abort = new AbortController();
  #ticker: Timer | undefined;
  #retryTimer: Timer | undefined;
  #retryDelayMs: number;

  /** @param opts the status cache, client, clock, logger and the pod lookups */
  constructor(opts: ApiStatusWriterOptions) {
    this.#o = opts;
    this.#log = opts.logger;
    this.#syncPeriodMs = opts.syncPeriodMs ?? 10_000;
    this.#retryInitialMs = opts.retryInitialMs ?? 1_000;
    this.#retryDelayMs = this.#retryInitialMs;
    opts.statuses.addSink(this);
  }

  /** Starts the sync loop: writes on every change, reconciles every sync period. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#log.info("Starting to sync pod status with apiserver");
    this.#ticker = this.#o.clock.setInterval(() => this.#request(true), this.#syncPeriodMs);
    if (this.#o.statuses.uids().length > 0) this.#request(false);
  }

  /** Stops the loop, aborting in-flight requests; cached statuses stay readable. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#ticker?.cancel();
    this.#retryTimer?.cancel();
    this.#abort.abort(new Error("status manager stopped"));
    await this.#running;
  }

  /** Resolves once no sync pass is running or queued (for tests and shutdown). */
  async flush(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** {@link StatusSink}: queues the write of the new version. */
  statusChanged(_uid: string): void {
    this.#request(false);
  }

  /** {@link StatusSink}: forgets what was written for the pod. */
  statusRemoved(uid: string): void {
    this.#sent.delete(uid);
    this.#apiPods.delete(uid);
  }

  /** Queues a sync pass; passes never overlap and requests coalesce. */
  #request(all: boolean): void {
    if (this.#stopped || !this.#started) return;
    this.#wanted = true;
    this.#wantAll ||= all;
    this.#startDrain();
  }

  #startDrain(): void {
    if (this.#running || this.#stopped) return;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      // A request that landed after the last loop check must not wait for the next tick.
      if (this.#wanted) this.#startDrain();
    });
  }

  async #drain(): Promise<void> {
    // Let a burst of setPodStatus calls from one tick land in a single pass.
    await Promise.resolve();
    while (this.#wanted && !this.#stopped) {
      const all = this.#wantAll;
      this.#wanted = false;
      this.#wantAll = false;
      try {
        await this.#syncBatch(all);
      } catch (err) {
        this.#log.error("Pod status sync pass failed", err);
      }
    }
  }

  #scheduleRetry(): void {
    if (this.#retryTimer || this.#stopped) return;
    const delay = this.#retryDelayMs;
    this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, this.#syncPeriodMs);
    this.#retryTimer = this.#o.clock.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#request(false);
    }, delay);
  }

  /** True when the status of `uid` has a version the apiserver does not have yet. */
  #unsent(uid: string, entry: VersionedStatus, ref: ApiPodRef): boolean {
    const sent = this.#sent.get(uid);
    return sent === undefined || sent.apiUid !== ref.uid || sent.version < entry.version;
  }

  /** Whether the source says the pod is being deleted and may now go. */
  #wantsDeletion(uid: string, entry: VersionedStatus): boolean {
    return entry.pod.metadata.deletionTimestamp !== undefined &&
      isTerminalPhase(entry.status.phase) && this.#o.canBeDeleted(uid);
  }

  async #syncBatch(all: boolean): Promise<void> {
    let failed = false;
    for (const uid of this.#o.statuses.uids()) {
      if (this.#stopped) return;
      const entry = this.#o.statuses.versionedStatus(uid);
      if (!entry) continue;
      const ref = this.#o.resolveApiPod(entry.pod);
      if (!ref) continue; // a static pod whose mirror pod does not exist yet
      let outcome: SyncOutcome | undefined;
      if (this.#unsent(uid, entry, ref) || (all && this.#wantsDeletion(uid, entry))) {
        outcome = await this.#syncPod(uid, entry, ref);
      } else if (all) {
        const drift = await this.#needsReconcile(uid, entry, ref);
        if (drift === true) {
          this.#sent.delete(uid);
          outcome = await this.#syncPod(uid, entry, ref);
        } else if (drift !== false) {
          outcome = drift;
        }
      }
      if (outcome === "unreachable") {
        // One unreachable call says the apiserver is down: stop here, keep everything, retry.
        failed = true;
        break;
      }
      if (outcome === "failed") failed = true;
    }
    if (failed) this.#scheduleRetry();
    else this.#retryDelayMs = this.#retryInitialMs;
  }

  /** Compares the API object's status with ours; true when it drifted (edited behind our back). */
  async #needsReconcile(
    uid: string,
    entry: VersionedStatus,
    ref: ApiPodRef,
  ): Promise<boolean | SyncOutcome> {
    let apiStatus = ref.status;
    if (apiStatus === undefined) {
      try {
        const pod = await this.#o.client.get<Pod>(podPath(ref), { signal: this.#abort.signal });
        if (pod.metadata.uid !== ref.uid) return false;
        this.#apiPods.set(uid, pod);
        apiStatus = pod.status ?? {};
      } catch (err) {
        if (isNotFound(err)) return false;
        return this.#failure(err, entry.pod);
      }
    }
    const normalized = normalizeStatus(entry.pod, structuredClone(apiStatus));
    if (isPodStatusByKubeletEqual(normalized, entry.status)) return false;
    this.#log.v(3).info(
      "Pod status is inconsistent with cached status for pod, a reconciliation should be triggered",
      { pod: podKey(entry.pod), podUID: uid },
    );
    // The copy we patched from is stale: diff against a fresh GET.
    if (ref.status !== undefined) this.#apiPods.delete(uid);
    return true;
  }

  #failure(err: unknown, pod: Pod): SyncOutcome {
    if (this.#stopped) return "ok";
    if (err instanceof ApiError) {
      this.#log.info("Failed to update status for pod", { pod: podKey(pod), err });
      return "failed";
    }
    this.#log.v(2).info("Apiserver unreachable, pod status kept for retry", {
      pod: podKey(pod),
      err,
    });
    return "unreachable";
  }

  /** Writes one pod's status (upstream syncPod), deleting the API object when it may go. */
  async #syncPod(uid: string, entry: VersionedStatus, ref: ApiPodRef): Promise<SyncOutcome> {
    const { client, clock } = this.#o;
    const signal = this.#abort.signal;
    const path = podPath(ref);
    const log = { pod: podKey(ref), podUID: uid };
    let apiPod = this.#apiPods.get(uid);
    // A deletion the cached copy does not show yet must be seen before deciding to delete.
    if (
      apiPod && (apiPod.metadata.uid !== ref.uid ||
        (entry.pod.metadata.deletionTimestamp !== undefined &&
          apiPod.metadata.deletionTimestamp === undefined))
    ) apiPod = undefined;
    for (let attempt = 0; attempt <= MAX_CONFLICT_RETRIES; attempt++) {
      try {
        if (!apiPod) {
          apiPod = await client.get<Pod>(path, { signal });
          this.#apiPods.set(uid, apiPod);
        }
        if (apiPod.metadata.uid !== ref.uid) {
          this.#log.v(2).info("Pod was deleted and then recreated, skipping status update", {
            ...log,
            oldPodUID: ref.uid,
            newPodUID: apiPod.metadata.uid,
          });
          this.#apiPods.delete(uid);
          return "ok";
        }
        const merged = mergePodStatus(apiPod.status, entry.status, metaTime(clock.now()));
        const { patch, unchanged } = podStatusPatch(ref.uid, apiPod.status, merged);
        if (unchanged) {
          this.#log.v(3).info("Status for pod is up-to-date", { ...log, version: entry.version });
        } else {
          this.#log.v(3).info("Patch status for pod", { ...log, patch: JSON.stringify(patch) });
          apiPod = await client.patch<Pod>(`${path}/status`, patch, "strategic", { signal });
          this.#apiPods.set(uid, apiPod);
        }
        this.#sent.set(uid, { apiUid: ref.uid, version: entry.version });
        if (this.#deletable(uid, apiPod)) return await this.#deletePod(uid, ref, apiPod);
        return "ok";
      } catch (err) {
        if (isNotFound(err)) {
          // The API object is gone; the pod source will tell the kubelet. Nothing to write.
          this.#log.v(3).info("Pod does not exist on the server", log);
          this.#apiPods.delete(uid);
          this.#sent.set(uid, { apiUid: ref.uid, version: entry.version });
          return "ok";
        }
        if (isConflict(err)) {
          this.#log.v(3).info("Conflict writing pod status, re-reading the pod", log);
          this.#apiPods.delete(uid);
          apiPod = undefined;
          continue;
        }
        return this.#failure(err, entry.pod);
      }
    }
    this.#log.info("Failed to update status for pod: conflicts persisted", log);
    return "failed";
  }

  #deletable(uid: string, apiPod: Pod): boolean {
    return apiPod.metadata.deletionTimestamp !== undefined &&
      !isMirrorPod(apiPod) &&
      isTerminalPhase(apiPod.status?.phase) &&
      this.#o.canBeDeleted(uid);
  }

  async #deletePod(uid: string, ref: ApiPodRef, apiPod: Pod): Promise<SyncOutcome> {
    const log = { pod: podKey(ref), podUID: uid };
    try {
      // The UID precondition keeps a pod recreated under the same name safe.
      await this.#o.client.delete(podPath(ref), {
        gracePeriodSeconds: 0,
        preconditions: { uid: apiPod.metadata.uid! },
      }, { signal: this.#abort.signal });
    } catch (err) {
      if (!isNotFound(err)) {
        this.#log.info("Failed to delete status for pod", { ...log, err });
        return err instanceof ApiError ? "failed" : "unreachable";
      }
    }
    this.#log.v(3).info("Pod fully terminated and removed from etcd", log);
    this.#o.statuses.deletePodStatus(uid);
    return "ok";
  }
}
