/**
 * The pod status manager (upstream pkg/kubelet/status/status_manager.go):
 * the kubelet's one source of truth for pod status. The sync loop sets a
 * pod's status after every sync and reads the previous one back when it
 * generates the next; `/pods` serves it; in apiserver mode an
 * {@link import("./api_status_writer.ts").ApiStatusWriter} registered as a
 * sink writes each new version to the apiserver.
 *
 * ```
 * setPodStatus / terminatePod ──► cache (version+1) ──► sinks: statusChanged(uid)
 * getPodStatus ◄── cache          deletePodStatus / removeOrphanedStatuses ──► sinks: statusRemoved(uid)
 * ```
 *
 * Never blocks its callers: a sink only queues work.
 *
 * @module
 */

import { isStaticPod, podKey } from "../api/pod.ts";
import type { Pod, PodStatus } from "../api/types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { isTerminalPhase } from "./phase.ts";
import { currentSync } from "../trace/mod.ts";
import { metaTime } from "../util/time.ts";
import {
  checkContainerStateTransition,
  isPodStatusByKubeletEqual,
  keepTransitionTimes,
  normalizeStatus,
  terminatedStatus,
} from "./_status_rules.ts";

/** What {@link StatusManager} needs. */
export interface StatusManagerOptions {
  clock: Clock;
  logger: Logger;
}

/** A pod's cached status with the pod it belongs to and its version. */
export interface VersionedStatus {
  /** The pod as last passed to the manager (its latest spec and metadata). */
  readonly pod: Pod;
  readonly status: PodStatus;
  /** Grows by one on every change, so a sink writes each change once. */
  readonly version: number;
}

/** Told about changes in the cache (the apiserver writer). Must not block. */
export interface StatusSink {
  /** The pod's status got a new version. */
  statusChanged(uid: string): void;
  /** The pod's status was forgotten. */
  statusRemoved(uid: string): void;
}

interface Entry {
  pod: Pod;
  status: PodStatus;
  version: number;
}

/**
 * `status.observedGeneration` (upstream SetPodStatus, PodObservedGenerationTracking
 * GA): the generation of the pod the status was set for, never lower than the
 * one already cached (a late status for an older spec does not undo it).
 */
function setObservedGeneration(pod: Pod, next: PodStatus, cached: PodStatus | undefined): void {
  const generation = Math.max(pod.metadata.generation ?? 0, cached?.observedGeneration ?? 0);
  if (generation > 0) next.observedGeneration = generation;
  else delete next.observedGeneration;
}

/** Caches pod statuses under the status rules and tells its sinks what changed. */
export class StatusManager {
  #o: StatusManagerOptions;
  #log: Logger;
  #entries = new Map<string, Entry>();
  #sinks: StatusSink[] = [];

  /** @param opts clock and logger */
  constructor(opts: StatusManagerOptions) {
    this.#o = opts;
    this.#log = opts.logger;
  }

  /**
   * Registers a sink; it is told about every change from now on.
   * @param sink the sink
   */
  addSink(sink: StatusSink): void {
    this.#sinks.push(sink);
  }

  /**
   * The cached status of a pod.
   * @param uid the pod's UID (the static pod's, not the mirror's)
   * @returns a copy, or undefined when none was set
   */
  getPodStatus(uid: string): PodStatus | undefined {
    const e = this.#entries.get(uid);
    return e ? structuredClone(e.status) : undefined;
  }

  /**
   * The cached entry of a pod, for sinks and for reads that check every pod often (the
   * sync tick, active pods): no copy, unlike {@link getPodStatus}.
   * @param uid the pod's UID
   * @returns the entry (not to be mutated), or undefined when none was set
   */
  versionedStatus(uid: string): VersionedStatus | undefined {
    return this.#entries.get(uid);
  }

  /** @returns the UIDs of every pod with a cached status */
  uids(): string[] {
    return [...this.#entries.keys()];
  }

  /**
   * Records a pod's latest status and tells the sinks. Rejects (logs and
   * returns false) an update that would show a terminated container running
   * again against the restart policy; keeps a terminal phase, start time and
   * unchanged conditions' transition times from the previous status.
   * @param pod the pod (its latest spec and metadata)
   * @param status the generated status (copied)
   * @returns false when the update was rejected
   */
  setPodStatus(pod: Pod, status: PodStatus): boolean {
    currentSync()?.status(status);
    return this.#update(pod, structuredClone(status), pod.metadata.deletionTimestamp !== undefined);
  }

  /**
   * Records the final status of a pod whose containers are gone (upstream
   * TerminatePod): containers without a terminated state become
   * ContainerStatusUnknown (exit 137) and a non-static pod gets a terminal
   * phase, so the pod can then be deleted.
   * @param pod the pod
   */
  terminatePod(pod: Pod): void {
    const uid = pod.metadata.uid!;
    const old = this.#entries.get(uid)?.status ?? pod.status ?? {};
    this.#update(pod, terminatedStatus(pod, old, isStaticPod(pod)), true);
  }

  /**
   * Forgets a pod's status (upstream deletePodStatus).
   * @param uid the pod's UID
   */
  deletePodStatus(uid: string): void {
    if (!this.#entries.delete(uid)) return;
    for (const sink of this.#sinks) sink.statusRemoved(uid);
  }

  /**
   * Forgets the statuses of pods not in `keep` (upstream RemoveOrphanedStatuses).
   * @param keep UIDs of pods still known to the kubelet
   */
  removeOrphanedStatuses(keep: ReadonlySet<string>): void {
    for (const uid of [...this.#entries.keys()]) {
      if (!keep.has(uid)) this.deletePodStatus(uid);
    }
  }

  #update(pod: Pod, next: PodStatus, force: boolean): boolean {
    const uid = pod.metadata.uid!;
    const cached = this.#entries.get(uid);
    const old = cached?.status ?? (isStaticPod(pod) ? undefined : pod.status);
    const policy = pod.spec.restartPolicy;
    const illegal =
      checkContainerStateTransition(old?.containerStatuses, next.containerStatuses, policy) ??
        checkContainerStateTransition(
          old?.initContainerStatuses,
          next.initContainerStatuses,
          policy,
        );
    if (illegal !== undefined) {
      this.#log.error("Status update on pod aborted", new Error(illegal), {
        pod: podKey(pod),
        podUID: uid,
      });
      if (cached) cached.pod = pod;
      return false;
    }
    if (old?.phase !== undefined && isTerminalPhase(old.phase) && next.phase !== old.phase) {
      this.#log.info("Pod attempted illegal phase transition", {
        pod: podKey(pod),
        originalStatusPhase: old.phase,
        apiStatusPhase: next.phase,
      });
      next.phase = old.phase;
    }
    const now = metaTime(this.#o.clock.now());
    keepTransitionTimes(next, old, now);
    next.startTime = old?.startTime ?? next.startTime ?? now;
    setObservedGeneration(pod, next, cached?.status);
    normalizeStatus(pod, next);
    if (cached && !force && isPodStatusByKubeletEqual(cached.status, next)) {
      this.#log.v(3).info("Ignoring same status for pod", { pod: podKey(pod), podUID: uid });
      cached.pod = pod;
      return true;
    }
    this.#entries.set(uid, { pod, status: next, version: (cached?.version ?? 0) + 1 });
    for (const sink of this.#sinks) sink.statusChanged(uid);
    return true;
  }
}
