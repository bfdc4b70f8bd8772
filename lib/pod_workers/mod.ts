/**
 * Pod workers: one serialized worker per pod UID that drives the pod through
 * sync → terminating → terminated, coalescing updates that arrive while a sync
 * runs, and queues each pod's next sync for the sync loop's tick.
 *
 * @module
 */

export type {
  PodWorkersOptions,
  PodWorkerState,
  PodWorkerSync,
  RuntimePodSyncContext,
  SyncContext,
  SyncResult,
  UpdatePodOptions,
  UpdateType,
} from "./types.ts";
export { PodWorkers } from "./pod_workers.ts";
export {
  DEFAULT_BACKOFF_MS,
  DEFAULT_RESYNC_INTERVAL_MS,
  JITTER_FACTOR,
  NETWORK_NOT_READY,
  TRANSIENT_BACKOFF_MS,
} from "./work_queue.ts";
export { DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, effectiveGracePeriod } from "./grace_period.ts";
export { podFullName } from "./static_pods.ts";
