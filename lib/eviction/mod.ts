/**
 * Node-pressure eviction, as upstream's eviction manager
 * (pkg/kubelet/eviction): signals from the Summary, hard and soft thresholds
 * with grace periods and minimum reclaim, the MemoryPressure / DiskPressure /
 * PIDPressure verdicts, node-level reclaim (container then image GC), local
 * storage limits, one ranked pod evicted per round with upstream's status
 * and message, and the admit handler that refuses pods under pressure.
 *
 * @module
 */

export type {
  ContainerGC,
  EvictionConfig,
  EvictionMetrics,
  ImageGC,
  KillPodFunc,
  Observation,
  Observations,
  PressureCondition,
  ReclaimResource,
  Signal,
  Threshold,
  ThresholdNotifier,
  ThresholdValue,
} from "./types.ts";
export { makeSignalObservations, SIGNAL_CONDITION, SIGNAL_RESOURCE } from "./signals.ts";
export {
  parseThresholdConfig,
  thresholdQuantity,
  type ThresholdSettings,
  updateContainerFsThresholds,
} from "./thresholds.ts";
export { EVICTED_REASON, evictionMessage, markEvicted, nodeConditionMessage } from "./message.ts";
export { admitUnderPressure } from "./admit.ts";
export { nodeReclaimFuncs, type ReclaimFunc } from "./reclaim.ts";
export { localStorageViolation } from "./local_storage.ts";
export { rankMemoryPressure, signalRankFuncs } from "./rank.ts";
export { EvictionManager, type EvictionManagerOptions, MONITORING_INTERVAL_MS } from "./manager.ts";
