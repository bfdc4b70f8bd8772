/**
 * PLEG, the pod lifecycle event generator: it relists the runtime every second,
 * turns the difference between two snapshots into per-container events for the
 * syncLoop, keeps the pod status cache pod workers read, and reports whether
 * relisting is healthy.
 *
 * - {@link diffPodSnapshots}: the pure diff (upstream's `generateEvents` table).
 * - {@link GenericPleg}: the timer, the cache, the event channel, health.
 *
 * @module
 */

export type { PodLifecycleEvent, PodLifecycleEventType } from "./types.ts";
export { diffPod, diffPodSnapshots, generateEvents, type PlegContainerState } from "./diff.ts";
export { EventChannel } from "./event_channel.ts";
export { type CachedPodStatus, PodCache, PodStatusUnavailableError } from "./pod_cache.ts";
export {
  DEFAULT_EVENT_CAPACITY,
  DEFAULT_RELIST_PERIOD_MS,
  DEFAULT_RELIST_THRESHOLD_MS,
  GenericPleg,
  type GenericPlegOptions,
  type PlegHealth,
} from "./generic.ts";
