/**
 * {@link EvictionManager}: upstream's eviction manager (pkg/kubelet/eviction/
 * eviction_manager.go). Every 10 s, or at once when a threshold notifier
 * fires, it reads the Summary, decides which thresholds are met (grace
 * periods, minimum reclaim), reports the node's pressure conditions (kept for
 * the pressure transition period), evicts pods over their local storage
 * limits, and otherwise reclaims the starved resource: node-level first (dead
 * containers, then unused images, for disk), then by evicting ONE pod, ranked,
 * and waiting for it to be cleaned up. It is also the first admit handler:
 * under pressure it refuses pods as upstream does.
 *
 * ```
 *  timer 10s / notifier ──► synchronize ──► Summary ──► observations
 *        ▲                      │            thresholds met (grace, min reclaim)
 *        │                      │            conditions (transition period)
 *        │                      ▼
 *  wait for cleanup ◄── evict one pod ◄── rank ◄── node-level reclaim (disk)
 * ```
 *
 * @module
 */

import { isCriticalPod, podKey } from "../api/pod.ts";
import type { Pod, PodCondition, PodStatus } from "../api/types.ts";
import type { PodAdmitHandler, PodAdmitResult } from "../admission/types.ts";
import { type EventRecorder, nodeReference, podReference } from "../events/mod.ts";
import type { Summary } from "../stats/summary_types.ts";
import type { Clock } from "../util/clock.ts";
import { metaTime } from "../util/time.ts";
import { errorText, type Logger } from "../util/log.ts";
import { localStorageViolation } from "./local_storage.ts";
import { admitUnderPressure } from "./admit.ts";
import { EVICTED_REASON, evictionMessage, markEvicted } from "./message.ts";
import { nodeReclaimFuncs } from "./reclaim.ts";
import { type RankFunc, signalRankFuncs } from "./rank.ts";
import { makeSignalObservations } from "./signals.ts";
import {
  byEvictionPriority,
  isHardThreshold,
  mergeThresholds,
  nodeConditions,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  reclaimableThreshold,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
  type ThresholdsObservedAt,
  thresholdsUpdatedStats,
  updateContainerFsThresholds,
} from "./thresholds.ts";
import type {
  ContainerGC,
  EvictionConfig,
  EvictionMetrics,
  ImageGC,
  KillPodFunc,
  Observations,
  PressureCondition,
  Signal,
  StatsFunc,
  Threshold,
  ThresholdNotifier,
} from "./types.ts";

/** Upstream's evictionMonitoringPeriod. */
export const MONITORING_INTERVAL_MS = 10_000;
/** How long an evicted pod's cleanup is waited for (upstream podCleanupTimeout). */
const POD_CLEANUP_TIMEOUT_MS = 30_000;
const POD_CLEANUP_POLL_MS = 1_000;
/** The grace of a hard eviction (upstream immediateEvictionGracePeriodSeconds). */
const IMMEDIATE_GRACE_SECONDS = 1;
/** How often the notifiers are re-armed at most (upstream notifierRefreshInterval). */
const NOTIFIER_REFRESH_MS = 10_000;

/** Options for {@link EvictionManager}. */
export interface EvictionManagerOptions {
  config: EvictionConfig;
  clock: Clock;
  logger: Logger;
  nodeName: string;
  /**
   * The Summary with filesystem stats; `fresh`: every cgroup read at the call
   * (upstream's summaryProvider.Get(ctx, updateStats=true)) rather than at its
   * last housekeeping.
   */
  summary: (signal?: AbortSignal, fresh?: boolean) => Promise<Summary>;
  /** The active pods as allocated (upstream getAllocatedPods). */
  activePods: () => Pod[];
  /** Kills a pod through the pod workers; resolves once its containers are stopped. */
  killPod: KillPodFunc;
  /** True once everything of the pod is reclaimed (upstream PodIsFinished). */
  podCleanedUp: (pod: Pod) => boolean;
  /** Pod and node events (Evicted, EvictionThresholdMet); dropped when unset. */
  events?: EventRecorder;
  containerGC?: ContainerGC;
  imageGC?: ImageGC;
  /** Whether the image filesystem is not the node's (upstream HasDedicatedImageFs); false when unset. */
  dedicatedImageFs?: () => Promise<boolean>;
  /** Memory threshold notifiers; started and stopped with the manager, re-armed from each Summary. */
  notifiers?: ThresholdNotifier[];
  /** kubelet_evictions and kubelet_eviction_stats_age_seconds; none when unset. */
  metrics?: EvictionMetrics;
  /** Between synchronize rounds; upstream's 10 s by default. */
  monitoringIntervalMs?: number;
}

/** The eviction manager and its admit handler. */
export class EvictionManager implements PodAdmitHandler {
  readonly #o: EvictionManagerOptions;
  readonly #log: Logger;
  #thresholds: Threshold[];
  #conditions: PressureCondition[] = [];
  #conditionsLastObservedAt = new Map<PressureCondition, number>();
  #firstObservedAt: ThresholdsObservedAt = new Map();
  #thresholdsMet: Threshold[] = [];
  #lastObservations: Observations = new Map();
  #notifiersUpdatedAt = -Infinity;
  #dedicatedImageFs: boolean | undefined;
  #rank: Record<Signal, RankFunc> | undefined;
  /**
   * When the last evicted pods were cleaned up (epoch ms): stats sampled before then still
   * count the evicted pods. The round after the cleanup reads fresh stats; a sample (e.g. a
   * figure the runtime measured earlier) must still be newer than this to evict.
   */
  #evictionsDoneAt = -Infinity;
  #abort = new AbortController();
  #wake: (() => void) | undefined;
  /** A trigger arrived while a round ran: the next round starts without sleeping. */
  #triggered = false;
  /**
   * The next round reads fresh stats: the first one, one a notifier triggered
   * (the crossing is newer than any housekeeping sample) and the one after an
   * eviction's cleanup. The 10 s rounds in between read housekeeping's
   * samples, which cost nothing more.
   */
  #fresh = true;
  #loop: Promise<void> | undefined;

  /** @param o the configuration, data sources and actions */
  constructor(o: EvictionManagerOptions) {
    this.#o = o;
    this.#log = o.logger;
    this.#thresholds = [...o.config.thresholds];
  }

  /** Under memory pressure (MemoryPressure is reported). */
  isUnderMemoryPressure(): boolean {
    return this.#conditions.includes("MemoryPressure");
  }

  /** Under disk pressure (DiskPressure is reported). */
  isUnderDiskPressure(): boolean {
    return this.#conditions.includes("DiskPressure");
  }

  /** Under PID pressure (PIDPressure is reported). */
  isUnderPIDPressure(): boolean {
    return this.#conditions.includes("PIDPressure");
  }

  /** The three verdicts, as the node status wants them. */
  pressure(): { memory: boolean; disk: boolean; pid: boolean } {
    return {
      memory: this.isUnderMemoryPressure(),
      disk: this.isUnderDiskPressure(),
      pid: this.isUnderPIDPressure(),
    };
  }

  /**
   * Upstream's Admit (see {@link admitUnderPressure}).
   * @param pod the pod
   * @returns the verdict
   */
  admit(pod: Pod): PodAdmitResult {
    return admitUnderPressure(this.#conditions, pod);
  }

  /** Starts the notifiers and the monitoring loop. */
  start(): void {
    if (this.#loop) return;
    this.#log.info("Eviction manager: starting control loop");
    for (const n of this.#o.notifiers ?? []) n.start();
    this.#loop = this.#run();
  }

  /** Stops the loop and the notifiers; waits for a round in progress. */
  async stop(): Promise<void> {
    this.#abort.abort(new Error("eviction manager stopped"));
    this.#wake?.();
    for (const n of this.#o.notifiers ?? []) n.stop();
    await this.#loop;
  }

  /**
   * Runs a round now rather than at the next tick (a notifier's handler).
   * @param message why, logged
   */
  trigger(message: string): void {
    this.#log.info(message);
    this.#triggered = true;
    this.#fresh = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    const interval = this.#o.monitoringIntervalMs ?? MONITORING_INTERVAL_MS;
    while (!signal.aborted) {
      let evicted: Pod[] | undefined;
      try {
        evicted = await this.synchronize(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.#log.error("Eviction manager: failed to synchronize", err);
      }
      if (evicted && evicted.length > 0) {
        this.#log.info("Eviction manager: pods evicted, waiting for pod to be cleaned up", {
          pods: evicted.map(podKey).join(","),
        });
        await this.#waitForCleanup(evicted, signal);
        this.#evictionsDoneAt = this.#o.clock.now();
        this.#fresh = true;
        continue;
      }
      await this.#sleep(interval, signal);
    }
  }

  /** Sleeps, cut short by {@link trigger} or stop. */
  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#triggered) {
      this.#triggered = false;
      return;
    }
    const woken = new AbortController();
    this.#wake = () => woken.abort();
    try {
      await this.#o.clock.sleep(ms, AbortSignal.any([signal, woken.signal]));
    } catch {
      // woken or stopped
    } finally {
      this.#wake = undefined;
      this.#triggered = false;
    }
  }

  async #waitForCleanup(pods: Pod[], signal: AbortSignal): Promise<void> {
    const deadline = this.#o.clock.monotonic() + POD_CLEANUP_TIMEOUT_MS;
    while (!signal.aborted) {
      try {
        await this.#o.clock.sleep(POD_CLEANUP_POLL_MS, signal);
      } catch {
        return;
      }
      if (pods.every((p) => this.#o.podCleanedUp(p))) {
        this.#log.info("Eviction manager: pods successfully cleaned up", {
          pods: pods.map(podKey).join(","),
        });
        return;
      }
      if (this.#o.clock.monotonic() >= deadline) {
        this.#log.info("Eviction manager: timed out waiting for pods to be cleaned up", {
          pods: pods.map(podKey).join(","),
        });
        return;
      }
    }
  }

  /**
   * One round (upstream synchronize).
   * @param signal aborts the round's calls
   * @returns the pods evicted, or undefined when none
   */
  async synchronize(signal?: AbortSignal): Promise<Pod[] | undefined> {
    const cfg = this.#o.config;
    if (this.#thresholds.length === 0 && !cfg.localStorageCapacityIsolation) return undefined;
    if (this.#dedicatedImageFs === undefined) {
      const dedicated = await (this.#o.dedicatedImageFs?.() ?? Promise.resolve(false));
      this.#dedicatedImageFs = dedicated;
      this.#thresholds = updateContainerFsThresholds(this.#thresholds, dedicated, false);
      this.#rank = signalRankFuncs(dedicated, false);
    }
    const activePods = this.#o.activePods();
    let summary: Summary;
    const fresh = this.#fresh;
    this.#fresh = false;
    try {
      summary = await this.#o.summary(signal, fresh);
    } catch (err) {
      this.#fresh ||= fresh;
      this.#log.error("Eviction manager: failed to get summary stats", err);
      return undefined;
    }
    // When thresholds were first and last met: intervals, so monotonic (a step of the
    // wall clock must not end or stretch the transition period).
    const now = this.#o.clock.monotonic();
    if (now - this.#notifiersUpdatedAt > NOTIFIER_REFRESH_MS) {
      this.#notifiersUpdatedAt = now;
      for (const n of this.#o.notifiers ?? []) {
        try {
          n.updateThreshold(summary);
        } catch (err) {
          this.#log.info("Eviction manager: failed to update notifier", {
            notifier: n.description(),
            err: errorText(err),
          });
        }
      }
    }
    const { observations, stats } = makeSignalObservations(summary);
    let thresholds = thresholdsMet(this.#thresholds, observations, false);
    if (this.#thresholdsMet.length > 0) {
      thresholds = mergeThresholds(
        thresholds,
        thresholdsMet(this.#thresholdsMet, observations, true),
      );
    }
    const firstObservedAt = thresholdsFirstObservedAt(thresholds, this.#firstObservedAt, now);
    const lastObservedAt = nodeConditionsLastObservedAt(
      nodeConditions(thresholds),
      this.#conditionsLastObservedAt,
      now,
    );
    const conditions = nodeConditionsObservedSince(
      lastObservedAt,
      cfg.pressureTransitionPeriodMs,
      now,
    );
    thresholds = thresholdsMetGracePeriod(firstObservedAt, now);
    if (conditions.join() !== this.#conditions.join()) {
      this.#log.info("Eviction manager: node conditions changed", {
        conditions: conditions.join(","),
      });
    }
    this.#conditions = conditions;
    this.#firstObservedAt = firstObservedAt;
    this.#conditionsLastObservedAt = lastObservedAt;
    this.#thresholdsMet = thresholds;
    thresholds = thresholdsUpdatedStats(thresholds, observations, this.#lastObservations)
      .filter((t) => (observations.get(t.signal)?.timeMs ?? Infinity) > this.#evictionsDoneAt);
    this.#lastObservations = observations;

    if (cfg.localStorageCapacityIsolation) {
      const evicted = await this.#localStorageEviction(activePods, stats);
      if (evicted.length > 0) return evicted;
    }
    if (thresholds.length === 0) {
      this.#log.v(3).info("Eviction manager: no resources are starved");
      return undefined;
    }
    thresholds = byEvictionPriority(thresholds);
    const reclaim = reclaimableThreshold(thresholds);
    if (!reclaim) return undefined;
    const { threshold, resource } = reclaim;
    this.#log.info("Eviction manager: attempting to reclaim", { resourceName: resource });
    this.#o.events?.event(
      nodeReference(this.#o.nodeName),
      "Warning",
      "EvictionThresholdMet",
      `Attempting to reclaim ${resource}`,
    );
    if (await this.#reclaimNodeLevel(threshold.signal, signal)) {
      this.#log.info("Eviction manager: able to reduce resource pressure without evicting pods.", {
        resourceName: resource,
      });
      return undefined;
    }
    this.#log.info("Eviction manager: must evict pod(s) to reclaim", { resourceName: resource });
    if (activePods.length === 0) {
      this.#log.error(
        "Eviction manager: eviction thresholds have been met, but no pods are active to evict",
        new Error(`${threshold.signal} threshold met`),
      );
      return undefined;
    }
    const ranked = [...activePods];
    this.#rank![threshold.signal](ranked, stats);
    this.#log.info("Eviction manager: pods ranked for eviction", {
      pods: ranked.map(podKey).join(","),
    });
    for (const t of thresholds) {
      const at = observations.get(t.signal)?.timeMs;
      if (at !== undefined) this.#o.metrics?.observeEvictionStatsAge(t.signal, now - at);
    }
    for (const pod of ranked) {
      let grace = IMMEDIATE_GRACE_SECONDS;
      if (!isHardThreshold(threshold)) {
        grace = cfg.maxPodGracePeriodSeconds;
        const own = pod.spec.terminationGracePeriodSeconds;
        if (own !== undefined) grace = Math.min(grace, own);
      }
      const { message } = evictionMessage(resource, pod, stats, thresholds, observations);
      const condition: PodCondition = {
        type: "DisruptionTarget",
        status: "True",
        reason: "TerminationByKubelet",
        message,
      };
      if (await this.#evictPod(pod, grace, message, condition)) {
        this.#o.metrics?.countEviction(threshold.signal);
        return [pod];
      }
    }
    this.#log.info("Eviction manager: unable to evict any pods from the node");
    return undefined;
  }

  /**
   * Node-level reclaim for the signal (upstream reclaimNodeLevelResources):
   * under disk pressure dead containers, then unused images, then a fresh
   * look at the thresholds with their minimum reclaim.
   * @returns true when no threshold is met any more
   */
  async #reclaimNodeLevel(signal: Signal, abort?: AbortSignal): Promise<boolean> {
    const funcs = nodeReclaimFuncs(signal, this.#dedicatedImageFs ?? false, this.#o);
    if (funcs.length === 0) return false;
    for (const f of funcs) {
      try {
        await f(abort);
      } catch (err) {
        this.#log.info(
          "Eviction manager: unexpected error when attempting to reduce resource pressure",
          {
            signal,
            err: errorText(err),
          },
        );
      }
    }
    let summary: Summary;
    try {
      summary = await this.#o.summary(abort);
    } catch (err) {
      this.#log.error("Eviction manager: failed to get summary stats after resource reclaim", err);
      return false;
    }
    const { observations } = makeSignalObservations(summary);
    return thresholdsMet(this.#thresholds, observations, true).length === 0;
  }

  async #localStorageEviction(pods: Pod[], stats: StatsFunc): Promise<Pod[]> {
    const evicted: Pod[] = [];
    for (const pod of pods) {
      const podStats = stats(pod);
      if (!podStats) continue;
      const v = localStorageViolation(pod, podStats, this.#dedicatedImageFs ?? false);
      if (v && await this.#evictPod(pod, IMMEDIATE_GRACE_SECONDS, v.message)) {
        this.#o.metrics?.countEviction(v.signal);
        evicted.push(pod);
      }
    }
    return evicted;
  }

  /**
   * Upstream evictPod: never a critical pod; records the Evicted event and
   * kills the pod with its status set to Failed/Evicted.
   * @returns false only for a critical pod
   */
  async #evictPod(
    pod: Pod,
    gracePeriodSeconds: number,
    message: string,
    condition?: PodCondition,
  ): Promise<boolean> {
    if (isCriticalPod(pod)) {
      this.#log.error("Eviction manager: cannot evict a critical pod", new Error(message), {
        pod: podKey(pod),
      });
      return false;
    }
    this.#o.events?.event(podReference(pod), "Warning", EVICTED_REASON, message);
    this.#log.info("Evicting pod", { pod: podKey(pod), podUID: pod.metadata.uid, message });
    try {
      await this.#o.killPod(pod, {
        evict: true,
        gracePeriodSeconds,
        statusFn: (status: PodStatus) =>
          markEvicted(status, message, condition, metaTime(this.#o.clock.now())),
      });
      this.#log.info("Eviction manager: pod is evicted successfully", { pod: podKey(pod) });
    } catch (err) {
      this.#log.error("Eviction manager: pod failed to evict", err, { pod: podKey(pod) });
    }
    return true;
  }
}
