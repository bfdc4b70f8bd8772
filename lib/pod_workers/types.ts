/**
 * The values that flow into and out of the pod workers.
 *
 * @module
 */

import type { Pod, PodStatus } from "../api/types.ts";
import type { RuntimePodStatus } from "../kuberuntime/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";

/**
 * Why an update was sent (upstream `SyncPodType`): `create` for a pod first seen,
 * `update` for a changed spec, `sync` for a periodic or event-driven resync,
 * `kill` to stop the pod (eviction, orphan cleanup, deletion by the kubelet).
 */
export type UpdateType = "create" | "update" | "sync" | "kill";

/** Where a pod is in its life, as the worker drives it. */
export type PodWorkerState = "sync" | "terminating" | "terminated";

/** One request to {@link import("./pod_workers.ts").PodWorkers.updatePod}. */
export interface UpdatePodOptions {
  type: UpdateType;
  /**
   * The pod. For an orphan (runtime pod with no spec) pass a minimal pod built
   * from the runtime's name, namespace and UID together with `runningPod`;
   * only its name and UID are used.
   */
  pod: Pod;
  /**
   * Set only for orphans: what the runtime holds. Only `kill` is accepted with
   * it, and the pod is stopped by `syncTerminatingRuntimePod`.
   */
  runningPod?: RuntimePodStatus;
  /** Requested grace period for a kill; the effective one only ever shrinks. */
  gracePeriodSeconds?: number;
  /** The kill is an eviction by the kubelet. */
  evict?: boolean;
  /**
   * Kill only: overrides the status the terminating sync sets (upstream
   * KillPodOptions.PodStatusFunc; the latest one wins), e.g. Failed/Evicted.
   */
  statusFn?: (status: PodStatus) => void;
  /**
   * Kill only: called once the pod's containers are stopped (upstream
   * KillPodOptions.CompletedCh), or at once when the kill is not accepted
   * as one (the pod is already stopped, or the update is not a kill).
   */
  onTerminated?: () => void;
  /** Epoch ms when the change was first seen (for latency metrics); the oldest is kept. */
  startTime?: number;
}

/** What a sync function is called with. */
export interface SyncContext {
  /** The newest pod the worker has seen (a synthetic one for orphans). */
  pod: Pod;
  /** Aborted when the pod must stop syncing (kill, shorter grace period) or on shutdown. */
  signal: AbortSignal;
  /** The type of the update that triggered this sync. */
  updateType: UpdateType;
  /** Terminating only: the effective grace period, ≥ 1. */
  gracePeriodSeconds?: number;
  /**
   * When the workers were given a `podStatus` source: the runtime status observed
   * after the previous sync of this pod ended; absent when the runtime holds
   * nothing for the pod.
   */
  podStatus?: RuntimePodStatus;
  /** Terminating only: the kill was an eviction. */
  evicted?: boolean;
  /** Terminating only: the latest kill's status override (see UpdatePodOptions.statusFn). */
  statusFn?: (status: PodStatus) => void;
}

/**
 * What `syncTerminatingRuntimePod` is called with: a pod the runtime runs
 * that no source knows (an orphan), so there is no spec to stop it by.
 */
export interface RuntimePodSyncContext {
  /** What the runtime holds for the pod: the only record of it. */
  runningPod: RuntimePodStatus;
  /** Aborted on shutdown. */
  signal: AbortSignal;
  /** The type of the update that triggered this sync (`kill`). */
  updateType: UpdateType;
  /** The effective grace period, ≥ 1. */
  gracePeriodSeconds: number;
}

/** What `syncPod` reports (upstream returns `isTerminal, err`; errors are thrown). */
export interface SyncResult {
  /**
   * True when the pod reached a terminal phase on its own (every container of a
   * non-restarting pod exited): the worker moves it to terminating.
   */
  isTerminal: boolean;
}

/** One worker as {@link import("./pod_workers.ts").PodWorkers.syncKnownPods} reports it. */
export interface PodWorkerSync {
  state: PodWorkerState;
  /** Not in the desired set: the worker is driving it to completion itself. */
  orphan: boolean;
  /** The worker has a real spec (not only a runtime pod). */
  hasConfig: boolean;
  /** The pod is a static pod (file or http source). */
  static: boolean;
}

/** Options for {@link import("./pod_workers.ts").PodWorkers}. */
export interface PodWorkersOptions {
  /** Makes the pod match its spec; throws on failure. */
  syncPod: (ctx: SyncContext) => Promise<SyncResult>;
  /** Stops every container of the pod within `ctx.gracePeriodSeconds`; throws on failure. */
  syncTerminatingPod: (ctx: SyncContext) => Promise<void>;
  /** Releases what a stopped pod still holds (volumes, cgroups, final status). */
  syncTerminatedPod: (ctx: SyncContext) => Promise<void>;
  /**
   * Stops and removes every container and sandbox of an orphan (upstream
   * `SyncTerminatingRuntimePod`); throws on failure. An orphan has no
   * terminated phase: the workers forget it once this succeeds.
   */
  syncTerminatingRuntimePod: (ctx: RuntimePodSyncContext) => Promise<void>;
  clock: Clock;
  logger?: Logger;
  /**
   * Delay before retrying after `failures` consecutive errors, before jitter.
   * Default: upstream's constant 10s (container restarts have their own
   * CrashLoopBackOff in the planner; this one only paces failing syncs).
   */
  backoffMs?: (failures: number) => number;
  /** Delay before the next resync after a success, before jitter; default 1m. */
  resyncIntervalMs?: number;
  /** Source of jitter in [0, 1); Math.random by default. */
  random?: () => number;
  /**
   * The runtime status cache (PLEG's `waitNewerThan`). When given, each sync waits
   * for a status observed after the previous sync ended and passes it as
   * `ctx.podStatus`, as upstream does with `GetNewerThan`.
   */
  podStatus?: (
    uid: string,
    minTime: number,
    signal: AbortSignal,
  ) => Promise<RuntimePodStatus | undefined>;
}
