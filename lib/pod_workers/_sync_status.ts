/**
 * The per-pod bookkeeping of the pod workers (upstream `podSyncStatus`).
 *
 * @module
 */

import type { PodStatus } from "../api/types.ts";
import { effectiveGracePeriod } from "./grace_period.ts";
import type { PodWorkerState, UpdatePodOptions } from "./types.ts";

/** What the workers remember about one pod UID. Times are epoch ms. */
export interface PodSyncStatus {
  /** `name_namespace`. */
  fullname: string;
  /** A worker loop is running (or about to) for this pod. */
  looping: boolean;
  /** Aborted to cancel the current sync; replaced once aborted. */
  controller?: AbortController;
  /** The newest update not yet picked up by the worker. */
  pendingUpdate?: UpdatePodOptions | undefined;
  /** The update the worker last acted on: the truth for downstream components. */
  activeUpdate?: UpdatePodOptions;
  syncedAt: number;
  /** When the worker first let the pod start. */
  startedAt?: number;
  /** When termination was requested. */
  terminatingAt?: number;
  /** When syncTerminatingPod first succeeded. */
  terminatedAt?: number;
  /** Effective grace period once terminating; 0 before. */
  gracePeriod: number;
  evicted: boolean;
  /**
   * Deleted for good: an orphan, a pod with a deletionTimestamp, or one no
   * longer desired (upstream `deleted`); its content may go once terminated.
   */
  deleted: boolean;
  /** The kills' status overrides, in arrival order (upstream statusPostTerminating). */
  statusPostTerminating: ((status: PodStatus) => void)[];
  /** Called once the pod is stopped (upstream notifyPostTerminating). */
  notifyPostTerminating: (() => void)[];
  /** syncTerminatedPod succeeded: nothing more will run for this UID. */
  finished: boolean;
  /** A `create` arrived while terminating: forget the UID once finished. */
  restartRequested: boolean;
  /** Seen as a runtime pod: must go through termination even if never started. */
  observedRuntime: boolean;
  /** Consecutive failed syncs. */
  failures: number;
  /** When the previous sync call returned (the clock's monotonic ms); the next one wants newer status. */
  lastSyncTime: number;
}

/** The pod's state in the worker's state machine. */
export function workState(status: PodSyncStatus): PodWorkerState {
  if (status.terminatedAt !== undefined) return "terminated";
  if (status.terminatingAt !== undefined) return "terminating";
  return "sync";
}

/**
 * A fresh record for a pod first seen now.
 * @param fullname `name_namespace`
 * @param now epoch ms
 */
export function newSyncStatus(fullname: string, now: number): PodSyncStatus {
  return {
    fullname,
    looping: false,
    syncedAt: now,
    gracePeriod: 0,
    evicted: false,
    deleted: false,
    statusPostTerminating: [],
    notifyPostTerminating: [],
    finished: false,
    restartRequested: false,
    observedRuntime: false,
    failures: 0,
    lastSyncTime: 0,
  };
}

/** The outcome of {@link admitUpdate}. */
export type Admission =
  | { accepted: false; reason: string }
  | { accepted: true; next: UpdatePodOptions; becameTerminating: boolean; shortened: boolean };

/**
 * Decides what an update does to a pod's record (the state half of upstream
 * `UpdatePod`): replaces a runtime-only pod by a known spec, notes restart
 * requests, moves the pod to terminating, and fixes the grace period. Mutates
 * `status`; the caller queues `next` when accepted.
 * @param status the pod's record
 * @param update the update as sent
 * @param firstTime the record was just created
 * @param now epoch ms
 * @returns whether to queue it, and whether a running sync must be cancelled
 */
export function admitUpdate(
  status: PodSyncStatus,
  update: UpdatePodOptions,
  firstTime: boolean,
  now: number,
): Admission {
  const isRuntimePod = update.runningPod !== undefined;
  let next: UpdatePodOptions = { ...update };
  if (isRuntimePod) {
    // Once seen in the runtime, the pod must be driven through termination.
    status.observedRuntime = true;
    const known = [status.pendingUpdate, status.activeUpdate].find(
      (u) => u !== undefined && u.runningPod === undefined,
    );
    if (known) {
      next = { ...next, pod: known.pod };
      delete next.runningPod;
    }
  }
  if (!firstTime && status.terminatingAt !== undefined && update.type === "create") {
    // Same UID created again while terminating (static pods with a fixed UID):
    // syncKnownPods forgets this worker once it is finished, then it may start anew.
    status.restartRequested = true;
    return { accepted: false, reason: "Pod is terminating but has been requested to restart" };
  }
  if (status.finished) {
    return { accepted: false, reason: "Pod is finished processing, no further updates" };
  }

  let becameTerminating = false;
  if (status.terminatingAt === undefined) {
    const phase = next.pod.status?.phase;
    if (isRuntimePod || next.pod.metadata.deletionTimestamp) {
      status.deleted = true;
      becameTerminating = true;
    } else if (phase === "Failed" || phase === "Succeeded") {
      becameTerminating = true;
    } else if (update.type === "kill") {
      if (update.evict) status.evicted = true;
      becameTerminating = true;
    }
    if (becameTerminating) status.terminatingAt = now;
  }

  // A kill's completion callback and status override wait for the stop, as upstream's.
  const { onTerminated, statusFn } = next;
  delete next.onTerminated;
  delete next.statusFn;
  if (status.terminatedAt === undefined && status.terminatingAt !== undefined) {
    if (onTerminated) status.notifyPostTerminating.push(onTerminated);
    if (statusFn) status.statusPostTerminating.push(statusFn);
  } else {
    onTerminated?.();
  }

  let shortened = false;
  if (status.terminatedAt !== undefined) {
    // Waiting for syncTerminatedPod: a stale runtime-pod kill from housekeeping is noise.
    if (isRuntimePod) {
      return { accepted: false, reason: "Pod is waiting for termination, ignoring runtime kill" };
    }
    delete next.gracePeriodSeconds;
  } else if (status.terminatingAt !== undefined) {
    const grace = effectiveGracePeriod(status.gracePeriod, next.pod, next.gracePeriodSeconds);
    status.gracePeriod = grace.seconds;
    shortened = grace.shortened;
    next.gracePeriodSeconds = grace.seconds;
  } else {
    delete next.gracePeriodSeconds;
  }

  // Keep the oldest start time, for latency measured from the first request.
  const pendingStart = status.pendingUpdate?.startTime;
  if (pendingStart !== undefined && (next.startTime ?? Infinity) > pendingStart) {
    next.startTime = pendingStart;
  }
  return { accepted: true, next, becameTerminating, shortened };
}

/**
 * Records the update the worker is about to act on as the one downstream
 * components see (upstream `mergeLastUpdate`): a runtime-only update never
 * replaces a known spec; grace period and eviction carry over.
 * @param status the pod's record
 * @param update the update being acted on
 */
export function mergeLastUpdate(status: PodSyncStatus, update: UpdatePodOptions): void {
  const prev = status.activeUpdate;
  const merged: UpdatePodOptions = { ...update };
  if (prev && update.runningPod) merged.pod = prev.pod;
  if (merged.gracePeriodSeconds === undefined && prev?.gracePeriodSeconds !== undefined) {
    merged.gracePeriodSeconds = prev.gracePeriodSeconds;
  }
  if (prev?.evict) merged.evict = true;
  status.activeUpdate = merged;
}
