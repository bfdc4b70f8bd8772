/**
 * The eviction manager as the agent runs it (upstream NewMainKubelet's
 * eviction.NewManager and killPodNow): thresholds from the options, the
 * Summary from the stats provider, pods killed through the pod workers with
 * evict set, and the image filesystem compared with the root dir's.
 *
 * @module
 */

import { statSync } from "node:fs";
import type { Pod } from "../api/types.ts";
import type { CgroupLayout } from "../cgroup/types.ts";
import type { RuntimeService } from "../cri/types.ts";
import {
  type ContainerGC,
  EvictionManager,
  type EvictionMetrics,
  type ImageGC,
  type KillPodFunc,
  parseThresholdConfig,
  type ThresholdNotifier,
} from "../eviction/mod.ts";
import { createMemoryNotifiers } from "../eviction/memory_threshold_notifier.ts";
import { EventMessage, EventReason, type EventRecorder, podReference } from "../events/mod.ts";
import type { AgentOptions } from "../options/mod.ts";
import type { PodWorkers } from "../pod_workers/mod.ts";
import type { StatsProvider } from "../stats/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";

/** What {@link createEvictionManager} wires together. */
export interface EvictionWiring {
  opts: AgentOptions;
  clock: Clock;
  logger: Logger;
  nodeName: string;
  events: EventRecorder;
  stats: Pick<StatsProvider, "summary">;
  runtime: Pick<RuntimeService, "imageFsInfo">;
  /** The kubelet's pod workers and active pods; read late (the kubelet is built after its admit handlers). */
  kubelet: () => {
    podWorkers: Pick<PodWorkers, "updatePod" | "podIsFinished">;
    allocatedActivePods(): Pod[];
    /** Relists and re-tracks what runs (absent where the stats are not the runtime's). */
    observeNow?(): Promise<void>;
  };
  containerGC?: ContainerGC;
  imageGC?: ImageGC;
  /** Notifiers given as they are (tests); otherwise built from {@link memoryCgroups}. */
  notifiers?: ThresholdNotifier[];
  /**
   * Where the memory thresholds are watched between rounds: the root memory
   * cgroup (memory.available) and the pods' cgroup (allocatableMemory.available,
   * a path under the hierarchy root such as "/kubepods").
   */
  memoryCgroups?: { layout: CgroupLayout; podCgroupRoot: string };
  metrics?: EvictionMetrics;
}

/**
 * Upstream killPodNow: a kill update with evict and the status override; waits
 * for the containers to stop, at most 1.5× the grace period (10 s at least),
 * then records ExceededGracePeriod and fails.
 * @param podWorkers the workers (read when called)
 * @param clock the clock
 * @param events the recorder
 * @returns the kill function the eviction manager calls
 */
export function killPodNow(
  podWorkers: () => Pick<PodWorkers, "updatePod">,
  clock: Clock,
  events: EventRecorder,
): KillPodFunc {
  return (pod, { evict, gracePeriodSeconds, statusFn }) => {
    const timeoutMs = Math.max(10, Math.trunc(gracePeriodSeconds * 1.5)) * 1000;
    return new Promise<void>((resolve, reject) => {
      const timer = clock.setTimeout(() => {
        events.event(
          podReference(pod),
          "Warning",
          EventReason.exceededGracePeriod,
          EventMessage.exceededGracePeriod(),
        );
        reject(new Error("timeout waiting to kill pod"));
      }, timeoutMs);
      podWorkers().updatePod({
        type: "kill",
        pod,
        evict,
        gracePeriodSeconds,
        statusFn,
        onTerminated: () => {
          timer.cancel();
          resolve();
        },
      });
    });
  };
}

/**
 * Upstream HasDedicatedImageFs: the runtime's image filesystem is on another
 * device than the root dir.
 * @param runtime the CRI image service
 * @param rootDir the agent's root dir
 * @returns true when dedicated
 */
export async function hasDedicatedImageFs(
  runtime: Pick<RuntimeService, "imageFsInfo">,
  rootDir: string,
): Promise<boolean> {
  const info = await runtime.imageFsInfo();
  const mountpoint = info.imageFilesystems[0]?.fsId?.mountpoint;
  if (!mountpoint) return false;
  return statSync(mountpoint).dev !== statSync(rootDir).dev;
}

/**
 * Builds the eviction manager from the agent's options (evictionHard,
 * evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim,
 * evictionPressureTransitionPeriod, evictionMaxPodGracePeriod).
 * @param w the options and the parts it acts through
 * @returns the manager, not started
 * @throws {Error} on a bad threshold
 */
export function createEvictionManager(w: EvictionWiring): EvictionManager {
  const { opts } = w;
  const thresholds = parseThresholdConfig({
    evictionHard: opts.evictionHard,
    evictionSoft: opts.evictionSoft,
    evictionSoftGracePeriod: opts.evictionSoftGracePeriod,
    evictionMinimumReclaim: opts.evictionMinimumReclaim,
    enforcePodsAllocatable: (opts.config.enforceNodeAllocatable ?? ["pods"]).includes("pods"),
  });
  // Upstream watches memory thresholds through the kernel (cgroup v1's eventfd)
  // only with kernelMemcgNotification; without it, and on v2, the cgroup's usage
  // is read every 500 ms instead of waiting for the 10 s round.
  let notifiers = w.notifiers;
  if (!notifiers && w.memoryCgroups) {
    notifiers = createMemoryNotifiers({
      thresholds,
      podCgroupRoot: w.memoryCgroups.podCgroupRoot,
      layout: w.memoryCgroups.layout,
      handler: (message) => manager.trigger(message),
      clock: w.clock,
      log: w.logger,
      pollOnly: opts.config.kernelMemcgNotification !== true,
    });
  }
  const manager: EvictionManager = new EvictionManager({
    config: {
      thresholds,
      pressureTransitionPeriodMs: opts.evictionPressureTransitionPeriodMs,
      maxPodGracePeriodSeconds: opts.evictionMaxPodGracePeriod,
      localStorageCapacityIsolation: opts.localStorageCapacityIsolation,
    },
    clock: w.clock,
    logger: w.logger,
    nodeName: w.nodeName,
    events: w.events,
    summary: async (_signal, fresh) => {
      // A fresh round also measures containers started since the last housekeeping
      // (cAdvisor sees a new cgroup at once): a hog that crossed the threshold is in it.
      if (fresh) await w.kubelet().observeNow?.();
      return w.stats.summary({ onlyCpuAndMemory: false, fresh: fresh ?? false });
    },
    activePods: () => w.kubelet().allocatedActivePods(),
    killPod: killPodNow(() => w.kubelet().podWorkers, w.clock, w.events),
    podCleanedUp: (pod) => w.kubelet().podWorkers.podIsFinished(pod.metadata.uid ?? ""),
    dedicatedImageFs: () => hasDedicatedImageFs(w.runtime, opts.rootDir),
    ...(w.containerGC ? { containerGC: w.containerGC } : {}),
    ...(w.imageGC ? { imageGC: w.imageGC } : {}),
    ...(notifiers ? { notifiers } : {}),
    ...(w.metrics ? { metrics: w.metrics } : {}),
  });
  return manager;
}
