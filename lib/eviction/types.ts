/**
 * The eviction manager's vocabulary (upstream pkg/kubelet/eviction/types.go
 * and eviction/api): signals, thresholds, observations, and the seams it
 * calls out through — node-level reclaim (container and image GC), the
 * memory threshold notifiers, and the pod kill.
 *
 * @module
 */

import type { Pod, PodStatus } from "../api/types.ts";
import type { PodSummary, Summary } from "../stats/summary_types.ts";

/** An eviction signal (upstream evictionapi.Signal). */
export type Signal =
  | "memory.available"
  | "allocatableMemory.available"
  | "nodefs.available"
  | "nodefs.inodesFree"
  | "imagefs.available"
  | "imagefs.inodesFree"
  | "containerfs.available"
  | "containerfs.inodesFree"
  | "pid.available";

/** What a signal measures, as upstream names the resource to reclaim. */
export type ReclaimResource = "memory" | "ephemeral-storage" | "inodes" | "pids";

/** The node conditions the eviction manager reports. */
export type PressureCondition = "MemoryPressure" | "DiskPressure" | "PIDPressure";

/** A threshold's value: an absolute amount or a fraction of capacity (exclusive). */
export interface ThresholdValue {
  /** Bytes, inodes or pids. */
  quantity?: number;
  /** The quantity as written ("100Mi"), for messages in upstream's form. */
  raw?: string;
  /** Fraction of capacity, in (0, 1). */
  percentage?: number;
}

/** One threshold: the signal's available amount below `value` (upstream evictionapi.Threshold). */
export interface Threshold {
  signal: Signal;
  value: ThresholdValue;
  /** 0 for a hard threshold; how long a soft one must hold before it evicts. */
  gracePeriodMs: number;
  /** Once met, the threshold stays met until this much more is available. */
  minReclaim?: ThresholdValue;
}

/** One signal's observed amount (upstream signalObservation). */
export interface Observation {
  available: number;
  capacity: number;
  /** When the stats were sampled (epoch ms); undefined when unknown. */
  timeMs?: number;
}

/** Signal → observation. */
export type Observations = Map<Signal, Observation>;

/** A pod's stats in the Summary, if it has any. */
export type StatsFunc = (pod: Pod) => PodSummary | undefined;

/** How eviction is configured (upstream eviction.Config). */
export interface EvictionConfig {
  thresholds: Threshold[];
  /** evictionPressureTransitionPeriod (5m). */
  pressureTransitionPeriodMs: number;
  /** evictionMaxPodGracePeriod: the longest grace a soft eviction gives (0: the pod's own, capped at 0). */
  maxPodGracePeriodSeconds: number;
  /** localStorageCapacityIsolation (true): emptyDir sizeLimit and ephemeral-storage limits evict. */
  localStorageCapacityIsolation: boolean;
}

/**
 * Node-level reclaim of dead containers (upstream ContainerGC), called under
 * disk pressure before any pod is evicted.
 */
export interface ContainerGC {
  /** Removes every container and sandbox no running pod needs, even those of terminated pods. */
  deleteAllUnusedContainers(signal?: AbortSignal): Promise<void>;
}

/** Node-level reclaim of images (upstream ImageGC), called after container GC. */
export interface ImageGC {
  /** Removes every image no container uses (pinned and sandbox images stay). */
  deleteUnusedImages(signal?: AbortSignal): Promise<void>;
}

/**
 * A memory threshold notifier (upstream ThresholdNotifier): sees a memory
 * threshold crossed between housekeeping ticks and calls the handler given at
 * its construction, which runs the eviction manager's synchronize at once.
 */
export interface ThresholdNotifier {
  /** Watches until stop(); calls the handler given at construction when crossed. */
  start(): void;
  /** Re-arms from the latest Summary (lib/stats/summary_types.ts `Summary`). */
  updateThreshold(summary: Summary): void;
  description(): string;
  stop(): void;
}

/**
 * Kills a pod for the eviction manager (upstream KillPodFunc): sets its
 * status through `statusFn` and stops it with the grace period; resolves once
 * its containers are stopped, rejects on timeout.
 */
export type KillPodFunc = (
  pod: Pod,
  opts: {
    evict: boolean;
    gracePeriodSeconds: number;
    statusFn: (status: PodStatus) => void;
  },
) => Promise<void>;

/** Where the eviction manager counts its work (upstream's kubelet_evictions metrics). */
export interface EvictionMetrics {
  /** A pod evicted for a signal or a local storage limit. */
  countEviction(signal: string): void;
  /** How old a met threshold's stats were when a round acted on them. */
  observeEvictionStatsAge(signal: string, ageMs: number): void;
}
